"""The cache's informer handlers, and the objects other than pods and nodes that it keeps.

``Handler`` turns one informer's events into the cache's upserts and deletes. ``GroupObjects``
keeps the objects that decide which job and queue a pod is in and how it ranks — PodGroups,
Queues, PriorityClasses — and ``NamespaceStore`` the Namespaces' labels, for
``namespaceSelector``. Both change the snapshot the cache owns (``pumice.cache.cache``); the
pods of a PodGroup that turned valid or invalid are resynced through the cache's callback.

Namespaces: pod affinity terms may select the namespaces they count pods in by label, so every
Namespace's labels are kept, from the daemon's Namespace informer or, in ``pumice simulate``,
from the Namespace manifests. The API server sets ``kubernetes.io/metadata.name`` to the name on
every Namespace; it is set here as well, so a namespace read from a file without it matches the
same selectors as one read from a cluster. A namespace that pods name but that is not known is
taken to exist with only that label (``pumice.model.snapshot.namespace_labels``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any

from pumice.cache.groups import (
    PodGroupEntry,
    PriorityClasses,
    build_job,
    build_queue,
    object_key,
    queue_of,
)
from pumice.model import ClusterSnapshot, QueueInfo
from pumice.model.snapshot import NAMESPACE_NAME_LABEL
from pumice.plain import Obj, ObjectError

log = logging.getLogger("pumice.cache")


class Handler:
    """One informer's events, as the ``pumice.kube.informer.InformerHandler`` protocol wants.

    An object the cache cannot take is logged and skipped: one bad object never stops the
    informer that delivered it.
    """

    def __init__(
        self,
        upsert: Callable[[Obj], None],
        delete: Callable[[Obj], None],
        changed: Callable[[], None],
    ) -> None:
        self._upsert = upsert
        self._delete = delete
        self._changed = changed

    def on_add(self, obj: Obj) -> None:
        self._guarded(self._upsert, obj)

    def on_update(self, old: Obj, new: Obj) -> None:
        self._guarded(self._upsert, new)

    def on_delete(self, obj: Obj) -> None:
        self._guarded(self._delete, obj)

    def _guarded(self, apply: Callable[[Obj], None], obj: Obj) -> None:
        self._changed()
        try:
            apply(obj)
        except Exception:
            meta = obj.get("metadata") or {}
            log.exception(
                "cannot apply %s %s/%s to the cache; skipped",
                obj.get("kind") or "object",
                meta.get("namespace") or "",
                meta.get("name"),
            )


class GroupObjects:
    """PodGroups (as jobs), Queues and PriorityClasses, kept in ``state``.

    ``resync(key)`` is called when the job of PodGroup ``key`` appears or is about to go: its
    pods move into it, or out of it (blocked) before it is removed.
    """

    def __init__(
        self, state: ClusterSnapshot, default_queue: str, resync: Callable[[str], None]
    ) -> None:
        self.state = state
        self.default_queue = default_queue
        self.resync = resync
        self.podgroups: dict[str, PodGroupEntry] = {}
        self.queue_objects: dict[str, Obj] = {}
        self.queue_problems: dict[str, str] = {}
        self.priorities = PriorityClasses()

    def podgroup_upsert(self, podgroup: Obj) -> None:
        key = object_key(podgroup)
        before = self.podgroups.get(key)
        entry = build_job(
            podgroup,
            self.priorities.values,
            self.state.queues,
            default_queue=self.default_queue,
            default_priority=self.priorities.of(None),
        )
        self.podgroups[key] = entry
        if entry.job is not None:
            self.state.put_job(entry.job)
            if before is None or before.job is None:
                self.resync(key)  # its pods may run now
        else:
            self._drop_job(key)

    def podgroup_delete(self, podgroup: Obj) -> None:
        key = object_key(podgroup)
        self.podgroups.pop(key, None)
        self._drop_job(key)

    def _drop_job(self, key: str) -> None:
        """The PodGroup is gone or invalid: its pods move out of the job before it goes."""
        if key not in self.state.jobs:
            self.resync(key)
            return
        self.resync(key)
        self.state.remove_job(key)

    def _revalidate(self, predicate: Callable[[Obj], bool]) -> None:
        for entry in list(self.podgroups.values()):
            if predicate(entry.obj):
                self.podgroup_upsert(entry.obj)

    def queue_upsert(self, queue: Obj) -> None:
        name = object_key(queue)
        self.queue_objects[name] = queue
        info, problem = build_queue(queue)
        if info is None:
            log.warning("%s", problem)
            self.queue_problems[name] = problem
            self._remove_queue(name)
        else:
            self.queue_problems.pop(name, None)
            self.state.put_queue(info)
        self._revalidate(lambda pg: queue_of(pg, self.default_queue) == name)

    def queue_delete(self, queue: Obj) -> None:
        name = object_key(queue)
        self.queue_objects.pop(name, None)
        self.queue_problems.pop(name, None)
        self._remove_queue(name)
        self._revalidate(lambda pg: queue_of(pg, self.default_queue) == name)

    def _remove_queue(self, name: str) -> None:
        if name == self.default_queue:
            self.state.put_queue(QueueInfo(name=name))  # implicit again
        elif name in self.state.queues:
            self.state.remove_queue(name)

    def pc_upsert(self, pc: Obj) -> None:
        self._revalidate(self.priorities.upsert(pc))

    def pc_delete(self, pc: Obj) -> None:
        self._revalidate(self.priorities.delete(pc))


def namespace_entry(namespace: Mapping[str, Any]) -> tuple[str, dict[str, str]]:
    """A Namespace object's name and labels, the name label included."""
    meta = namespace.get("metadata") or {}
    name = str(meta.get("name") or "")
    if not name:
        raise ObjectError("a Namespace without metadata.name")
    labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
    labels[NAMESPACE_NAME_LABEL] = name
    return name, labels


class NamespaceStore:
    """Keeps ``into`` (a snapshot's ``namespaces``) equal to the Namespaces seen."""

    def __init__(self, into: MutableMapping[str, Mapping[str, str]]) -> None:
        self._into = into

    def upsert(self, namespace: Obj) -> None:
        name, labels = namespace_entry(namespace)
        self._into[name] = labels  # a new mapping: clones holding the old one keep it

    def delete(self, namespace: Obj) -> None:
        name = str((namespace.get("metadata") or {}).get("name") or "")
        self._into.pop(name, None)
