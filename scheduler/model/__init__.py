"""The scheduler's data model: resources, tasks, jobs, queues, nodes and the node table.

Pure data and numpy: no I/O, no asyncio.
"""

from pumice.model.node import NodeAccountingError, NodeInfo, NodeTable
from pumice.model.objects import JobInfo, QueueInfo, TaskInfo
from pumice.model.quantity import QuantityError, canonical_amount, parse_quantity
from pumice.model.requests import pod_requests
from pumice.model.resource import Resource, ResourceError, ResourceUnderflow
from pumice.model.snapshot import ClusterSnapshot
from pumice.model.status import TaskStatus

__all__ = [
    "ClusterSnapshot",
    "JobInfo",
    "NodeAccountingError",
    "NodeInfo",
    "NodeTable",
    "QuantityError",
    "QueueInfo",
    "Resource",
    "ResourceError",
    "ResourceUnderflow",
    "TaskInfo",
    "TaskStatus",
    "canonical_amount",
    "parse_quantity",
    "pod_requests",
]
