"""Server-side apply: ``PATCH`` with ``application/apply-patch+yaml``.

What ``kubectl apply --server-side`` sends is the manager's whole intent for the object. An
absent object is created from it. Otherwise every field it sets that another manager owns
with a different value is a conflict -- 409 in the real server's words, unless ``force=true``
(``--force-conflicts``), which takes those fields over. Fields the manager applied before and
no longer applies are removed unless someone else owns them. The manager's ``Apply`` entry in
``metadata.managedFields`` then lists exactly the fields of its intent (``pumice.sim.fieldsets``
says how fields are named; ``pumice.sim.managedfields`` how entries are stored).

An apply is validated like any write (``pumice.sim.validation``): the configuration is decoded
first -- unknown fields refused under ``fieldValidation=Strict`` or dropped, quantities made
canonical -- so that field ownership is computed on what will be stored, and the merged object
is checked again as an update (immutable fields). ``dryRun=All`` needs nothing here: the
request runs with the store in dry-run mode (``pumice.sim.rest``), so neither the object nor
its managedFields are kept.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import yaml
from multidict import MultiMapping

from pumice.sim.errors import ApiError, bad_request
from pumice.sim.fieldsets import (
    FieldPath,
    describe,
    differs,
    field_set,
    from_fields_v1,
    merge_applied,
    remove_at,
    to_fields_v1,
    tracked_view,
)
from pumice.sim.managedfields import entries_of, new_entry, writing
from pumice.sim.objects import Obj, meta
from pumice.sim.registry import Registry
from pumice.sim.resources import ResourceType
from pumice.sim.validation import Checks

APPLY = "application/apply-patch+yaml"
_TRUE = frozenset({"true", "True", "1"})


def is_apply(content_type: str) -> bool:
    return content_type.split(";", 1)[0].strip().lower() == APPLY


# -- server-side apply -------------------------------------------------------------------------


def _parse(raw: bytes, rtype: ResourceType, name: str) -> Obj:
    try:
        body = yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        raise bad_request(f"error decoding YAML: {exc}") from None
    if not isinstance(body, dict):
        raise bad_request("the apply configuration must be a YAML or JSON object")
    if body.get("apiVersion") != rtype.api_version or body.get("kind") != rtype.kind:
        raise bad_request(
            f"the API version in the data ({body.get('apiVersion')}) and kind "
            f"({body.get('kind')}) do not match the request ({rtype.api_version}, {rtype.kind})"
        )
    if meta(body).get("name") != name:
        raise bad_request(
            f"the name of the object ({meta(body).get('name')}) does not match the name on "
            f"the URL ({name})"
        )
    return body


@dataclass(frozen=True)
class Conflict:
    manager: str
    operation: str
    api_version: str
    path: FieldPath

    @property
    def who(self) -> str:
        if self.operation == "Update":
            return f'"{self.manager}" using {self.api_version}'
        return f'"{self.manager}"'


def _conflict_error(conflicts: list[Conflict]) -> ApiError:
    """409 as the real server words it."""
    causes = [
        {
            "reason": "FieldManagerConflict",
            "message": f"conflict with {c.who}",
            "field": describe(c.path),
        }
        for c in conflicts
    ]
    if len(conflicts) == 1:
        only = conflicts[0]
        message = f"Apply failed with 1 conflict: conflict with {only.who}: {describe(only.path)}"
    else:
        lines: list[str] = []
        for manager in sorted({c.manager for c in conflicts}):
            mine = [c for c in conflicts if c.manager == manager]
            lines.append(f"conflicts with {mine[0].who}")
            lines.extend(f"- {describe(c.path)}" for c in mine)
        message = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
    return ApiError(409, "Conflict", message, {"causes": causes})


def server_side_apply(
    registry: Registry,
    rtype: ResourceType,
    namespace: str,
    name: str,
    raw: bytes,
    query: MultiMapping[str],
    dry_run: bool = False,
    checks: Checks | None = None,
) -> tuple[Obj, int]:
    """Apply ``raw`` as ``fieldManager``'s intent; returns (object, HTTP status)."""
    manager = query.get("fieldManager", "")
    if not manager:
        raise ApiError(
            422,
            "Invalid",
            'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is '
            "required for apply patch",
        )
    force = query.get("force", "") in _TRUE
    applied = _parse(raw, rtype, name)
    if checks is not None:
        applied = checks.check(rtype, applied)
    intent = field_set(rtype, applied)
    key = (namespace if rtype.namespaced else "", name)
    stored = registry.store.get(rtype.table, key)
    if stored is None:
        created = [
            new_entry(manager, operation="Apply", api_version=rtype.api_version, paths=intent)
        ]
        with writing(manager, created):
            created_obj = registry.create(rtype, namespace, copy.deepcopy(applied), dry_run, checks)
            return created_obj, 201
    current = registry.get(rtype, namespace, name)
    current_view, applied_view = tracked_view(rtype, current), tracked_view(rtype, applied)
    conflicts: list[Conflict] = []
    others: list[tuple[Obj, set[FieldPath]]] = []
    previous: set[FieldPath] = set()
    for entry in entries_of(current):
        owned = from_fields_v1(entry.get("fieldsV1"))
        if entry.get("manager") == manager and entry.get("operation") == "Apply":
            previous = owned
            continue
        others.append((entry, owned))
        for path in sorted(intent & owned):
            if differs(current_view, applied_view, path):
                conflicts.append(
                    Conflict(
                        str(entry.get("manager")),
                        str(entry.get("operation")),
                        str(entry.get("apiVersion") or rtype.api_version),
                        path,
                    )
                )
    if conflicts and not force:
        raise _conflict_error(conflicts)
    taken = {c.path for c in conflicts}
    result = copy.deepcopy(current)
    owned_by_others = set().union(*(owned for _, owned in others)) if others else set()
    for path in sorted(previous - intent - owned_by_others, key=len, reverse=True):
        remove_at(result, path)
    result = merge_applied(result, applied, rtype.merge_keys)
    result["metadata"] = {
        **meta(result),
        "resourceVersion": meta(current).get("resourceVersion"),
    }
    managed: list[Obj] = []
    for entry, owned in others:
        kept = owned - taken
        if kept:
            managed.append({**entry, "fieldsV1": to_fields_v1(kept)})
    managed.append(
        new_entry(manager, operation="Apply", api_version=rtype.api_version, paths=intent)
    )
    with writing(manager, managed):
        return registry.update(rtype, namespace, name, result, subresource="", checks=checks), 200
