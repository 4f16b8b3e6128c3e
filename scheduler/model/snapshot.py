"""A consistent picture of the cluster for one scheduling session.

``ClusterSnapshot.build`` puts every node into one ``NodeTable`` and accounts each task that
already has a node (running, bound, releasing …) on that node, so callers only describe the
cluster; the numbers follow.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from pumice.model.node import NodeInfo, NodeTable
from pumice.model.objects import JobInfo, QueueInfo
from pumice.model.resource import Resource
from pumice.model.status import TaskStatus


@dataclass(slots=True, eq=False)
class ClusterSnapshot:
    """Nodes, jobs and queues that a session schedules over."""

    nodes: dict[str, NodeInfo] = field(default_factory=dict)
    jobs: dict[str, JobInfo] = field(default_factory=dict)
    queues: dict[str, QueueInfo] = field(default_factory=dict)
    table: NodeTable = field(default_factory=NodeTable)

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
        """
        snap = cls()
        for node in nodes:
            snap.table.add(node)
            snap.nodes[node.name] = node
        for queue in queues:
            snap.queues[queue.name] = queue
        for job in jobs:
            snap.jobs[job.uid] = job
            for task in job.tasks.values():
                host = snap.nodes.get(task.node_name or "")
                if host is None or task.status == TaskStatus.PENDING:
                    continue
                if task.uid not in host.tasks:
                    host.add_task(task)
        return snap

    @property
    def total_allocatable(self) -> Resource:
        """Sum of allocatable over every node."""
        return self.table.resource(self.table.allocatable.sum(axis=0))
