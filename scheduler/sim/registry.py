"""The verbs of the API (create, get, list, update, patch, delete) on plain dicts.

``Registry`` is the server without HTTP: REST handlers call it after parsing a request, and
tests and the seeding code call it directly (``registry.create_object(manifest)``). It applies
the semantics of the real server: metadata stamping (uid, creationTimestamp, generation),
``generateName``, optimistic concurrency on ``metadata.resourceVersion``, the status
subresource split (status updates change only status; main updates never change status),
no-op updates that do not bump the resourceVersion, finalizers, delete preconditions,
consistent paginated lists (``limit``/``continue``) and exact-version reads (410 when too old).
Pod-specific verbs (binding, eviction, graceful deletion) live in ``pumice.sim.pods``.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from typing import Any

from pumice.sim.admission import Admission, generated_name
from pumice.sim.errors import (
    already_exists,
    bad_request,
    forbidden,
    gone,
    invalid,
    namespace_mismatch,
    not_found,
    rv_precondition,
    stale,
    uid_precondition,
)
from pumice.sim.listing import Listing, Listings, decode_continue, encode_continue, listing
from pumice.sim.managedfields import stamp_create, stamp_update
from pumice.sim.objects import Key, Obj, meta, new_uid, now_rfc3339, with_meta
from pumice.sim.patch import apply_patch
from pumice.sim.pods import delete_pod
from pumice.sim.resources import (
    ALL_TYPES,
    EVERY_TYPE,
    NAMESPACES,
    NODES,
    PODS,
    ResourceSet,
    ResourceType,
)
from pumice.sim.selectors import Selector
from pumice.sim.store import Store
from pumice.sim.validation import STRICT, Checks

IMMORTAL_NAMESPACES = frozenset({"default", "kube-system", "kube-public"})
"""Namespaces the real server's NamespaceLifecycle admission never lets go."""

CONTINUE_TOO_OLD = (
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this "
    "response to retrieve the remainder of the results. Continuing with the provided token "
    "results in an inconsistent list - objects that were created, modified, or deleted "
    "between the time the first chunk was returned and now may show up in the list."
)


def _view_out(rtype: ResourceType, obj: Obj) -> Obj:
    return rtype.to_view(obj) if rtype.to_view is not None else obj


def _spec_part(obj: Obj) -> Obj:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "kind", "apiVersion")}


class Registry:
    """API verbs over a ``Store``. Methods take and return objects in the type's view form."""

    def __init__(
        self, store: Store, seed: int | None = None, types: ResourceSet = EVERY_TYPE
    ) -> None:
        self.store = store
        self.types = types
        """What this server serves; ``create_object`` refuses other kinds."""
        self.admission = Admission(store)
        self.rng = random.Random(seed)
        self.terminating: set[tuple[str, Key]] = set()
        self.listings = Listings()

    # -- helpers -------------------------------------------------------------------------

    def current(self, rtype: ResourceType, namespace: str, name: str) -> Obj:
        obj = self.store.get(rtype.table, (namespace if rtype.namespaced else "", name))
        if obj is None:
            raise not_found(rtype.plural, rtype.group, name=name)
        return obj

    def _check_namespace(self, rtype: ResourceType, namespace: str) -> None:
        if rtype.namespaced and self.store.get(NAMESPACES.table, ("", namespace)) is None:
            raise not_found("namespaces", "", name=namespace)

    def _commit(self, rtype: ResourceType, obj: Obj | None, key: Key) -> Obj:
        change = self.store.commit(rtype.table, key, obj)
        return change.obj

    # -- read ----------------------------------------------------------------------------

    def get(self, rtype: ResourceType, namespace: str, name: str) -> Obj:
        return _view_out(rtype, self.current(rtype, namespace, name))

    def list_objects(
        self,
        rtype: ResourceType,
        selector: Selector,
        limit: int = 0,
        token: str = "",
        rv: str = "",
        rv_match: str = "",
    ) -> Obj:
        items, list_meta = self.list_stored(rtype, selector, limit, token, rv, rv_match)
        return {
            "kind": f"{rtype.kind}List",
            "apiVersion": rtype.api_version,
            "metadata": list_meta,
            "items": [_view_out(rtype, obj) for obj in items],
        }

    def list_stored(
        self,
        rtype: ResourceType,
        selector: Selector,
        limit: int = 0,
        token: str = "",
        rv: str = "",
        rv_match: str = "",
    ) -> tuple[list[Obj], Obj]:
        """Matching objects in stored form, in key order, and the list metadata.

        A paged list computes its matching keys once and serves every page from them
        (``pumice.sim.listing``)."""
        store = self.store
        start: Key | None = None
        if token:
            at, start = decode_continue(token)
            if at < store.floor(rtype.table):
                raise gone(CONTINUE_TOO_OLD)
        elif rv_match == "Exact" or (limit and rv not in ("", "0") and not rv_match):
            at = _parse_rv(rv)
            if at < store.floor(rtype.table):
                raise gone("The resourceVersion for the provided list is too old.")
        else:
            if rv:
                _parse_rv(rv)
            at = store.rv

        def compute() -> Listing:
            live = at >= store.rv
            table = store.table(rtype.table) if live else store.snapshot_at(rtype.table, at)
            name = selector.field_value("metadata.name")
            keys: Iterable[Key]
            if name is not None and rtype.namespaced and selector.namespace:
                keys = [k for k in ((selector.namespace, name),) if k in table]
            elif name is not None:
                keys = [k for k in table if k[1] == name]
            else:
                keys = table.keys()
            return listing(table, keys, selector)

        found = self.listings.get(rtype.table, at, selector, compute)
        items, last, remaining = found.page(start, limit)
        list_meta: Obj = {"resourceVersion": str(at)}
        if remaining and last is not None:
            self.listings.keep(rtype.table, at, selector, found)
            list_meta["continue"] = encode_continue(at, last)
            if not selector.labels and not selector.fields:
                list_meta["remainingItemCount"] = remaining
        return items, list_meta

    # -- create --------------------------------------------------------------------------

    def create(
        self,
        rtype: ResourceType,
        namespace: str,
        body: Any,
        dry_run: bool = False,
        checks: Checks | None = None,
    ) -> Obj:
        if not isinstance(body, dict):
            raise bad_request("the body of the request must be a JSON object")
        if checks is not None:
            body = checks.check(rtype, body)
        self.admission.validate_view(rtype, body)
        obj = rtype.from_view(body) if rtype.from_view is not None else dict(body)
        m = dict(meta(obj))
        if rtype.namespaced:
            body_ns = m.get("namespace")
            if body_ns and body_ns != namespace:
                raise namespace_mismatch()
            m["namespace"] = namespace
        else:
            m.pop("namespace", None)
        if m.get("resourceVersion"):
            raise bad_request("resourceVersion should not be set on objects to be created")
        # the server assigns identity; a status sent with a create is dropped wherever status
        # is a subresource (nodes excepted: kubelets register with their status)
        m.pop("uid", None)
        m.pop("creationTimestamp", None)
        if rtype.has_status and rtype is not NODES:
            obj.pop("status", None)
        if not m.get("name") and not m.get("generateName"):
            raise invalid(
                rtype.kind,
                rtype.group,
                name="",
                causes=[
                    (
                        "metadata.name",
                        "FieldValueRequired",
                        "Required value: name or generateName is required",
                    )
                ],
            )
        self._check_namespace(rtype, namespace)
        return self._insert(rtype, obj, m, dry_run)

    def _insert(
        self, rtype: ResourceType, obj: Obj, m: Obj, dry_run: bool, seeding: bool = False
    ) -> Obj:
        table = self.store.table(rtype.table)
        ns = str(m.get("namespace") or "")
        if not m.get("name"):
            for _ in range(8):
                m["name"] = generated_name(str(m["generateName"]), self.rng)
                if (ns, m["name"]) not in table:
                    break
        name = str(m["name"])
        m.pop("deletionTimestamp", None)
        m.pop("deletionGracePeriodSeconds", None)
        m.pop("resourceVersion", None)
        m.pop("managedFields", None)
        m.setdefault("uid", new_uid())
        m.setdefault("creationTimestamp", now_rfc3339())
        if rtype.generation:
            m["generation"] = 1
        obj = {"apiVersion": rtype.api_version, "kind": rtype.kind, **obj, "metadata": m}
        if rtype.from_view is not None:
            obj["apiVersion"], obj["kind"] = "v1", "Event"
        obj = self.admission.on_create(rtype, obj, seeding)
        obj = stamp_create(rtype, obj)  # managedFields of the request's field manager
        key = (ns, name)
        if key in table:
            raise already_exists(rtype.plural, rtype.group, name=name)
        if dry_run:
            return _view_out(rtype, obj)
        return _view_out(rtype, self._commit(rtype, obj, key))

    def create_object(self, obj: Obj, keep_identity: bool = True, validate: bool = True) -> Obj:
        """Store a manifest (any served kind), creating its namespace if missing.

        Used to seed a cluster from files and by tests. ``uid``, ``creationTimestamp`` and
        ``status`` in the manifest are kept (a ``kubectl get -o yaml`` dump round-trips);
        ``resourceVersion`` is replaced by this server's own. Returns the stored object, which
        must not be mutated (copy it first). The manifest is decoded and validated as a
        ``fieldValidation=Strict`` request would be; ``validate=False`` stores what a real
        server would refuse (for tests of the daemon against such objects).
        """
        api_version = str(obj.get("apiVersion", ""))
        kind = str(obj.get("kind", ""))
        rtype = self.types.for_object(api_version, kind)
        if rtype is None:
            why = ""
            known = EVERY_TYPE.for_object(api_version, kind)
            if known is not None and known.group:
                why = f" (this server does not serve the group {known.group})"
            elif known is not None:
                why = f" (this server does not serve {known.plural})"
            raise bad_request(f"no resource serves kind {kind!r} in {api_version!r}{why}")
        if validate:
            obj = Checks(STRICT).check(rtype, obj)
        m = dict(meta(obj))
        m.pop("resourceVersion", None)
        if not keep_identity:
            m.pop("uid", None)
            m.pop("creationTimestamp", None)
        ns = ""
        if rtype.namespaced:
            ns = str(m.get("namespace") or "default")
            m["namespace"] = ns
            if self.store.get(NAMESPACES.table, ("", ns)) is None:
                self._insert(
                    NAMESPACES, {"apiVersion": "v1", "kind": "Namespace"}, {"name": ns}, False
                )
        body = rtype.from_view(obj) if rtype.from_view is not None else obj
        if not m.get("name") and not m.get("generateName"):
            raise bad_request("metadata.name or metadata.generateName is required")
        return self._insert(rtype, body, m, False, seeding=True)

    # -- update --------------------------------------------------------------------------

    def update(
        self,
        rtype: ResourceType,
        namespace: str,
        name: str,
        body: Any,
        *,
        subresource: str = "",
        checks: Checks | None = None,
    ) -> Obj:
        if not isinstance(body, dict):
            raise bad_request("the body of the request must be a JSON object")
        old = self.current(rtype, namespace, name)
        if checks is not None:
            body = checks.check(rtype, body, _view_out(rtype, old))
        new = rtype.from_view(body) if rtype.from_view is not None else body
        m = meta(new)
        if m.get("name") not in (None, name):
            raise bad_request(
                f"the name of the object ({m.get('name')}) does not match the name on the URL "
                f"({name})"
            )
        if rtype.namespaced and m.get("namespace") not in (None, "", namespace):
            raise namespace_mismatch()
        rv = m.get("resourceVersion")
        if rv and rv != meta(old).get("resourceVersion"):
            raise stale(rtype.plural, rtype.group, name=name)
        uid, old_uid = m.get("uid"), meta(old).get("uid")
        if uid and uid != old_uid:
            raise uid_precondition(rtype.plural, rtype.group, name=name, wanted=uid, actual=old_uid)
        return _view_out(rtype, self._apply_update(rtype, old, new, subresource))

    def patch(
        self,
        rtype: ResourceType,
        namespace: str,
        name: str,
        content_type: str,
        patch: Any,
        subresource: str = "",
        checks: Checks | None = None,
    ) -> Obj:
        old = self.current(rtype, namespace, name)
        base = _view_out(rtype, old)
        patched = apply_patch(base, content_type, patch, rtype.merge_keys)
        if not isinstance(patched, dict):
            raise bad_request("the patched object is not a JSON object")
        if checks is not None:
            patched = checks.check(rtype, patched, base)
        new = rtype.from_view(patched) if rtype.from_view is not None else patched
        m = meta(new)
        if m.get("name") != name or (rtype.namespaced and m.get("namespace") != namespace):
            raise bad_request("the patch may not change the object's name or namespace")
        if m.get("resourceVersion") != meta(old).get("resourceVersion"):
            raise stale(rtype.plural, rtype.group, name=name)
        uid, old_uid = m.get("uid"), meta(old).get("uid")
        if uid != old_uid:
            raise uid_precondition(rtype.plural, rtype.group, name=name, wanted=uid, actual=old_uid)
        return _view_out(rtype, self._apply_update(rtype, old, new, subresource))

    def _apply_update(self, rtype: ResourceType, old: Obj, new: Obj, subresource: str) -> Obj:
        old_m = meta(old)
        if subresource == "status":
            merged = {**old, "status": new.get("status")}
            if merged["status"] is None:
                merged.pop("status")
            nm = meta(new)
            m = dict(old_m)
            for field in ("labels", "annotations"):
                if field in nm:
                    m[field] = nm[field]
                else:
                    m.pop(field, None)
            merged["metadata"] = m
        else:
            merged = dict(new)
            merged.setdefault("apiVersion", old.get("apiVersion"))
            merged.setdefault("kind", old.get("kind"))
            if rtype.has_status:
                if "status" in old:
                    merged["status"] = old["status"]
                else:
                    merged.pop("status", None)
            m = dict(meta(new))
            for field in (
                "uid",
                "creationTimestamp",
                "namespace",
                "name",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "generation",
            ):
                if field in old_m:
                    m[field] = old_m[field]
                else:
                    m.pop(field, None)
            m.pop("managedFields", None)
            merged["metadata"] = m
            merged = self.admission.on_update(rtype, old, merged, subresource)
            if rtype.generation and _spec_part(merged) != _spec_part(old):
                m["generation"] = int(old_m.get("generation", 1)) + 1
        m["resourceVersion"] = old_m.get("resourceVersion")
        if subresource != "status":
            merged = stamp_update(rtype, old, merged)  # managedFields kept, writer recorded
        if merged == old:
            return old
        key = (str(old_m.get("namespace") or ""), str(old_m.get("name")))
        if (
            m.get("deletionTimestamp")
            and not m.get("finalizers")
            and self._finalized(rtype, merged)
        ):
            return self._commit(rtype, None, key)
        return self._commit(rtype, merged, key)

    def _finalized(self, rtype: ResourceType, obj: Obj) -> bool:
        """Whether an object being deleted may go once its finalizers are gone."""
        if rtype is PODS:
            return int(meta(obj).get("deletionGracePeriodSeconds") or 0) == 0
        return True

    # -- delete --------------------------------------------------------------------------

    def delete(self, rtype: ResourceType, namespace: str, name: str, options: Obj) -> Obj:
        old = self.current(rtype, namespace, name)
        _check_preconditions(rtype, old, options)
        if rtype is PODS:
            return delete_pod(self, old, options)
        if rtype is NAMESPACES:
            return self._delete_namespace(old)
        return self.remove_or_finalize(rtype, old, 0)

    def remove_or_finalize(self, rtype: ResourceType, old: Obj, grace: int) -> Obj:
        """Remove ``old`` now, or mark it for deletion while finalizers or grace remain."""
        m = meta(old)
        key = (str(m.get("namespace") or ""), str(m.get("name")))
        if m.get("finalizers") or grace > 0:
            if m.get("deletionTimestamp"):
                return _view_out(rtype, old)
            marked = with_meta(
                old, deletionTimestamp=now_rfc3339(), deletionGracePeriodSeconds=grace
            )
            return _view_out(rtype, self._commit(rtype, marked, key))
        return _view_out(rtype, self._commit(rtype, None, key))

    def _delete_namespace(self, ns: Obj) -> Obj:
        """Terminating first (as the namespace controller sees it), then the namespace's
        objects go, then the namespace itself; the answer is the Terminating namespace."""
        name = str(meta(ns).get("name"))
        if name in IMMORTAL_NAMESPACES:
            raise forbidden("namespaces", "", name=name, why="this namespace may not be deleted")
        key = ("", name)
        if not meta(ns).get("deletionTimestamp"):
            status = {**(ns.get("status") or {}), "phase": "Terminating"}
            marked = with_meta(
                {**ns, "status": status},
                deletionTimestamp=now_rfc3339(),
                deletionGracePeriodSeconds=0,
            )
            ns = self._commit(NAMESPACES, marked, key)
        answer = _view_out(NAMESPACES, ns)
        seen: set[str] = set()
        for rtype in ALL_TYPES:
            if not rtype.namespaced or rtype.table in seen:
                continue
            seen.add(rtype.table)
            for child in [k for k in self.store.table(rtype.table) if k[0] == name]:
                self.store.commit(rtype.table, child, None)
        self._commit(NAMESPACES, None, key)
        return answer


def _check_preconditions(rtype: ResourceType, old: Obj, options: Obj) -> None:
    pre = options.get("preconditions") or {}
    m = meta(old)
    name = str(m.get("name"))
    uid, rv = pre.get("uid"), pre.get("resourceVersion")
    if uid and uid != m.get("uid"):
        actual = m.get("uid")
        raise uid_precondition(rtype.plural, rtype.group, name=name, wanted=uid, actual=actual)
    if rv and rv != m.get("resourceVersion"):
        actual = m.get("resourceVersion")
        raise rv_precondition(rtype.plural, rtype.group, name=name, wanted=rv, actual=actual)


def _parse_rv(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise bad_request(f"invalid resource version: {text!r}") from None
    if value < 0:
        raise bad_request(f"invalid resource version: {text!r}")
    return value
