"""YAML loading that remembers where every key and list item came from.

``load_document`` parses one YAML document into plain Python values (dict, list, str, int,
float, bool, None) and a table from *key path* to 1-based line number. Key paths join mapping
keys with ``.`` and list indices with ``[i]`` (0-based): ``tiers[1].plugins[2].name``. A key's
line is the line of the key itself; a list item's line is where the item starts.

The YAML dialect is PyYAML's safe YAML 1.1 (so ``yes``/``no`` are bools, as for Go's yaml.v2
that Volcano uses), except that dates and ``=`` are left as strings. Duplicate keys in one
mapping, non-scalar keys, unknown tags and recursive aliases are errors.

Errors::

    YamlSourceError      (PumiceError, ValueError) bad YAML, with ``line`` and, when known, ``key``
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from pumice.plain import PumiceError

MAP_TAG = "tag:yaml.org,2002:map"
SEQ_TAG = "tag:yaml.org,2002:seq"
_DROPPED_TAGS = {"tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:value"}


class YamlSourceError(PumiceError, ValueError):
    """The text is not a YAML document this loader accepts."""

    def __init__(self, message: str, line: int | None = None, key: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.key = key


class _Loader(yaml.SafeLoader):
    """Safe loading without the implicit timestamp and ``=`` types."""

    yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag not in _DROPPED_TAGS]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }


@dataclass(frozen=True, slots=True)
class Document:
    """A parsed document: its value and the line of every key path ("" is the root)."""

    value: Any
    lines: dict[str, int]


def child_path(parent: str, key: str | int) -> str:
    """The key path of mapping key ``key`` (a str) or list index ``key`` (an int)."""
    if isinstance(key, int):
        return f"{parent}[{key}]"
    return f"{parent}.{key}" if parent else key


def load_document(text: str) -> Document:
    """Parse ``text`` (one YAML document; an empty text is ``None``)."""
    try:
        loader = _Loader(text)  # checks that every character is printable
        root = loader.get_single_node()
    except yaml.MarkedYAMLError as exc:
        raise _marked_error(exc) from None
    except yaml.reader.ReaderError as exc:
        line = text[: exc.position].count("\n") + 1
        raise YamlSourceError(f"invalid YAML: {_one_line(exc.reason)}", line) from None
    except yaml.YAMLError as exc:
        raise YamlSourceError(f"invalid YAML: {_one_line(str(exc))}") from None
    try:
        lines: dict[str, int] = {}
        if root is None:
            return Document(None, lines)
        lines[""] = root.start_mark.line + 1
        value = _Builder(loader, lines).build(root, "", set())
        return Document(value, lines)
    finally:
        loader.dispose()


class _Builder:
    def __init__(self, loader: _Loader, lines: dict[str, int]) -> None:
        self.loader = loader
        self.lines = lines

    def build(self, node: Node, path: str, active: set[int]) -> Any:
        if isinstance(node, ScalarNode):
            return self.scalar(node, path)
        if id(node) in active:
            raise YamlSourceError("invalid YAML: recursive alias", _line(node), path or None)
        active.add(id(node))
        try:
            if isinstance(node, MappingNode):
                return self.mapping(node, path, active)
            if isinstance(node, SequenceNode):
                return self.sequence(node, path, active)
        finally:
            active.discard(id(node))
        raise YamlSourceError(
            f"invalid YAML: unexpected {type(node).__name__}", _line(node), path or None
        )

    def scalar(self, node: ScalarNode, path: str) -> Any:
        try:
            return self.loader.construct_object(node, deep=True)
        except yaml.MarkedYAMLError as exc:
            raise _marked_error(exc, path or None) from None

    def mapping(self, node: MappingNode, path: str, active: set[int]) -> dict[str, Any]:
        if node.tag != MAP_TAG:
            raise YamlSourceError(f"unsupported YAML tag {node.tag}", _line(node), path or None)
        explicit = {id(key_node) for key_node, _ in node.value}
        try:
            self.loader.flatten_mapping(node)  # resolves "<<" merge keys
        except yaml.MarkedYAMLError as exc:
            raise _marked_error(exc, path or None) from None
        result: dict[str, Any] = {}
        written: set[str] = set()  # keys written out in this mapping (not merged in)
        for key_node, value_node in node.value:
            key = self.key(key_node, path)
            key_path = child_path(path, key)
            if id(key_node) not in explicit:
                written.discard(key)  # a merged key: later ones and explicit ones override it
            elif key in written:
                raise YamlSourceError(
                    f"duplicate key (first on line {self.lines[key_path]})",
                    _line(key_node),
                    key_path,
                )
            else:
                written.add(key)
            self.lines[key_path] = _line(key_node)
            result[key] = self.build(value_node, key_path, active)
        return result

    def sequence(self, node: SequenceNode, path: str, active: set[int]) -> list[Any]:
        if node.tag != SEQ_TAG:
            raise YamlSourceError(f"unsupported YAML tag {node.tag}", _line(node), path or None)
        result: list[Any] = []
        for index, item in enumerate(node.value):
            item_path = child_path(path, index)
            self.lines.setdefault(item_path, _line(item))
            result.append(self.build(item, item_path, active))
        return result

    def key(self, node: Node, parent: str) -> str:
        if not isinstance(node, ScalarNode):
            raise YamlSourceError("keys must be plain scalars", _line(node), parent or None)
        key = self.scalar(node, parent)
        if isinstance(key, bool):
            return "true" if key else "false"
        if isinstance(key, str | int | float):
            return str(key)
        raise YamlSourceError(f"keys must be strings, got {key!r}", _line(node), parent or None)


def _line(node: Node) -> int:
    return int(node.start_mark.line) + 1


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _marked_error(exc: yaml.MarkedYAMLError, key: str | None = None) -> YamlSourceError:
    mark = exc.problem_mark or exc.context_mark
    problem = _one_line(exc.problem or "")
    if exc.context:
        context = _one_line(exc.context)
        if exc.context_mark is not None and exc.context_mark is not mark:
            context += f" on line {exc.context_mark.line + 1}"
        problem = f"{problem} ({context})" if problem else context
    return YamlSourceError(
        f"invalid YAML: {problem or 'syntax error'}",
        mark.line + 1 if mark is not None else None,
        key,
    )
