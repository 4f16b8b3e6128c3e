"""The three patch formats of the API server: JSON merge, strategic merge and JSON patch.

* JSON merge patch (RFC 7386): maps merge recursively, ``null`` deletes, lists are replaced.
* Strategic merge patch: like merge patch, but lists that have a merge key in the resource's
  table (conditions by ``type``, containers by ``name``, ...) are merged item by item, lists of
  primitives marked as sets (``finalizers``) are unioned, and the ``$patch`` (``delete``,
  ``replace``), ``$deleteFromPrimitiveList/<field>`` and ``$setElementOrder/<field>``
  directives are honoured. Custom resources do not support it (415, as the real server).
* JSON patch (RFC 6902): add, remove, replace, move, copy and test.

Every function returns new containers and never mutates its inputs.
"""

from __future__ import annotations

import copy
from typing import Any

from pumice.sim.errors import ApiError, bad_request, unsupported_media_type
from pumice.sim.resources import MergeKeys

MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY = "application/apply-patch+yaml"


def merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for name, value in patch.items():
        if value is None:
            out.pop(name, None)
        else:
            out[name] = merge_patch(out.get(name), value)
    return out


def strategic_merge_patch(target: Any, patch: Any, keys: MergeKeys) -> Any:
    return _smp(target, patch, keys, ())


def _smp(target: Any, patch: Any, keys: MergeKeys, path: tuple[str, ...]) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if patch.get("$patch") == "delete":
        return None
    out = dict(target) if isinstance(target, dict) else {}
    deletions: dict[str, list[Any]] = {}
    for name, value in patch.items():
        if name.startswith("$setElementOrder/") or name in ("$patch", "$retainKeys"):
            continue
        if name.startswith("$deleteFromPrimitiveList/"):
            deletions[name.split("/", 1)[1]] = list(value or [])
            continue
        if value is None:
            out.pop(name, None)
            continue
        sub = (*path, name)
        if isinstance(value, list) and sub in keys:
            out[name] = _merge_list(out.get(name), value, keys, sub)
        else:
            merged = _smp(out.get(name), value, keys, sub)
            if merged is None and isinstance(value, dict) and value.get("$patch") == "delete":
                out.pop(name, None)
            else:
                out[name] = merged
    for name, gone in deletions.items():
        if isinstance(out.get(name), list):
            out[name] = [v for v in out[name] if v not in gone]
    return out


def _merge_list(target: Any, patch: list[Any], keys: MergeKeys, path: tuple[str, ...]) -> list[Any]:
    current = list(target) if isinstance(target, list) else []
    key = keys[path]
    if any(isinstance(item, dict) and item.get("$patch") == "replace" for item in patch):
        return [copy.deepcopy(i) for i in patch if not (isinstance(i, dict) and "$patch" in i)]
    if key == "":
        out = list(current)
        for item in patch:
            if item not in out:
                out.append(item)
        return out
    item_path = (*path, "*")
    for item in patch:
        if not isinstance(item, dict) or key not in item:
            raise bad_request(f"map: {item!r} does not contain declared merge key: {key}")
        index = next(
            (
                i
                for i, cur in enumerate(current)
                if isinstance(cur, dict) and cur.get(key) == item[key]
            ),
            None,
        )
        if item.get("$patch") == "delete":
            if index is not None:
                del current[index]
            continue
        if index is None:
            current.append(_smp({}, item, keys, item_path))
        else:
            current[index] = _smp(current[index], item, keys, item_path)
    return current


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise _invalid_patch(f"JSON pointer must start with '/': {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _invalid_patch(message: str) -> ApiError:
    return ApiError(
        422, "Invalid", f"the server rejected our request due to an error in our request: {message}"
    )


def _parent(doc: Any, parts: list[str]) -> tuple[Any, str]:
    cur = doc
    for part in parts[:-1]:
        if isinstance(cur, dict):
            if part not in cur:
                raise _invalid_patch(f"missing path: {part}")
            cur = cur[part]
        elif isinstance(cur, list):
            cur = cur[_index(cur, part, False)]
        else:
            raise _invalid_patch(f"cannot traverse into {part}")
    return cur, parts[-1]


def _index(items: list[Any], part: str, allow_end: bool) -> int:
    if part == "-" and allow_end:
        return len(items)
    if not part.isdigit():
        raise _invalid_patch(f"invalid array index: {part}")
    index = int(part)
    if index > len(items) or (index == len(items) and not allow_end):
        raise _invalid_patch(f"array index out of range: {part}")
    return index


def _get(doc: Any, parts: list[str]) -> Any:
    if not parts:
        return doc
    parent, last = _parent(doc, parts)
    if isinstance(parent, dict):
        if last not in parent:
            raise _invalid_patch(f"missing value at /{'/'.join(parts)}")
        return parent[last]
    if isinstance(parent, list):
        return parent[_index(parent, last, False)]
    raise _invalid_patch("cannot read a scalar")


def _add(doc: Any, parts: list[str], value: Any) -> Any:
    if not parts:
        return value
    parent, last = _parent(doc, parts)
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, last, True), value)
    else:
        raise _invalid_patch("cannot add to a scalar")
    return doc


def _remove(doc: Any, parts: list[str]) -> Any:
    parent, last = _parent(doc, parts)
    if isinstance(parent, dict):
        if last not in parent:
            raise _invalid_patch(f"cannot remove missing /{'/'.join(parts)}")
        return parent.pop(last)
    if isinstance(parent, list):
        return parent.pop(_index(parent, last, False))
    raise _invalid_patch("cannot remove from a scalar")


def same_json(a: Any, b: Any) -> bool:
    """JSON equality as RFC 6902's ``test`` defines it: numbers by value, but a boolean is
    never a number (Python's ``1 == True`` is not JSON's)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict):
        return (
            isinstance(b, dict) and a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)
        )
    if isinstance(a, list):
        return (
            isinstance(b, list)
            and len(a) == len(b)
            and all(same_json(x, y) for x, y in zip(a, b, strict=True))
        )
    if isinstance(a, (int, float)):
        return isinstance(b, (int, float)) and a == b
    return type(a) is type(b) and a == b


def json_patch(target: Any, ops: Any) -> Any:
    if not isinstance(ops, list):
        raise bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    doc = copy.deepcopy(target)
    for op in ops:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise bad_request(f"invalid JSON patch operation: {op!r}")
        kind = op["op"]
        parts = _pointer(str(op["path"]))
        if kind == "add":
            doc = _add(doc, parts, copy.deepcopy(op.get("value")))
        elif kind == "remove":
            _remove(doc, parts)
        elif kind == "replace":
            _get(doc, parts)
            if parts:
                _remove(doc, parts)
            doc = _add(doc, parts, copy.deepcopy(op.get("value")))
        elif kind in ("move", "copy"):
            src = _pointer(str(op.get("from", "")))
            value = _get(doc, src)
            if kind == "move":
                _remove(doc, src)
            doc = _add(doc, parts, copy.deepcopy(value))
        elif kind == "test":
            if not same_json(_get(doc, parts), op.get("value")):
                raise _invalid_patch(f"testing value /{'/'.join(parts)} failed")
        else:
            raise bad_request(f"unexpected kind of JSON patch operation: {kind!r}")
    return doc


def apply_patch(target: Any, content_type: str, patch: Any, keys: MergeKeys | None) -> Any:
    """Dispatch on the request's Content-Type (parameters after ``;`` ignored)."""
    media = content_type.split(";", 1)[0].strip().lower()
    accepted = [JSON_PATCH, MERGE] + ([STRATEGIC] if keys is not None else [])
    if media == MERGE:
        return merge_patch(target, patch)
    if media == JSON_PATCH:
        return json_patch(target, patch)
    if media == STRATEGIC and keys is not None:
        if not isinstance(patch, dict):
            raise bad_request("the patch must be a JSON object")
        return strategic_merge_patch(target, patch, keys)
    raise unsupported_media_type(media, accepted)
