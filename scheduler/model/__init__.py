"""The scheduler's data model: resources, tasks, jobs, queues, nodes and the node table.

Pure data and numpy: no I/O, no asyncio.
"""

from pumice.model.node import NodeAccountingError, NodeInfo, NodeTable
from pumice.model.objects import JobInfo, QueueInfo, TaskInfo
from pumice.model.quantity import QuantityError, canonical_amount, parse_quantity
from pumice.model.requests import NON_ZERO_DEFAULTS, pod_requests, with_non_zero_defaults
from pumice.model.resource import Resource, ResourceError, ResourceUnderflow, resource_list
from pumice.model.snapshot import ClusterSnapshot
from pumice.model.status import TaskStatus
from pumice.model.storage import NO_STORAGE, StorageObjects
from pumice.model.terms import NO_TERMS, PodTerms, TaskShape, pod_terms

__all__ = [
    "NON_ZERO_DEFAULTS",
    "NO_STORAGE",
    "NO_TERMS",
    "ClusterSnapshot",
    "JobInfo",
    "NodeAccountingError",
    "NodeInfo",
    "NodeTable",
    "PodTerms",
    "QuantityError",
    "QueueInfo",
    "Resource",
    "ResourceError",
    "ResourceUnderflow",
    "StorageObjects",
    "TaskInfo",
    "TaskShape",
    "TaskStatus",
    "canonical_amount",
    "parse_quantity",
    "pod_requests",
    "pod_terms",
    "resource_list",
    "with_non_zero_defaults",
]
