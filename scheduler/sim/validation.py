"""Decoding and validation of request bodies, as the real server does for the kinds we serve.

One ``Checks`` per request runs in the order the real server does:

1. *decoding* (400 BadRequest, ``Pod in version "v1" cannot be handled as a Pod: ...``):
   malformed quantities (``quantities must match the regular expression ...``) and wrong JSON
   types in built-in kinds; unknown fields under ``fieldValidation=Strict``
   (``strict decoding error: unknown field "spec.foo"``). Unknown fields are dropped from what
   is stored in every mode, announced with a ``Warning`` header under ``Warn`` (the server's
   default when the parameter is absent; kubectl sends ``Strict``);
2. *validation* (422 Invalid, naming each field): label and annotation keys and values,
   negative resource quantities and requests above limits, the Volcano CRDs' types, bounds,
   enums and quantity pattern, and immutable fields on update.

Quantities of built-in kinds are stored in canonical form (``pumice.sim.quantities``). Seeding
uses the same checks in ``Strict`` mode; ``Registry.create_object(..., validate=False)`` is
the in-process way for tests to store what a real server would refuse. Each error also
carries ``problem``: ``FIELD: MESSAGE`` for the one-line seed error of ``pumice sim-cluster``.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import orjson

from pumice.sim import quantities, schemas, volumerules
from pumice.sim.admission import SUBDOMAIN_MSG, name_problems
from pumice.sim.errors import ApiError, bad_request, invalid
from pumice.sim.objects import Obj, meta
from pumice.sim.resources import ResourceType
from pumice.sim.schemas import Bounded, ListOf, MapOf, OneOf, Schema

STRICT, WARN, IGNORE = "Strict", "Warn", "Ignore"
MODES = (IGNORE, WARN, STRICT)

CRD_QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
_CRD_QUANTITY = re.compile(CRD_QUANTITY_PATTERN)
_NAME_PART = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
NAME_PART_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
ANNOTATIONS_MAX = 256 * 1024

Problem = tuple[str, str, str]


def _shown(value: Any) -> str:
    return orjson.dumps(value).decode()


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


@functools.lru_cache(maxsize=4096)
def qualified_name_problems(key: str) -> tuple[str, ...]:
    """Why ``key`` is not a qualified name (``[prefix/]name``), in the real wording."""
    parts = key.split("/")
    if len(parts) > 2:
        return (
            "a qualified name " + NAME_PART_MSG[:-1] + ") with an optional DNS subdomain prefix "
            "and '/' (e.g. 'example.com/MyName')",
        )
    out: list[str] = []
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            out.append("prefix part must be non-empty")
        elif len(prefix) > 253:
            out.append("prefix part must be no more than 253 characters")
        elif not _SUBDOMAIN.match(prefix):
            out.append("prefix part " + SUBDOMAIN_MSG)
    if not name:
        out.append("name part must be non-empty")
    elif len(name) > 63:
        out.append("name part must be no more than 63 characters")
    if name and not _NAME_PART.match(name):
        out.append("name part " + NAME_PART_MSG)
    return tuple(out)


@functools.lru_cache(maxsize=4096)
def label_value_problems(value: str) -> tuple[str, ...]:
    out = []
    if len(value) > 63:
        out.append("must be no more than 63 characters")
    if not _LABEL_VALUE.match(value):
        out.append(LABEL_VALUE_MSG)
    return tuple(out)


class _Walk:
    """One pass over a body against its schema: prunes unknown fields, canonicalizes
    quantities, and collects decode errors, unknown fields and CRD problems."""

    def __init__(self, crd: bool) -> None:
        self.crd = crd
        self.decode: list[tuple[str, str]] = []
        self.unknown: list[str] = []
        self.problems: list[Problem] = []

    def wrong_type(self, value: Any, want: str, path: str) -> None:
        got = _json_type(value)
        if self.crd:
            why = f'{path} in body must be of type {want}: "{got}"'
            self.problems.append((path, "FieldValueTypeInvalid", f'Invalid value: "{got}": {why}'))
        else:
            self.decode.append(
                (path, f"json: cannot unmarshal {got} into Go struct field {path} of type {want}")
            )

    def value(self, value: Any, schema: Schema, path: str) -> Any:
        if value is None or schema is schemas.ANY:
            return value
        kind = type(schema)
        if kind is dict:
            assert isinstance(schema, dict)
            if type(value) is not dict:
                self.wrong_type(value, "object", path)
                return value
            out = {}
            for name, sub in value.items():
                known = schema.get(name) or schema.get(schemas.OTHER_FIELDS)
                if known is None:
                    self.unknown.append(f"{path}.{name}" if path else str(name))
                    continue
                out[name] = self.value(sub, known, f"{path}.{name}" if path else name)
            return out
        if kind is ListOf:
            assert isinstance(schema, ListOf)
            if type(value) is not list:
                self.wrong_type(value, "array", path)
                return value
            return [self.value(v, schema.item, f"{path}[{i}]") for i, v in enumerate(value)]
        if kind is MapOf:
            assert isinstance(schema, MapOf)
            if type(value) is not dict:
                self.wrong_type(value, "object", path)
                return value
            return {k: self.value(v, schema.value, f"{path}.{k}") for k, v in value.items()}
        return self.leaf(value, schema, path)

    def leaf(self, value: Any, schema: Schema, path: str) -> Any:
        if schema == schemas.QUANTITY:
            try:
                return quantities.canonical(value)
            except quantities.BadQuantity as exc:
                self.decode.append((path, str(exc)))
                return value
        if schema == schemas.CRD_QUANTITY:
            if isinstance(value, int) and not isinstance(value, bool):
                return value
            if not isinstance(value, str):
                self.wrong_type(value, "string", path)
            elif not _CRD_QUANTITY.match(value):
                why = f"{path} in body should match '{CRD_QUANTITY_PATTERN}'"
                self.problems.append(
                    (path, "FieldValueInvalid", f"Invalid value: {_shown(value)}: {why}")
                )
            return value
        if isinstance(schema, Bounded):
            if not isinstance(value, int) or isinstance(value, bool):
                self.wrong_type(value, "integer", path)
                return value
            for bound, word in ((schema.minimum, "greater"), (schema.maximum, "less")):
                beyond = bound is not None and (
                    value < bound if word == "greater" else value > bound
                )
                if beyond:
                    why = f"{path} in body should be {word} than or equal to {bound}"
                    self.problems.append(
                        (path, "FieldValueInvalid", f"Invalid value: {value}: {why}")
                    )
            return value
        if isinstance(schema, OneOf):
            if not isinstance(value, str):
                self.wrong_type(value, "string", path)
            elif value not in schema.values:
                allowed = ", ".join(f'"{v}"' for v in schema.values)
                self.problems.append(
                    (
                        path,
                        "FieldValueNotSupported",
                        f'Unsupported value: "{value}": supported values: {allowed}',
                    )
                )
            return value
        if schema == schemas.STRING:
            ok = isinstance(value, str)
        elif schema == schemas.BOOLEAN:
            ok = isinstance(value, bool)
        else:
            ok = isinstance(value, int) and not isinstance(value, bool)
        if not ok:
            self.wrong_type(value, str(schema), path)
        return value


class Checks:
    """The checks of one request; ``warnings`` collects what ``Warn`` announces."""

    def __init__(self, mode: str = STRICT) -> None:
        if mode not in MODES:
            raise bad_request(
                f'fieldValidation: Unsupported value: "{mode}": supported values: '
                '"Ignore", "Strict", "Warn"'
            )
        self.mode = mode
        self.warnings: list[str] = []

    @classmethod
    def from_query(cls, query: Any) -> Checks:
        return cls(str(query.get("fieldValidation") or WARN))

    def check(self, rtype: ResourceType, body: Obj, old: Obj | None = None) -> Obj:
        """The body as it would be stored (pruned, canonical), or the error the real server
        gives; ``old`` is the current object on updates (immutable fields)."""
        schema = schemas.BY_KIND.get((rtype.api_version, rtype.kind))
        if schema is None:
            return body
        walk = _Walk(crd=rtype.group.endswith("volcano.sh"))
        cleaned = walk.value(body, schema, "")
        if walk.decode:
            path, why = walk.decode[0]
            raise _decode_error(rtype, why, f"{path}: {why}")
        if walk.unknown:
            shown = [f'unknown field "{path}"' for path in walk.unknown]
            if self.mode == STRICT:
                err = _decode_error(rtype, "strict decoding error: " + ", ".join(shown), "")
                err.problem = f"{walk.unknown[0]}: unknown field"
                raise err
            if self.mode == WARN:
                self.warnings.extend(shown)
        problems = walk.problems + _meta_problems(cleaned) + _generate_name_problems(rtype, cleaned)
        if rtype.kind in ("Pod", "Node") and not rtype.group:
            problems += _resource_problems(cleaned)
        problems += volumerules.problems(rtype, cleaned, old)
        if old is not None:
            problems += _immutable_problems(rtype, old, cleaned)
        if problems:
            name = str(meta(cleaned).get("name") or meta(cleaned).get("generateName") or "")
            err = invalid(rtype.kind, rtype.group, name=name, causes=problems)
            field, _reason, message = problems[0]
            err.problem = f"{field}: {message}"
            raise err
        return cleaned if isinstance(cleaned, dict) else body

    def headers(self) -> list[str]:
        """``Warning`` header values (RFC 7234 form, as the real server sends them)."""
        return [f"299 - {_shown(text)}" for text in self.warnings]


def _decode_error(rtype: ResourceType, why: str, problem: str) -> ApiError:
    err = bad_request(
        f'{rtype.kind} in version "{rtype.version}" cannot be handled as a {rtype.kind}: {why}'
    )
    err.problem = problem
    return err


def _meta_problems(obj: Obj) -> list[Problem]:
    m = meta(obj)
    out: list[Problem] = []
    for key, value in (m.get("labels") or {}).items():
        for why in qualified_name_problems(str(key)):
            out.append(
                ("metadata.labels", "FieldValueInvalid", f"Invalid value: {_shown(key)}: {why}")
            )
        for why in label_value_problems(str(value)):
            out.append(
                ("metadata.labels", "FieldValueInvalid", f"Invalid value: {_shown(value)}: {why}")
            )
    annotations = m.get("annotations") or {}
    size = 0
    for key, value in annotations.items():
        size += len(str(key)) + len(str(value))
        for why in qualified_name_problems(str(key).lower()):
            out.append(
                (
                    "metadata.annotations",
                    "FieldValueInvalid",
                    f"Invalid value: {_shown(key)}: {why}",
                )
            )
    if size > ANNOTATIONS_MAX:
        out.append(
            (
                "metadata.annotations",
                "FieldValueTooLong",
                f"Too long: must have at most {ANNOTATIONS_MAX} bytes",
            )
        )
    return out


def _generate_name_problems(rtype: ResourceType, obj: Obj) -> list[Problem]:
    """A ``generateName`` must make a valid name (a trailing '-' is fine)."""
    m = meta(obj)
    prefix = m.get("generateName")
    if m.get("name") or not isinstance(prefix, str) or not prefix:
        return []
    masked = prefix[:-1] + "a" if prefix.endswith("-") else prefix
    return [
        ("metadata.generateName", reason, message.replace(f'"{masked}"', f'"{prefix}"'))
        for _field, reason, message in name_problems(rtype, masked)
    ]


def _amounts(resources: Any, path: str) -> list[Problem]:
    out: list[Problem] = []
    if not isinstance(resources, dict):
        return out
    for group in ("limits", "requests"):
        for name, text in (resources.get(group) or {}).items():
            if quantities.decode(text)[0] < 0:
                out.append(
                    (
                        f"{path}.{group}[{name}]",
                        "FieldValueInvalid",
                        f"Invalid value: {_shown(text)}: must be greater than or equal to 0",
                    )
                )
    limits = resources.get("limits") or {}
    for name, text in (resources.get("requests") or {}).items():
        if name in limits and quantities.decode(text)[0] > quantities.decode(limits[name])[0]:
            out.append(
                (
                    f"{path}.requests[{name}]",
                    "FieldValueInvalid",
                    f"Invalid value: {_shown(text)}: must be less than or equal to {name} "
                    f"limit of {limits[name]}",
                )
            )
    return out


def _resource_problems(obj: Obj) -> list[Problem]:
    out: list[Problem] = []
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    for group in ("initContainers", "containers", "ephemeralContainers"):
        for i, c in enumerate(spec.get(group) or []):
            if isinstance(c, dict):
                out += _amounts(c.get("resources"), f"spec.{group}[{i}].resources")
    out += _amounts(spec.get("resources"), "spec.resources")
    status = obj.get("status") if isinstance(obj.get("status"), dict) else {}
    assert isinstance(status, dict)
    for group in ("capacity", "allocatable"):
        for name, text in (status.get(group) or {}).items():
            if quantities.decode(text)[0] < 0:
                out.append(
                    (
                        f"status.{group}[{name}]",
                        "FieldValueInvalid",
                        f"Invalid value: {_shown(text)}: must be greater than or equal to 0",
                    )
                )
    return out


def _immutable_problems(rtype: ResourceType, old: Obj, new: Obj) -> list[Problem]:
    out: list[Problem] = []
    if rtype.kind == "PriorityClass":
        if "value" in new and new.get("value") != old.get("value"):
            out.append(
                ("value", "FieldValueForbidden", "Forbidden: may not be changed in an update.")
            )
        policy = new.get("preemptionPolicy")
        if policy is not None and policy != old.get("preemptionPolicy"):
            out.append(
                (
                    "preemptionPolicy",
                    "FieldValueInvalid",
                    f"Invalid value: {_shown(policy)}: field is immutable",
                )
            )
    if rtype.kind == "Node":
        old_cidr = (old.get("spec") or {}).get("podCIDR")
        new_cidr = (new.get("spec") or {}).get("podCIDR")
        if old_cidr and new_cidr != old_cidr:
            out.append(
                (
                    "spec.podCIDR",
                    "FieldValueForbidden",
                    'Forbidden: node updates may not change podCIDR except from "" to valid',
                )
            )
    return out
