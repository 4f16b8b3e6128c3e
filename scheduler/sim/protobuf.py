"""Request bodies in Kubernetes' protobuf encoding, decoded into the JSON form we store.

kubectl 1.32 sends some typed creates (``kubectl create namespace``, ``create priorityclass``,
``create serviceaccount``, ``create role`` ...) as ``application/vnd.kubernetes.protobuf`` and
does not retry in JSON when the server answers 415, so the simulated server must read them.

Why a hand decoder: the message schemas are generated from Go structs (``generated.proto`` in
k8s.io/api) and are not published on PyPI in a usable form; the protobuf runtime alone cannot
read them without those schemas. The wire format itself is small (varints and
length-delimited fields), and we only need the few messages kubectl sends as protobuf, so a
table of field numbers per message (below) and a 40-line wire reader are enough. Field
numbers follow k8s.io/api's ``generated.proto`` files.

A body is the 4-byte magic ``k8s\\0`` followed by a ``runtime.Unknown``: its ``typeMeta``
(apiVersion, kind) names the message, ``raw`` holds the encoded object. A kind without a
schema here is refused with 415 naming it. Fields we have no schema for (timestamps, status)
are skipped, as the server ignores them on create anyway.

Exception hierarchy: decoding problems are ``ApiError`` (400 for a malformed body, 415 for a
kind we cannot decode), raised to the REST layer like any other request error.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pumice.sim.errors import ApiError, bad_request
from pumice.sim.objects import Obj

PROTOBUF = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"

_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5


@dataclass(frozen=True, slots=True)
class Field:
    """One message field: its JSON name, wire type and how empty values are rendered."""

    name: str
    kind: str
    """``str``, ``bool``, ``int``, ``map`` (string to string), or ``msg`` (see ``schema``)."""
    repeated: bool = False
    schema: dict[int, Field] | None = None
    keep_empty: bool = False
    """Render zero/empty values (JSON fields without omitempty, like PriorityClass.value)."""


Schema = dict[int, Field]


def _s(name: str, repeated: bool = False) -> Field:
    return Field(name, "str", repeated)


_OWNER_REFERENCE: Schema = {
    1: _s("kind"),
    3: _s("name"),
    4: _s("uid"),
    5: _s("apiVersion"),
    6: Field("controller", "bool"),
    7: Field("blockOwnerDeletion", "bool"),
}
_OBJECT_META: Schema = {
    1: _s("name"),
    2: _s("generateName"),
    3: _s("namespace"),
    5: _s("uid"),
    6: _s("resourceVersion"),
    11: Field("labels", "map"),
    12: Field("annotations", "map"),
    13: Field("ownerReferences", "msg", True, _OWNER_REFERENCE),
    14: _s("finalizers", True),
}
_META = Field("metadata", "msg", schema=_OBJECT_META, keep_empty=True)
_POLICY_RULE: Schema = {
    1: _s("verbs", True),
    2: _s("apiGroups", True),
    3: _s("resources", True),
    4: _s("resourceNames", True),
    5: _s("nonResourceURLs", True),
}
_SUBJECT: Schema = {1: _s("kind"), 2: _s("apiGroup"), 3: _s("name"), 4: _s("namespace")}
_ROLE_REF: Schema = {1: _s("apiGroup"), 2: _s("kind"), 3: _s("name")}
_BINDING: Schema = {
    1: _META,
    2: Field("subjects", "msg", True, _SUBJECT),
    3: Field("roleRef", "msg", schema=_ROLE_REF),
}
_RESOURCE_ATTRIBUTES: Schema = {
    1: _s("namespace"),
    2: _s("verb"),
    3: _s("group"),
    4: _s("version"),
    5: _s("resource"),
    6: _s("subresource"),
    7: _s("name"),
}
_NON_RESOURCE_ATTRIBUTES: Schema = {1: _s("path"), 2: _s("verb")}

SCHEMAS: dict[tuple[str, str], Schema] = {
    ("v1", "Namespace"): {
        1: _META,
        2: Field("spec", "msg", schema={1: _s("finalizers", True)}),
    },
    ("scheduling.k8s.io/v1", "PriorityClass"): {
        1: _META,
        2: Field("value", "int", keep_empty=True),
        3: Field("globalDefault", "bool"),
        4: _s("description"),
        5: _s("preemptionPolicy"),
    },
    ("v1", "ServiceAccount"): {
        1: _META,
        4: Field("automountServiceAccountToken", "bool", keep_empty=True),
    },
    ("rbac.authorization.k8s.io/v1", "Role"): {
        1: _META,
        2: Field("rules", "msg", True, _POLICY_RULE),
    },
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): {
        1: _META,
        2: Field("rules", "msg", True, _POLICY_RULE),
    },
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): _BINDING,
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): _BINDING,
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"): {
        1: _META,
        2: Field(
            "spec",
            "msg",
            schema={
                1: Field("resourceAttributes", "msg", schema=_RESOURCE_ATTRIBUTES),
                2: Field("nonResourceAttributes", "msg", schema=_NON_RESOURCE_ATTRIBUTES),
            },
        ),
    },
    ("authorization.k8s.io/v1", "SelfSubjectRulesReview"): {
        1: _META,
        2: Field("spec", "msg", schema={1: _s("namespace")}),
    },
    ("authentication.k8s.io/v1", "SelfSubjectReview"): {1: _META},
    ("authentication.k8s.io/v1", "TokenRequest"): {
        1: _META,
        2: Field(
            "spec",
            "msg",
            schema={1: _s("audiences", True), 4: Field("expirationSeconds", "int")},
        ),
    },
}
_TYPE_META: Schema = {1: _s("apiVersion"), 2: _s("kind")}
_UNKNOWN: Schema = {
    1: Field("typeMeta", "msg", schema=_TYPE_META, keep_empty=True),
    2: Field("raw", "bytes"),
    3: _s("contentEncoding"),
    4: _s("contentType"),
}


def is_protobuf(content_type: str) -> bool:
    return content_type.split(";", 1)[0].strip().lower() == PROTOBUF


def decode_object(body: bytes) -> Obj:
    """The JSON form of a protobuf-encoded object (magic + runtime.Unknown)."""
    if not body.startswith(MAGIC):
        raise bad_request("the body of the request is not a protobuf object: missing k8s prefix")
    envelope = _decode(body[len(MAGIC) :], _UNKNOWN)
    type_meta = envelope.get("typeMeta") or {}
    api_version = str(type_meta.get("apiVersion", ""))
    kind = str(type_meta.get("kind", ""))
    schema = SCHEMAS.get((api_version, kind))
    if schema is None:
        served = ", ".join(k for _, k in SCHEMAS)
        raise ApiError(
            415,
            "UnsupportedMediaType",
            f"the simulated server cannot decode {kind or 'an object'} ({api_version or '?'}) "
            f"sent as {PROTOBUF}; it decodes protobuf only for {served}; send it as "
            "application/json",
        )
    raw = envelope.get("raw", b"")
    return {"apiVersion": api_version, "kind": kind, **_decode(raw, schema)}


# -- the wire format ---------------------------------------------------------------------------


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise _malformed("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise _malformed("varint too long")


def _fields(data: bytes) -> list[tuple[int, int, Any]]:
    """(field number, wire type, value) in order; length-delimited values are bytes."""
    out: list[tuple[int, int, Any]] = []
    pos = 0
    while pos < len(data):
        tag, pos = _varint(data, pos)
        number, wire = tag >> 3, tag & 7
        value: Any
        if wire == _VARINT:
            value, pos = _varint(data, pos)
        elif wire == _LEN:
            size, pos = _varint(data, pos)
            if pos + size > len(data):
                raise _malformed(f"field {number} runs past the end")
            value, pos = data[pos : pos + size], pos + size
        elif wire in (_I64, _I32):
            width = 8 if wire == _I64 else 4
            value, pos = int.from_bytes(data[pos : pos + width], "little"), pos + width
        else:
            raise _malformed(f"unsupported wire type {wire} for field {number}")
        out.append((number, wire, value))
    return out


def _decode(data: bytes, schema: Schema) -> Obj:
    out: Obj = {}
    for number, wire, value in _fields(data):
        field = schema.get(number)
        if field is None:
            continue  # timestamps, status and fields the server ignores on create
        item = _value(field, wire, value)
        if field.kind == "map":
            key, val = item
            out.setdefault(field.name, {})[key] = val
        elif field.repeated:
            out.setdefault(field.name, []).append(item)
        else:
            out[field.name] = item
    # Go always encodes non-pointer fields, even empty; JSON omits them (omitempty)
    for field in schema.values():
        if field.name in out and not field.keep_empty and out[field.name] in ("", 0, {}, []):
            del out[field.name]
    return out


def _value(field: Field, wire: int, value: Any) -> Any:
    expected = _VARINT if field.kind in ("bool", "int") else _LEN
    if wire != expected:
        raise _malformed(f"field {field.name} has wire type {wire}, expected {expected}")
    if field.kind == "int":
        # int32/int64 are two's complement in 64 bits
        return value - (1 << 64) if value >= 1 << 63 else value
    if field.kind == "bool":
        return bool(value)
    if field.kind == "bytes":
        return bytes(value)
    if field.kind == "str":
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            raise _malformed(f"field {field.name} is not UTF-8") from None
    if field.kind == "map":
        entry = {n: v for n, _w, v in _fields(value)}
        return _text(entry.get(1, b"")), _text(entry.get(2, b""))
    assert field.schema is not None
    return _decode(value, field.schema)


def _text(raw: Any) -> str:
    try:
        return bytes(raw).decode("utf-8")
    except (UnicodeDecodeError, TypeError):
        raise _malformed("a map entry is not a string") from None


def _malformed(why: str) -> ApiError:
    return bad_request(f"the body of the request could not be decoded as protobuf: {why}")
