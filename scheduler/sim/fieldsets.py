"""Field sets: which fields of an object a manager owns, as ``metadata.managedFields`` says.

A field is a path of steps in the ``FieldsV1`` vocabulary the real server uses:

- ``f:name`` -- a field of a map (``f:spec``, ``f:labels``, ``f:app``);
- ``k:{"name":"main"}`` -- the item of a list merged by key (strategic merge patch's merge keys
  from ``ResourceType.merge_keys``), followed by ``.`` for the item itself;
- ``v:"example.com/x"`` -- a value of a list kept as a set (``finalizers``).

Other lists, and every list of a custom resource (we serve no schemas for them), are atomic:
owned as a whole. A set of paths is stored as the nested ``fieldsV1`` map
(``{"f:spec": {"f:weight": {}}}``) and printed in conflicts as the real server prints them
(``.spec.containers[name="main"].image``).

Only what a user declares is tracked: ``apiVersion``, ``kind``, identity and server-owned
metadata are not, and neither is ``status`` on a type whose status is a subresource.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable
from typing import Any

from pumice.sim.objects import Obj
from pumice.sim.resources import MergeKeys, ResourceType

FieldPath = tuple[str, ...]
MISSING: Any = object()
_TRACKED_METADATA = ("labels", "annotations", "finalizers", "ownerReferences")


def _dump(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def _list_key(keys: MergeKeys | None, schema: FieldPath) -> str | None:
    """The merge key of the list at ``schema`` ("" for a set), None for an atomic list."""
    if keys is None:
        return None
    return keys.get(schema)


def tracked_view(rtype: ResourceType, obj: Obj) -> Obj:
    """The part of ``obj`` whose fields have owners."""
    out = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
    if rtype.has_status:
        out.pop("status", None)
    m = obj.get("metadata")
    if isinstance(m, dict):
        kept = {k: m[k] for k in _TRACKED_METADATA if k in m}
        if kept:
            out["metadata"] = kept
    return out


def field_set(rtype: ResourceType, obj: Obj) -> set[FieldPath]:
    """Every owned leaf of ``obj`` (in the type's view form)."""
    out: set[FieldPath] = set()
    _walk_map(tracked_view(rtype, obj), (), (), rtype.merge_keys, out)
    return out


def _walk_map(
    value: Obj, path: FieldPath, schema: FieldPath, keys: MergeKeys | None, out: set[FieldPath]
) -> None:
    for name, sub in value.items():
        _walk(sub, (*path, f"f:{name}"), (*schema, name), keys, out)


def _walk(
    value: Any, path: FieldPath, schema: FieldPath, keys: MergeKeys | None, out: set[FieldPath]
) -> None:
    if isinstance(value, dict) and value:
        _walk_map(value, path, schema, keys, out)
        return
    key = _list_key(keys, schema) if isinstance(value, list) else None
    if not isinstance(value, list) or key is None or not value:
        out.add(path)
        return
    if key == "":
        for item in value:
            out.add((*path, f"v:{_dump(item)}"))
        return
    for item in value:
        if not isinstance(item, dict) or key not in item:
            out.add(path)  # not mergeable: owned whole
            return
        item_path = (*path, f"k:{_dump({key: item[key]})}")
        out.add((*item_path, "."))
        _walk_map(item, item_path, (*schema, "*"), keys, out)


def value_at(obj: Any, path: FieldPath) -> Any:
    """The value a path addresses in ``obj``, or ``MISSING``."""
    cur = obj
    for step in path:
        if step == ".":
            continue
        kind, _, text = step.partition(":")
        if kind == "f":
            if not isinstance(cur, dict) or text not in cur:
                return MISSING
            cur = cur[text]
        elif kind == "k":
            want = json.loads(text)
            if not isinstance(cur, list):
                return MISSING
            cur = next((i for i in cur if _has_key(i, want)), MISSING)
            if cur is MISSING:
                return MISSING
        elif kind == "v":
            item = json.loads(text)
            if not isinstance(cur, list) or item not in cur:
                return MISSING
            cur = item
        else:
            return MISSING
    return cur


def differs(a: Any, b: Any, path: FieldPath) -> bool:
    """Whether two objects disagree on the field ``path`` names. A list item (``.``) and a
    map are compared by presence only: their contents are fields of their own."""
    left, right = value_at(a, path), value_at(b, path)
    if (path and path[-1] == ".") or (isinstance(left, dict) and isinstance(right, dict)):
        return (left is MISSING) != (right is MISSING)
    return bool(left != right)


def remove_at(obj: Any, path: FieldPath) -> None:
    """Delete the value at ``path`` from ``obj`` in place (absent paths are ignored)."""
    steps = [s for s in path if s != "."]
    if not steps:
        return
    parent = value_at(obj, tuple(steps[:-1]))
    kind, _, text = steps[-1].partition(":")
    if kind == "f" and isinstance(parent, dict):
        parent.pop(text, None)
    elif kind == "k" and isinstance(parent, list):
        want = json.loads(text)
        parent[:] = [i for i in parent if not _has_key(i, want)]
    elif kind == "v" and isinstance(parent, list):
        item = json.loads(text)
        parent[:] = [i for i in parent if i != item]


def _has_key(item: Any, want: Obj) -> bool:
    return isinstance(item, dict) and all(item.get(k) == v for k, v in want.items())


def merge_applied(
    current: Any, applied: Any, keys: MergeKeys | None, schema: FieldPath = ()
) -> Any:
    """``applied`` merged into ``current``: maps field by field, keyed lists item by item,
    sets as a union, anything else replaced."""
    if isinstance(applied, dict) and isinstance(current, dict):
        out = dict(current)
        for name, value in applied.items():
            out[name] = merge_applied(current.get(name, MISSING), value, keys, (*schema, name))
        return out
    if isinstance(applied, list) and isinstance(current, list):
        key = _list_key(keys, schema)
        if key == "":
            return list(current) + [copy.deepcopy(i) for i in applied if i not in current]
        if key and all(isinstance(i, dict) and key in i for i in applied):
            merged = list(current)
            for item in applied:
                at = next((n for n, c in enumerate(merged) if _has_key(c, {key: item[key]})), None)
                if at is None:
                    merged.append(copy.deepcopy(item))
                else:
                    merged[at] = merge_applied(merged[at], item, keys, (*schema, "*"))
            return merged
    return copy.deepcopy(applied)


def to_fields_v1(paths: Iterable[FieldPath]) -> Obj:
    root: Obj = {}
    for path in sorted(paths):
        node = root
        for step in path:
            node = node.setdefault(step, {})
    return root


def from_fields_v1(tree: Any, prefix: FieldPath = ()) -> set[FieldPath]:
    out: set[FieldPath] = set()
    if not isinstance(tree, dict):
        return out
    for step, sub in tree.items():
        path = (*prefix, step)
        if isinstance(sub, dict) and sub:
            out |= from_fields_v1(sub, path)
        else:
            out.add(path)
    return out


def describe(path: FieldPath) -> str:
    """A path as the real server prints it in a conflict."""
    text = ""
    for step in path:
        if step == ".":
            continue
        kind, _, rest = step.partition(":")
        if kind == "f":
            text += f".{rest}"
        elif kind == "k":
            parts = ",".join(f"{k}={_dump(v)}" for k, v in json.loads(rest).items())
            text += f"[{parts}]"
        elif kind == "v":
            text += f"[={rest}]"
    return text
