"""``ClusterCache``: the informers' plain dicts turned into long-lived model objects.

Every watch event changes the one ``ClusterSnapshot`` the cache owns (``put_*`` / ``remove_*``,
no rebuild per cycle); ``snapshot()`` hands each session an independent clone. The cache does
no I/O: the daemon feeds it from the informers (one handler per informer: ``nodes``,
``pending_pods``, ``assigned_pods``, ``podgroups_handler``, ``queues``, ``priority_classes``,
``namespaces``; ``storage.handler(kind)`` for each storage kind served) and tells it what the
scheduler decided (``assume``) and what the API server answered (``finish_binding``,
``forget``, ``bound_elsewhere``, ``gone``).

Pods follow the state machine of ``pumice.cache.pods``. Pods of other schedulers come only from
the assigned-pods watch; they are accounted on their nodes as jobs of their own in no queue, so
they use capacity without ever entering a queue's share or a session's work. Without Volcano's
CRDs (``volcano=False``) the group annotation is ignored and every pod is a job of its own; in
either case the default queue (the config's ``defaultQueue``) exists implicitly while no Queue
object of that name does. Finished pods (Succeeded, Failed) hold nothing on their nodes; those
of our PodGroups stay in their jobs (off their nodes), so a PodGroup whose members all finished
is Completed, as Volcano writes it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from types import MappingProxyType

from pumice.cache.groups import PodGroupEntry, PriorityClasses
from pumice.cache.handlers import GroupObjects, Handler, NamespaceStore
from pumice.cache.pods import PodEntry, PodState, is_gated, is_terminal, parse_task, pod_uid
from pumice.cache.slim import PodSlimmer
from pumice.cache.storage import StorageCache
from pumice.model import (
    ClusterSnapshot,
    JobInfo,
    NodeAccountingError,
    NodeInfo,
    QueueInfo,
    TaskInfo,
)
from pumice.model.node import NodeFields
from pumice.model.tasks import GROUP_NAME_ANNOTATION, TaskStatus, lone_pod_job
from pumice.model.volumes import refusal
from pumice.plain import Obj

log = logging.getLogger("pumice.cache")

NO_QUEUE = ""
"""The queue of other schedulers' pods: not a queue any session knows."""
NO_MEMBERS: Mapping[str, int] = MappingProxyType({})
LEFT_RETENTION = 60.0
"""Seconds a pod that left the pending watch waits for an assigned ADD before it is dropped."""


class ClusterCache:
    """Nodes, pods, PodGroups, Queues, PriorityClasses, Namespaces: one model snapshot."""

    def __init__(
        self,
        scheduler_name: str = "pumice",
        *,
        volcano: bool = True,
        default_queue: str = "default",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.scheduler_name = scheduler_name
        self.volcano = volcano
        self.default_queue = default_queue
        self._clock = clock
        self.state = ClusterSnapshot()
        self.pods: dict[str, PodEntry] = {}
        self.node_objects: dict[str, Obj] = {}
        self.ghosts: set[str] = set()
        self.groups = GroupObjects(self.state, default_queue, self._resync_group)
        """PodGroups, Queues, PriorityClasses (``pumice.cache.handlers``)."""
        self._group_pods: dict[str, set[str]] = {}
        self._held: dict[str, float] = {}
        self.slim_pod = PodSlimmer()
        """What the pod informers store and deliver: pods slimmed, equal parts shared."""
        self.generation = 0
        """Bumped by every change; a session over an unchanged cache would decide the same."""
        self.on_arrival: Callable[[], None] | None = None
        """Called when a pod of ours is first seen pending (the daemon's early wake)."""
        self.state.put_queue(QueueInfo(name=default_queue))
        self.nodes = Handler(self._node_upsert, self._node_delete, self._touch)
        self.pending_pods = Handler(self._pending_upsert, self._pending_delete, self._touch)
        self.assigned_pods = Handler(self._assigned_upsert, self._assigned_delete, self._touch)
        groups, touch = self.groups, self._touch
        self.podgroups_handler = Handler(groups.podgroup_upsert, groups.podgroup_delete, touch)
        self.queues = Handler(groups.queue_upsert, groups.queue_delete, touch)
        self.priority_classes = Handler(groups.pc_upsert, groups.pc_delete, touch)
        namespaces = NamespaceStore(self.state.namespaces)
        self.namespaces = Handler(namespaces.upsert, namespaces.delete, self._touch)
        self.storage = StorageCache(self._touch)
        """Claims, volumes, classes, CSI nodes and drivers (``pumice.cache.storage``)."""

    # -- what the scheduler reads -------------------------------------------------------------

    @property
    def podgroups(self) -> dict[str, PodGroupEntry]:
        """PodGroups by ``namespace/name``, with their jobs or why they have none."""
        return self.groups.podgroups

    @property
    def queue_objects(self) -> dict[str, Obj]:
        return self.groups.queue_objects

    @property
    def queue_problems(self) -> dict[str, str]:
        """Why a Queue object could not be used, by name."""
        return self.groups.queue_problems

    @property
    def priorities(self) -> PriorityClasses:
        return self.groups.priorities

    def snapshot(self) -> ClusterSnapshot:
        """An independent copy for one session, without pods that are backing off."""
        now = self._clock()
        snap = self.state.clone()
        snap.storage = self.storage.view()
        for uid, until in list(self._held.items()):
            if until <= now:
                del self._held[uid]
            elif snap.task(uid) is not None:
                snap.remove_task(uid)
        self.tidy()
        return snap

    def tidy(self) -> None:
        """Drop pods that left the pending watch long ago without showing up bound."""
        now = self._clock()
        for uid in [u for u, e in self.pods.items() if e.state is PodState.LEFT]:
            if now - self.pods[uid].left_at > LEFT_RETENTION:
                del self.pods[uid]

    def _touch(self) -> None:
        self.generation += 1

    def waiting(self) -> int:
        """How many of our pods wait for a node (offered to sessions, or backing off)."""
        return sum(1 for e in self.pods.values() if e.state is PodState.INITIAL)

    def entries(self, state: PodState) -> Iterator[PodEntry]:
        return (e for e in self.pods.values() if e.state is state)

    def counts(self) -> dict[str, int]:
        """Pods per state, ours and others' (for logs and metrics)."""
        out: dict[str, int] = {}
        for entry in self.pods.values():
            key = entry.state.value if entry.ours else f"other/{entry.state.value}"
            out[key] = out.get(key, 0) + 1
        return out

    def holding(self) -> bool:
        """Are pods held back after a failed bind (their time may be up)?"""
        return bool(self._held)

    def evicted(self) -> int:
        """How many pods we evicted are still there (terminating)."""
        return sum(1 for e in self.pods.values() if e.evicting)

    def held(self) -> int:
        """How many pods are backing off after a failed bind."""
        now = self._clock()
        return sum(1 for until in self._held.values() if until > now)

    # -- what the scheduler did ---------------------------------------------------------------

    def assume(self, uid: str, *, node: str) -> bool:
        """Count a pending pod on ``node`` before the API server confirms the bind.

        False (nothing changes) when the pod is no longer waiting for a node here.
        """
        self._touch()
        entry = self.pods.get(uid)
        if entry is None or entry.state is not PodState.INITIAL:
            return False
        entry.state, entry.node, entry.bound = PodState.ASSUMED, node, False
        self._sync(entry)
        return True

    def finish_binding(self, uid: str) -> None:
        """The API server accepted the bind; the pod stays assumed until the watch shows it."""
        entry = self.pods.get(uid)
        if entry is not None and entry.state is PodState.ASSUMED:
            entry.bound = True

    def forget(self, uid: str, hold: float = 0.0) -> None:
        """Undo an assumption (the bind failed); offer the pod again after ``hold`` seconds."""
        self._touch()
        entry = self.pods.get(uid)
        if entry is None or entry.state is not PodState.ASSUMED:
            return
        entry.node = None
        if entry.on_pending_watch:
            entry.state = PodState.INITIAL
            if hold > 0:
                self._held[uid] = self._clock() + hold
        else:
            entry.state, entry.left_at = PodState.LEFT, self._clock()
        self._sync(entry)

    def bound_elsewhere(self, uid: str) -> None:
        """Someone else bound the pod: forget our assumption and wait for the watch's Add."""
        self._touch()
        entry = self.pods.get(uid)
        if entry is None or entry.state is not PodState.ASSUMED:
            return
        entry.state, entry.node, entry.left_at = PodState.LEFT, None, self._clock()
        self._sync(entry)

    def evicting(self, uid: str, asked: bool = True) -> None:
        """An eviction was asked for (``asked``) or failed (not ``asked``): until the watch
        shows the pod terminating, sessions see it releasing, so none evicts it again."""
        entry = self.pods.get(uid)
        if entry is None or entry.state is not PodState.ADDED or entry.evicting == asked:
            return
        self._touch()
        entry.evicting = asked
        self._sync(entry)

    def gone(self, uid: str) -> None:
        """The pod no longer exists."""
        self._touch()
        entry = self.pods.pop(uid, None)
        if entry is not None:
            entry.state = PodState.LEFT
            self._sync(entry)
            self._ungroup(entry)

    # -- nodes -------------------------------------------------------------------------------

    def _node_upsert(self, node: Obj) -> None:
        name = str(node["metadata"]["name"])
        self.node_objects[name] = node
        self.ghosts.discard(name)
        self.state.put_node(NodeInfo.from_node(node))

    def add_nodes(self, nodes: Iterable[Obj]) -> None:
        """Many ADDED nodes at once (an initial list, a manifest): as ``nodes.on_add`` for
        each, but the node table grows once. A node the cache cannot take is logged and
        skipped, as the handler does."""
        parsed = []
        for node in nodes:
            self._touch()
            try:
                fields = NodeFields.of(node)
            except Exception:
                log.exception("cannot apply Node %s to the cache; skipped", _name_of(node))
                continue
            self.node_objects[fields.name] = node
            self.ghosts.discard(fields.name)
            parsed.append(fields)
        self.state.put_nodes(parsed)

    def _node_delete(self, node: Obj) -> None:
        name = str(node["metadata"]["name"])
        self.node_objects.pop(name, None)
        info = self.state.nodes.get(name)
        if info is None:
            return
        if info.tasks:
            # Pods still run there: keep the node, closed to new pods, until they go.
            ghost = {**node, "spec": {**(node.get("spec") or {}), "unschedulable": True}}
            self.state.put_node(NodeInfo.from_node(ghost))
            self.ghosts.add(name)
        else:
            self.state.remove_node(name)

    def _bury_ghost(self, name: str | None) -> None:
        if name in self.ghosts:
            info = self.state.nodes.get(name or "")
            if info is None or not info.tasks:
                self.ghosts.discard(name or "")
                if info is not None:
                    self.state.remove_node(info.name)

    # -- pods: the pending watch (ours, no node) ----------------------------------------------

    def _pending_upsert(self, pod: Obj) -> None:
        uid = pod_uid(pod)
        entry = self.pods.get(uid)
        if entry is None:
            entry = self.pods[uid] = PodEntry(uid, pod, PodState.INITIAL, ours=True)
            if self.on_arrival is not None:
                self.on_arrival()
        entry.pod = pod
        entry.on_pending_watch = True
        if entry.state in (PodState.ASSUMED, PodState.ADDED):
            return  # the node is what we (or the assigned watch) said; a spec change waits
        entry.state = PodState.INITIAL
        self._regroup(entry)
        self._sync(entry)

    def _pending_delete(self, pod: Obj) -> None:
        entry = self.pods.get(pod_uid(pod))
        if entry is None:
            return
        entry.on_pending_watch = False
        if entry.state in (PodState.ASSUMED, PodState.ADDED) or entry.on_assigned_watch:
            return  # a bind seen from the pending side: a move, never a deletion
        entry.state, entry.left_at = PodState.LEFT, self._clock()
        self._sync(entry)

    # -- pods: the assigned watch (every scheduler, a node, not terminal) -----------------------

    def _assigned_upsert(self, pod: Obj) -> None:
        uid = pod_uid(pod)
        spec = pod.get("spec") or {}
        entry = self.pods.get(uid)
        ours = spec.get("schedulerName") == self.scheduler_name
        if is_terminal(pod) and not (ours and self._grouped(pod)):
            # done, and counted nowhere: only a PodGroup's completed members are kept
            if entry is not None:
                self._assigned_delete(pod)
            return
        if entry is None:
            entry = self.pods[uid] = PodEntry(uid, pod, PodState.ADDED, ours=ours)
        node = spec.get("nodeName") or None
        if entry.state is PodState.ASSUMED and entry.node != node:
            log.warning("pod %s was assumed on %s but is bound to %s", entry.key, entry.node, node)
        entry.pod, entry.on_assigned_watch = pod, True
        entry.state, entry.node = PodState.ADDED, node
        self._regroup(entry)
        self._sync(entry)

    def _assigned_delete(self, pod: Obj) -> None:
        entry = self.pods.get(pod_uid(pod))
        if entry is None:
            return
        if (
            entry.state is PodState.ADDED
            and entry.group is not None
            and is_terminal(pod)
            and not is_terminal(entry.pod)
        ):
            # it completed (a watch that leaves out finished pods says so with a delete): its
            # PodGroup still counts it, as Volcano's does, until the pod is gone for good
            # (kept, so slimmed: a deleted object comes from the watch as the server sent it)
            self._assigned_upsert(self.slim_pod(pod))
            return
        entry.on_assigned_watch = False
        if entry.state is not PodState.ADDED:
            return
        del self.pods[entry.uid]
        entry.state = PodState.LEFT
        self._sync(entry)
        self._ungroup(entry)

    # -- the model side of a pod --------------------------------------------------------------

    def _sync(self, entry: PodEntry) -> None:
        """Make the snapshot hold exactly the task this entry calls for (or none)."""
        current = self.state.task(entry.uid)
        desired = self._task_for(entry, current)
        if current is not None and (desired is None or current.job != desired.job):
            self._remove_task(current)
        if desired is None:
            return
        if desired.job not in self.state.jobs:
            self._add_lone_job(desired)
        try:
            self.state.put_task(desired)
        except NodeAccountingError:
            # An assumed pod that no longer fits (others landed first): bound, as it will be.
            # (Out of its job first: its job indexes it by the status it came with.)
            self.state.remove_task(desired.uid)
            desired.status = TaskStatus.BOUND
            self.state.put_task(desired)

    def _remove_task(self, task: TaskInfo) -> None:
        self.state.remove_task(task.uid)
        job = self.state.jobs.get(task.job)
        if job is not None and job.podgroup is None and not job.tasks:
            self.state.remove_job(task.job)  # a lone pod's job (a PodGroup's has its object)
        self._bury_ghost(task.node_name)

    def _add_lone_job(self, task: TaskInfo) -> None:
        queue = self.default_queue if self.pods[task.uid].ours else NO_QUEUE
        self.state.put_job(
            JobInfo(
                uid=task.job,
                name=task.job.split("/", 1)[1],
                namespace=task.namespace,
                queue=queue,
                priority=task.priority,
                min_available=1,
                creation_timestamp=task.creation_timestamp,
                preemptable=task.preemptable,
                min_task_member=NO_MEMBERS,  # one shared empty mapping: one job per pod
            )
        )

    def _task_for(self, entry: PodEntry, current: TaskInfo | None) -> TaskInfo | None:
        state = entry.state
        if state in (PodState.LEFT, PodState.GATED, PodState.BLOCKED):
            return None
        if state is PodState.INITIAL and is_gated(entry.pod):
            entry.state = PodState.GATED
            return None
        if state is PodState.INITIAL and (entry.pod.get("metadata") or {}).get("deletionTimestamp"):
            return None  # being deleted: never scheduled
        if (
            state is PodState.INITIAL
            and (refused := refusal(entry.pod, self.storage.evaluated)) is not None
        ):
            entry.state, entry.reason = PodState.BLOCKED, refused  # refuse, never violate
            return None
        completed = state is PodState.ADDED and is_terminal(entry.pod)
        if completed and entry.group is None:
            return None
        task = self._parse_task(entry, current)
        if task is None:
            return None
        job = self._job_of(entry, task)
        if job is None or (completed and job != entry.group):
            return None
        task.job = job
        if completed:
            task.node_name = None  # a PodGroup's completed member holds nothing on its node
        if state is PodState.ASSUMED:
            task.node_name, task.status = entry.node, TaskStatus.BINDING
        elif entry.evicting and task.status & (TaskStatus.BOUND | TaskStatus.RUNNING):
            task.status = TaskStatus.RELEASING
        return task

    def _parse_task(self, entry: PodEntry, current: TaskInfo | None) -> TaskInfo | None:
        return parse_task(entry, self.groups.priorities.of, current)

    def _job_of(self, entry: PodEntry, task: TaskInfo) -> str | None:
        """The job the task belongs to; None (and the entry BLOCKED) when it may not run."""
        lone = lone_pod_job(task.namespace, entry.uid)
        if entry.group is None:
            return lone
        group = self.podgroups.get(entry.group)
        if group is not None and group.job is not None:
            return group.job.uid
        if entry.state is not PodState.INITIAL:
            return lone  # already on a node: counted there whatever its PodGroup says
        entry.state = PodState.BLOCKED
        entry.reason = (
            group.reason if group is not None else f"podgroup {entry.group} does not exist"
        )
        return None

    def _grouped(self, pod: Obj) -> bool:
        """Does the pod belong to a PodGroup (with Volcano's CRDs)?"""
        annotations = (pod.get("metadata") or {}).get("annotations") or {}
        return self.volcano and bool(annotations.get(GROUP_NAME_ANNOTATION))

    def _regroup(self, entry: PodEntry) -> None:
        """Index the pod under the PodGroup it names (ours and with Volcano's CRDs only)."""
        meta = entry.pod.get("metadata") or {}
        name = (meta.get("annotations") or {}).get(GROUP_NAME_ANNOTATION)
        if not (entry.ours and self.volcano and name):
            self._ungroup(entry)
            entry.group = None
            return
        group = f"{meta.get('namespace') or 'default'}/{name}"
        if group == entry.group and entry.uid in self._group_pods.get(group, ()):
            return  # indexed there already (a bind: the same pod, seen on its node)
        self._ungroup(entry)
        entry.group = group
        self._group_pods.setdefault(group, set()).add(entry.uid)

    def _ungroup(self, entry: PodEntry) -> None:
        if entry.group is not None:
            members = self._group_pods.get(entry.group)
            if members is not None:
                members.discard(entry.uid)
                if not members:
                    del self._group_pods[entry.group]

    def _resync_group(self, key: str) -> None:
        for uid in list(self._group_pods.get(key, ())):
            entry = self.pods[uid]
            if entry.state is PodState.BLOCKED:
                entry.state, entry.reason = PodState.INITIAL, ""
            self._sync(entry)


def _name_of(obj: Obj) -> object:
    return (obj.get("metadata") or {}).get("name")
