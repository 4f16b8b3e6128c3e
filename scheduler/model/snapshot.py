"""A consistent picture of the cluster: what the cache keeps current and what a session reads.

``ClusterSnapshot`` holds nodes (in one ``NodeTable``), jobs with their tasks, and queues, and
keeps them consistent under incremental updates (``put_*`` / ``remove_*``): a task that has a
node and a non-pending status is accounted on that node.

``clone()`` gives an independent snapshot cheaply, so the cache can go on applying watch events
while a session schedules on the clone in another thread, and a discarded session leaves no
trace. What it copies at once: the node table's arrays, one ``NodeInfo`` per node (sharing its
tasks), and the dictionaries of jobs, queues and task locations. Jobs and their tasks are
copied on write: each job records the snapshot that owns it (``JobInfo.owner``); a snapshot
about to change a job it does not own — the cache applying an event, or a session's statement
placing a task — first replaces it with its own copy (``writable_job``). ``clone`` gives both
sides a new identity, so after it neither owns any job and each copies what it changes. A
session changes few jobs, so a cycle copies only those.

Nothing else may change a job in place: go through ``writable_job`` (statements do).

``storage`` (``pumice.model.volumes``) is the cache's read-only picture of claims, volumes and
the storage classes and CSI objects; clones share it.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from pumice.model.node import NodeFields, NodeInfo, NodeTable, add_new_nodes
from pumice.model.objects import JobInfo, QueueInfo, TaskInfo
from pumice.model.resource import Resource
from pumice.model.tasks import TaskStatus
from pumice.model.volumes import NO_STORAGE, StorageObjects
from pumice.plain import PumiceError

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
"""The label the API server sets on every Namespace: its name."""


def namespace_labels(namespaces: Mapping[str, Mapping[str, str]], name: str) -> Mapping[str, str]:
    """The labels of namespace ``name``; a namespace that is referenced but not known exists
    with only ``kubernetes.io/metadata.name`` (as every namespace has it)."""
    labels = namespaces.get(name)
    return labels if labels is not None else {NAMESPACE_NAME_LABEL: name}


class SnapshotError(PumiceError, KeyError):
    """An update names a job, task or node the snapshot does not have, or cannot apply."""


@dataclass(slots=True, eq=False)
class ClusterSnapshot:
    """Nodes, jobs and queues that a session schedules over (see the module docstring)."""

    nodes: dict[str, NodeInfo] = field(default_factory=dict)
    jobs: dict[str, JobInfo] = field(default_factory=dict)
    queues: dict[str, QueueInfo] = field(default_factory=dict)
    table: NodeTable = field(default_factory=NodeTable)
    task_jobs: dict[str, str] = field(default_factory=dict)
    """Task uid -> uid of its job, for every task of every job."""
    orphans: dict[str, set[str]] = field(default_factory=dict)
    """Node name -> uids of placed tasks naming that node while it is not in the snapshot;
    they are accounted when it arrives."""
    namespaces: dict[str, Mapping[str, str]] = field(default_factory=dict)
    """Namespace name -> its labels (``kubernetes.io/metadata.name`` included), for pod
    affinity's ``namespaceSelector``; read a name through ``namespace_labels``, which answers
    for namespaces that pods name but that are not known. The label mappings are replaced,
    never changed in place, so a clone shares them."""
    storage: StorageObjects = NO_STORAGE
    """Claims, volumes, classes, CSI nodes and drivers (read only; shared by clones)."""
    identity: object = field(default_factory=object)
    taken_at: float = field(default_factory=time.time)
    """When this picture of the cluster was taken (seconds since the epoch): the clock of a
    session's plugins. A clone is a new picture, taken when cloned; ``pumice simulate`` sets
    its own clock (one ``period`` per cycle)."""

    @classmethod
    def build(
        cls,
        nodes: Iterable[NodeInfo] = (),
        jobs: Iterable[JobInfo] = (),
        queues: Iterable[QueueInfo] = (),
    ) -> ClusterSnapshot:
        """Assemble a snapshot; tasks with a node and a non-pending status are accounted there.

        A task naming a node that is not in the snapshot is left off the nodes (it still
        belongs to its job). Unknown queues are not created: a job's queue must be listed.
        The objects passed in become the snapshot's own.
        """
        snap = cls()
        for node in nodes:
            snap.table.add(node)
            snap.nodes[node.name] = node
        for queue in queues:
            snap.queues[queue.name] = queue
        for job in jobs:
            job.owner = snap.identity
            snap.jobs[job.uid] = job
            for task in job.tasks.values():
                snap.task_jobs[task.uid] = job.uid
                snap._account(task)
        return snap

    def namespace_labels(self, name: str) -> Mapping[str, str]:
        """The labels of namespace ``name`` (see the module function ``namespace_labels``)."""
        return namespace_labels(self.namespaces, name)

    @property
    def total_allocatable(self) -> Resource:
        """Sum of allocatable over every node."""
        return self.table.resource(self.table.allocatable.sum(axis=0))

    # -- copies -----------------------------------------------------------------------------

    def clone(self) -> ClusterSnapshot:
        """An independent snapshot: changing either never changes the other."""
        for job in self.jobs.values():
            if job.owner is None:  # added to ``jobs`` directly: it is this side's until now
                job.owner = self.identity
        table = self.table.clone()
        other = ClusterSnapshot(
            nodes={node.name: node for node in table.nodes},
            jobs=dict(self.jobs),
            queues={name: copy.copy(queue) for name, queue in self.queues.items()},
            table=table,
            task_jobs=dict(self.task_jobs),
            orphans={name: set(uids) for name, uids in self.orphans.items()},
            namespaces=dict(self.namespaces),
            storage=self.storage,
            taken_at=time.time(),
        )
        self.identity = object()  # the jobs are shared now: this side copies before writing too
        return other

    def dispose(self) -> None:
        """Break the references between this snapshot's node table and its nodes, which form
        a cycle only the garbage collector would free: after a daemon's cycle the snapshot is
        then freed at once, by reference counting. The snapshot is empty afterwards."""
        self.table.nodes = []
        self.nodes = {}
        self.jobs = {}

    def writable_job(self, uid: str) -> JobInfo:
        """The job ``uid``, copied first if this snapshot does not own it; the copy's tasks
        replace the old ones on this snapshot's nodes."""
        job = self.jobs.get(uid)
        if job is None:
            raise SnapshotError(f"no job {uid!r} in the snapshot")
        if job.owner is self.identity:
            return job
        if job.owner is None:  # put into ``jobs`` directly and never shared by ``clone``
            job.owner = self.identity
            return job
        job = job.clone(self.identity)
        self.jobs[uid] = job
        for task in job.tasks.values():
            node = self.nodes.get(task.node_name or "")
            if node is not None and task.uid in node.tasks:
                node.tasks[task.uid] = task
        return job

    def writable_task(self, task: TaskInfo) -> tuple[JobInfo, TaskInfo]:
        """This snapshot's own copy of ``task`` (found by uid) and of its job."""
        job = self.writable_job(self.task_jobs.get(task.uid, task.job))
        own = job.tasks.get(task.uid)
        if own is None:
            raise SnapshotError(f"task {task.key} is not in job {job.uid}")
        return job, own

    def task(self, uid: str) -> TaskInfo | None:
        """The task with this uid, if any job has it."""
        job = self.jobs.get(self.task_jobs.get(uid, ""))
        return None if job is None else job.tasks.get(uid)

    # -- incremental updates (the cache's side) ---------------------------------------------

    def put_node(self, node: NodeInfo) -> None:
        """Add a node, or take an updated node's spec keeping its tasks and accounting."""
        known = self.nodes.get(node.name)
        if known is None:
            self.table.add(node)
            self.nodes[node.name] = node
            for uid in self.orphans.pop(node.name, ()):
                task = self.task(uid)
                if task is not None:
                    self._account(task)
            return
        known.set_spec(node)

    def put_nodes(self, nodes: Iterable[NodeFields]) -> None:
        """``put_node`` for many nodes at once (``NodeFields``): the new ones join the table
        together (``add_new_nodes``), the known ones take their new spec."""
        new: dict[str, NodeFields] = {}
        for fields in nodes:
            known = self.nodes.get(fields.name)
            if known is not None:
                known.set_spec(NodeInfo.from_fields(fields))
            else:
                new[fields.name] = fields  # named twice: the later one, as put_node would
        for node in add_new_nodes(self.table, list(new.values())):
            self.nodes[node.name] = node
            for uid in self.orphans.pop(node.name, ()):
                task = self.task(uid)
                if task is not None:
                    self._account(task)

    def remove_node(self, name: str) -> None:
        """Take a node out; refused while tasks are accounted on it."""
        node = self.nodes.get(name)
        if node is None:
            return
        if node.tasks:
            raise SnapshotError(f"node {name} still has {len(node.tasks)} task(s)")
        self.table.remove(name)
        del self.nodes[name]

    def put_queue(self, queue: QueueInfo) -> None:
        self.queues[queue.name] = queue

    def remove_queue(self, name: str) -> None:
        self.queues.pop(name, None)

    def put_job(self, job: JobInfo) -> None:
        """Add a job (with any tasks it has), or replace a job's metadata keeping its tasks."""
        known = self.jobs.get(job.uid)
        if known is None:
            job.owner = self.identity
            self.jobs[job.uid] = job
            for task in job.tasks.values():
                self.task_jobs[task.uid] = job.uid
                self._account(task)
            return
        job.owner = self.identity
        self.jobs[job.uid] = self.writable_job(job.uid).with_metadata_of(job)

    def remove_job(self, uid: str) -> None:
        """Take a job out with all its tasks."""
        job = self.jobs.get(uid)
        if job is None:
            return
        for task_uid in list(job.tasks):
            self.remove_task(task_uid)
        del self.jobs[uid]

    def put_task(self, task: TaskInfo) -> None:
        """Add a task to its job (``task.job``, which must exist), or replace the task with the
        same uid, moving its accounting to its new node and status."""
        known = self.task_jobs.get(task.uid)
        if known is not None:
            if known == task.job and self._move_task(task):
                return
            self.remove_task(task.uid)
        if task.job not in self.jobs:
            raise SnapshotError(f"task {task.key} names job {task.job!r}, not in the snapshot")
        job = self.writable_job(task.job)
        job.add_task(task)
        self.task_jobs[task.uid] = job.uid
        self._account(task)

    def remove_task(self, uid: str) -> TaskInfo | None:
        """Take a task out of its job and off its node; the removed task, or None."""
        job_uid = self.task_jobs.pop(uid, None)
        if job_uid is None or job_uid not in self.jobs:
            return None
        job = self.writable_job(job_uid)
        task = job.tasks.get(uid)
        if task is None:
            return None
        node = self.nodes.get(task.node_name or "")
        if node is not None and uid in node.tasks:
            node.remove_task(task)
        elif task.node_name in self.orphans:
            self.orphans[task.node_name].discard(uid)
        job.delete_task(task)
        return task

    def _move_task(self, task: TaskInfo) -> bool:
        """Replace the task of the same uid, job and request by ``task`` (the same pod at a
        new status or node: assumed, then seen bound) without taking the job's sums apart;
        on the same node, from one status that only uses resources to another, the node's
        numbers stay as they are too. False (nothing done) when the request differs."""
        job = self.writable_job(task.job)
        old = job.tasks.get(task.uid)
        if old is None or not (old.resreq is task.resreq or old.resreq == task.resreq):
            return False
        host = self.nodes.get(old.node_name or "")
        if host is not None and task.uid in host.tasks:
            if old.node_name == task.node_name and _uses_only(old.status, task.status):
                host.tasks[task.uid] = task
                host.update_task(task)  # the row's numbers are unchanged
                job.replace_task(task)
                return True
            host.remove_task(old)
        elif old.node_name in self.orphans:
            self.orphans[old.node_name].discard(task.uid)
        job.replace_task(task)
        self._account(task)
        return True

    # -- helpers ----------------------------------------------------------------------------

    def _account(self, task: TaskInfo) -> None:
        if not task.node_name or task.status == TaskStatus.PENDING:
            return
        host = self.nodes.get(task.node_name)
        if host is None:
            self.orphans.setdefault(task.node_name, set()).add(task.uid)
        elif task.uid not in host.tasks:
            host.add_task(task)


_and = int.__and__
_USES_ONLY = int(
    TaskStatus.ALLOCATED
    | TaskStatus.BINDING
    | TaskStatus.BOUND
    | TaskStatus.RUNNING
    | TaskStatus.UNKNOWN
)


def _uses_only(before: TaskStatus, after: TaskStatus) -> bool:
    """Are both statuses accounted on a node as used and nothing else (``NodeInfo``)?"""
    return bool(_and(before, _USES_ONLY)) and bool(_and(after, _USES_ONLY))
