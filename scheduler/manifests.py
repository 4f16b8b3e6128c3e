"""Kubernetes manifests from files: multi-document YAML or ``kind: List``.

Used to seed the simulated cluster (``pumice sim-cluster --cluster FILE``) and by the offline
simulator. A file may hold any number of YAML (or JSON) documents; each is one object, or a
``List`` (``apiVersion: v1``, ``kind: List`` or ``<Kind>List``) whose ``items`` are objects —
exactly what ``kubectl get nodes,pods,podgroups,queues -A -o yaml`` writes. Empty documents
are skipped. Objects stay plain dicts, returned in file order and grouped by kind.

Exception hierarchy::

    PumiceError, ValueError
      ManifestError     bad input: names the file, the document (1-based), the List item
                        (1-based) when there is one, the line when YAML reports it, and what
                        is wrong

This module does no network I/O and imports nothing from the server side.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import yaml

from pumice.plain import Obj, PumiceError

try:
    _Loader: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - libyaml missing
    _Loader = yaml.SafeLoader


class ManifestError(PumiceError, ValueError):
    """A manifest that cannot be used, and where it is."""

    def __init__(
        self,
        source: str,
        message: str,
        document: int | None = None,
        item: int | None = None,
        line: int | None = None,
    ) -> None:
        self.source = source
        self.message = message
        self.document = document
        self.item = item
        self.line = line
        super().__init__(str(self))

    def __str__(self) -> str:
        where = self.source if self.line is None else f"{self.source}:{self.line}"
        parts = [where]
        if self.document is not None:
            parts.append(f"document {self.document}")
        if self.item is not None:
            parts.append(f"item {self.item}")
        return ": ".join([*parts, self.message])


@dataclass(frozen=True)
class Manifests:
    """The objects of one or more manifest files, in order."""

    objects: tuple[Obj, ...] = ()
    sources: tuple[str, ...] = ()
    by_kind: dict[str, list[Obj]] = field(default_factory=dict)

    @classmethod
    def of(cls, objects: Iterable[Obj], sources: Iterable[str] = ()) -> Manifests:
        objs = tuple(objects)
        grouped: dict[str, list[Obj]] = {}
        for obj in objs:
            grouped.setdefault(str(obj["kind"]), []).append(obj)
        return cls(objs, tuple(sources), grouped)

    def kind(self, kind: str) -> list[Obj]:
        """Objects of one kind (``Node``, ``Pod``, ``PodGroup``, ``Queue``...)."""
        return list(self.by_kind.get(kind, []))

    def __len__(self) -> int:
        return len(self.objects)

    def __add__(self, other: Manifests) -> Manifests:
        return Manifests.of(self.objects + other.objects, self.sources + other.sources)


def _check_object(obj: Any, source: str, document: int, item: int | None) -> Obj:
    if (  # what every well-formed object is, checked at once (a manifest holds thousands)
        type(obj) is dict
        and type(obj.get("apiVersion")) is str
        and type(obj.get("kind")) is str
        and obj["apiVersion"]
        and obj["kind"]
        and type(metadata := obj.get("metadata")) is dict
        and type(metadata.get("name")) is str
        and metadata["name"]
        and type(metadata.get("namespace", "")) is str
        and type(obj.get("spec", {})) is dict
        and type(obj.get("status", {})) is dict
    ):
        return obj
    return _check_slowly(obj, source, document, item)


def _check_slowly(obj: Any, source: str, document: int, item: int | None) -> Obj:
    """``_check_object`` for an object that is not plainly well formed: what is wrong."""

    def fail(message: str) -> ManifestError:
        return ManifestError(source, message, document, item)

    if not isinstance(obj, dict):
        raise fail(f"expected a mapping (a Kubernetes object), got {type(obj).__name__}")
    for key in ("apiVersion", "kind"):
        value = obj.get(key)
        if not isinstance(value, str) or not value:
            raise fail(f"missing or empty {key!r}")
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict):
        raise fail(f"{obj['kind']}: missing 'metadata' mapping")
    name = metadata.get("name") or metadata.get("generateName")
    if not isinstance(name, str) or not name:
        raise fail(f"{obj['kind']}: missing metadata.name")
    namespace = metadata.get("namespace")
    if namespace is not None and not isinstance(namespace, str):
        raise fail(f"{obj['kind']} {name}: metadata.namespace must be a string")
    for section in ("spec", "status"):
        if section in obj and obj[section] is not None and not isinstance(obj[section], dict):
            raise fail(f"{obj['kind']} {name}: {section!r} must be a mapping")
    return obj


def _is_list(doc: Obj) -> bool:
    kind = doc.get("kind")
    return isinstance(kind, str) and kind.endswith("List") and "items" in doc


def _documents(text: str) -> Iterable[Any]:
    """The documents of ``text``: one JSON document (``kubectl get -o json``) is read with
    orjson, many times faster than a YAML parser; anything else is YAML."""
    if text.lstrip()[:1] == "{":
        try:
            return [orjson.loads(text)]
        except orjson.JSONDecodeError:
            pass  # YAML flow style, or broken JSON: let the YAML parser say where
    return yaml.load_all(text, Loader=_Loader)


def parse_manifests(text: str, source: str = "<string>") -> Manifests:
    """Objects of a multi-document YAML text; raises ManifestError on bad input."""
    objects: list[Obj] = []
    document = 0
    try:
        for doc in _documents(text):
            document += 1
            if doc is None:
                continue
            if isinstance(doc, dict) and _is_list(doc):
                items = doc.get("items")
                if items is None:
                    continue
                if not isinstance(items, list):
                    raise ManifestError(source, "'items' of a List must be a list", document)
                implied = str(doc["kind"])[: -len("List")]
                for index, item in enumerate(items, 1):
                    if isinstance(item, dict) and "kind" not in item and implied:
                        item = {"kind": implied, "apiVersion": doc.get("apiVersion"), **item}
                    if isinstance(item, dict) and _is_list(item):
                        raise ManifestError(source, "a List inside a List", document, index)
                    objects.append(_check_object(item, source, document, index))
                continue
            objects.append(_check_object(doc, source, document, None))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        line = mark.line + 1 if mark is not None else None
        where = f", column {mark.column + 1}" if mark is not None else ""
        raise ManifestError(
            source, f"invalid YAML{where}: {problem}", document + 1, line=line
        ) from None
    return Manifests.of(objects, (source,))


def load_manifests(*paths: str | Path) -> Manifests:
    """Objects of every file in ``paths``, in order."""
    parsed = []
    for path in paths:
        source = str(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise ManifestError(source, f"cannot read: {reason}") from None
        parsed.append(parse_manifests(text, source))
    if len(parsed) == 1:
        return parsed[0]  # (adding would group its objects by kind a second time)
    return Manifests.of(
        [obj for one in parsed for obj in one.objects], [s for one in parsed for s in one.sources]
    )
