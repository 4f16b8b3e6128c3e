"""The scheduler's data model: resources, tasks, jobs, queues, nodes and the node table.

Pure data and numpy: no I/O, no asyncio.
"""

from pumice.model.node import NodeAccountingError, NodeInfo, NodeTable
from pumice.model.objects import JobInfo, QueueInfo, TaskInfo
from pumice.model.podterms import (
    AffinityTerm,
    LabelSelector,
    PodLinks,
    SpreadConstraint,
    selector_matches,
)
from pumice.model.quantity import QuantityError, canonical_amount, parse_quantity
from pumice.model.requests import NON_ZERO_DEFAULTS, pod_requests, with_non_zero_defaults
from pumice.model.resource import (
    Resource,
    ResourceError,
    ResourceUnderflow,
    format_amount,
    resource_list,
    sum_within,
)
from pumice.model.snapshot import ClusterSnapshot
from pumice.model.tasks import TaskStatus
from pumice.model.terms import (
    ALL_ADDRESSES,
    NO_TERMS,
    HostPort,
    PodTerms,
    Preferred,
    Requirement,
    Selector,
    TaskShape,
    Term,
    Toleration,
    Tolerations,
    pod_terms,
)
from pumice.model.volumes import NO_STORAGE, StorageObjects

__all__ = [
    "ALL_ADDRESSES",
    "NON_ZERO_DEFAULTS",
    "NO_STORAGE",
    "NO_TERMS",
    "AffinityTerm",
    "ClusterSnapshot",
    "HostPort",
    "JobInfo",
    "LabelSelector",
    "NodeAccountingError",
    "NodeInfo",
    "NodeTable",
    "PodLinks",
    "PodTerms",
    "Preferred",
    "QuantityError",
    "QueueInfo",
    "Requirement",
    "Resource",
    "ResourceError",
    "ResourceUnderflow",
    "Selector",
    "SpreadConstraint",
    "StorageObjects",
    "TaskInfo",
    "TaskShape",
    "TaskStatus",
    "Term",
    "Toleration",
    "Tolerations",
    "canonical_amount",
    "format_amount",
    "parse_quantity",
    "pod_requests",
    "pod_terms",
    "resource_list",
    "selector_matches",
    "sum_within",
    "with_non_zero_defaults",
]
