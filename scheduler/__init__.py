"""pumice: a Volcano-style batch scheduler for Kubernetes.

This module is the public API for plugin and action authors: import what you need from
``pumice`` and nothing deeper. A plugin::

    import numpy as np
    from pumice import Plugin, hookimpl

    class PreferLabelled(Plugin):
        @hookimpl
        def node_score(self, task, nodes):
            return np.array([10.0 if "fast" in n.labels else 0.0 for n in nodes.nodes])

declared in the package's ``pyproject.toml`` under ``[project.entry-points.pumice]``.
"""

from pumice.errors import PumiceError
from pumice.framework import (
    Action,
    ActionContext,
    Arguments,
    ArgumentSpec,
    ConfigError,
    Feasibility,
    JobInvalid,
    MetricSample,
    Plugin,
    PredicateResult,
    SessionView,
    Statement,
    StatementError,
    Vote,
    hookimpl,
)
from pumice.framework.argspec import (
    argument_error,
    check_flag,
    check_known_keys,
    check_mapping,
    check_resource_names,
    check_weight,
    is_int,
    is_number,
)
from pumice.framework.arguments import as_bool
from pumice.model import (
    NO_TERMS,
    NON_ZERO_DEFAULTS,
    ClusterSnapshot,
    JobInfo,
    NodeInfo,
    NodeTable,
    PodTerms,
    QuantityError,
    QueueInfo,
    Resource,
    TaskInfo,
    TaskShape,
    TaskStatus,
    canonical_amount,
    parse_quantity,
    pod_requests,
    pod_terms,
    resource_list,
)
from pumice.model.node import FIT_TOLERANCE
from pumice.model.status import (
    ALLOCATED_STATUSES,
    COMPLETED_STATUSES,
    PREEMPTABLE_STATUSES,
    READY_STATUSES,
    SCHEDULED_STATUSES,
)
from pumice.warnonce import config_warning, warn_once

__version__ = "0.1.0"

__all__ = [
    "ALLOCATED_STATUSES",
    "COMPLETED_STATUSES",
    "FIT_TOLERANCE",
    "NON_ZERO_DEFAULTS",
    "NO_TERMS",
    "PREEMPTABLE_STATUSES",
    "READY_STATUSES",
    "SCHEDULED_STATUSES",
    "Action",
    "ActionContext",
    "ArgumentSpec",
    "Arguments",
    "ClusterSnapshot",
    "ConfigError",
    "Feasibility",
    "JobInfo",
    "JobInvalid",
    "MetricSample",
    "NodeInfo",
    "NodeTable",
    "Plugin",
    "PodTerms",
    "PredicateResult",
    "PumiceError",
    "QuantityError",
    "QueueInfo",
    "Resource",
    "SessionView",
    "Statement",
    "StatementError",
    "TaskInfo",
    "TaskShape",
    "TaskStatus",
    "Vote",
    "__version__",
    "argument_error",
    "as_bool",
    "canonical_amount",
    "check_flag",
    "check_known_keys",
    "check_mapping",
    "check_resource_names",
    "check_weight",
    "config_warning",
    "hookimpl",
    "is_int",
    "is_number",
    "parse_quantity",
    "pod_requests",
    "pod_terms",
    "resource_list",
    "warn_once",
]
