"""Label and field selectors, parsed once per request and evaluated per object.

Label selectors follow the Kubernetes grammar: ``k=v``, ``k==v``, ``k!=v``, ``k in (a,b)``,
``k notin (a,b)``, ``k``, ``!k``, ``k>1``, ``k<1``; a comma means AND. Field selectors accept
``=``, ``==`` and ``!=`` on the fields a resource type declares (an unknown field is a 400, as
in the real server); values may escape ``\\,``, ``\\=`` and ``\\\\``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from pumice.sim.errors import ApiError, bad_request
from pumice.sim.objects import Obj, meta
from pumice.sim.resources import FieldGetter, ResourceType

Predicate = Callable[[Obj], bool]

_LABEL_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)
_LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!", ">", "<"
    values: tuple[str, ...] = ()

    def matches(self, labels: dict[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        if self.op == "=":
            return present and value == self.values[0]
        if self.op == "!=":
            return not present or value != self.values[0]
        if self.op == "in":
            return present and value in self.values
        if self.op == "notin":
            return not present or value not in self.values
        if self.op == "exists":
            return present
        if self.op == "!":
            return not present
        try:
            number = int(value or "")
        except ValueError:
            return False
        limit = int(self.values[0])
        return number > limit if self.op == ">" else number < limit


def _split_top(text: str) -> list[str]:
    """Split on commas that are not inside parentheses."""
    parts: list[str] = []
    depth = 0
    start = 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


_SET_OP = re.compile(r"^(\S+)\s+(in|notin)\s*\((.*)\)$")
_CMP_OP = re.compile(r"^([^=!<>\s]+)\s*(==|=|!=|>|<)\s*(.*)$")


def parse_label_selector(text: str) -> list[Requirement]:
    """Requirements of a label selector; raises a 400 ApiError on bad syntax."""
    out: list[Requirement] = []
    for part in _split_top(text):
        req = _parse_requirement(part)
        if req is None:
            raise bad_request(f"unable to parse requirement: {part!r}")
        if not _LABEL_KEY.match(req.key) or len(req.key.split("/")[-1]) > 63:
            raise bad_request(f"unable to parse requirement: invalid label key {req.key!r}")
        for value in req.values:
            if req.op in (">", "<"):
                if not value.lstrip("-").isdigit():
                    raise bad_request(f"unable to parse requirement: {value!r} is not an integer")
            elif not _LABEL_VALUE.match(value) or len(value) > 63:
                raise bad_request(f"unable to parse requirement: invalid label value {value!r}")
        out.append(req)
    return out


def _parse_requirement(part: str) -> Requirement | None:
    m = _SET_OP.match(part)
    if m:
        values = tuple(v.strip() for v in m.group(3).split(",") if v.strip())
        return Requirement(m.group(1), m.group(2), values)
    if part.startswith("!"):
        key = part[1:].strip()
        return Requirement(key, "!") if key else None
    m = _CMP_OP.match(part)
    if m:
        op = "=" if m.group(2) == "==" else m.group(2)
        return Requirement(m.group(1), op, (m.group(3).strip(),))
    if re.match(r"^[^\s=!<>(),]+$", part):
        return Requirement(part, "exists")
    return None


@dataclass(frozen=True)
class FieldTerm:
    getter: FieldGetter
    name: str
    negate: bool
    value: str


def _unescape(value: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(value):
        ch = value[i]
        if ch == "\\" and i + 1 < len(value):
            out.append(value[i + 1])
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _split_unescaped(text: str, sep: str) -> list[str]:
    parts: list[str] = []
    cur: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            cur.append(text[i : i + 2])
            i += 2
            continue
        if ch == sep:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
        i += 1
    parts.append("".join(cur))
    return parts


def parse_field_selector(text: str, rtype: ResourceType) -> list[FieldTerm]:
    terms: list[FieldTerm] = []
    for part in _split_unescaped(text, ","):
        if not part.strip():
            continue
        if "!=" in part:
            name, value = part.split("!=", 1)
            negate = True
        elif "==" in part:
            name, value = part.split("==", 1)
            negate = False
        elif "=" in part:
            name, value = part.split("=", 1)
            negate = False
        else:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{part}'")
        name = name.strip()
        getter = rtype.field_getter(name)
        if getter is None:
            raise ApiError(400, "BadRequest", f"field label not supported: {name}")
        terms.append(FieldTerm(getter, name, negate, _unescape(value)))
    return terms


@dataclass(frozen=True)
class Selector:
    """Everything a list or watch filters on: namespace, labels and fields."""

    namespace: str = ""
    labels: tuple[Requirement, ...] = ()
    fields: tuple[FieldTerm, ...] = ()

    @property
    def trivial(self) -> bool:
        return not self.namespace and not self.labels and not self.fields

    def field_value(self, name: str) -> str | None:
        """The value an ``=`` term requires for ``name`` (used to narrow lookups)."""
        for term in self.fields:
            if term.name == name and not term.negate:
                return term.value
        return None

    def matches(self, obj: Obj) -> bool:
        if self.namespace and meta(obj).get("namespace") != self.namespace:
            return False
        for term in self.fields:
            if (term.getter(obj) == term.value) == term.negate:
                return False
        if self.labels:
            labels = meta(obj).get("labels") or {}
            for req in self.labels:
                if not req.matches(labels):
                    return False
        return True


def build_selector(
    rtype: ResourceType, namespace: str, label_text: str | None, field_text: str | None
) -> Selector:
    labels = tuple(parse_label_selector(label_text)) if label_text else ()
    fields = tuple(parse_field_selector(field_text, rtype)) if field_text else ()
    return Selector(namespace, labels, fields)
