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
An action subclasses ``Action`` and works through the ``ActionContext`` it is given. The
contracts are written out in ``docs/plugins.md`` and ``docs/actions.md``; the built-in plugins
and actions import nothing but this module and their own private helpers (an import-linter
contract in ``pyproject.toml`` holds them to it). ``BoolVector``, ``FloatVector``, ``IntVector``
and ``FloatMatrix`` name the numpy arrays of the node table's columns and of hook answers.
"""

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
    PreBindWriter,
    PredicateResult,
    ReasonList,
    RowPredicate,
    RowScore,
    SessionView,
    Statement,
    StatementError,
    Vote,
    hookimpl,
)
from pumice.framework.argspec import (
    argument_error,
    as_bool,
    check_flag,
    check_known_keys,
    check_mapping,
    check_resource_names,
    check_weight,
    is_int,
    is_number,
)
from pumice.logs import config_warning, warn_once
from pumice.model import (
    ALL_ADDRESSES,
    NO_TERMS,
    NON_ZERO_DEFAULTS,
    AffinityTerm,
    ClusterSnapshot,
    HostPort,
    JobInfo,
    LabelSelector,
    NodeInfo,
    NodeTable,
    PodLinks,
    PodTerms,
    Preferred,
    QuantityError,
    QueueInfo,
    Requirement,
    Resource,
    Selector,
    SpreadConstraint,
    TaskInfo,
    TaskShape,
    TaskStatus,
    Term,
    Toleration,
    Tolerations,
    canonical_amount,
    format_amount,
    parse_quantity,
    pod_requests,
    pod_terms,
    resource_list,
    selector_matches,
    sum_within,
)
from pumice.model.node import FIT_TOLERANCE
from pumice.model.quantity import DurationError, parse_duration
from pumice.model.table import BoolVector, FloatMatrix, FloatVector, IntVector
from pumice.model.tasks import (
    ALLOCATED_STATUSES,
    COMPLETED_STATUSES,
    PREEMPTABLE_STATUSES,
    READY_STATUSES,
    SCHEDULED_STATUSES,
)
from pumice.plain import PumiceError

__version__ = "0.1.0"

__all__ = [
    "ALLOCATED_STATUSES",
    "ALL_ADDRESSES",
    "COMPLETED_STATUSES",
    "FIT_TOLERANCE",
    "NON_ZERO_DEFAULTS",
    "NO_TERMS",
    "PREEMPTABLE_STATUSES",
    "READY_STATUSES",
    "SCHEDULED_STATUSES",
    "Action",
    "ActionContext",
    "AffinityTerm",
    "ArgumentSpec",
    "Arguments",
    "BoolVector",
    "ClusterSnapshot",
    "ConfigError",
    "DurationError",
    "Feasibility",
    "FloatMatrix",
    "FloatVector",
    "HostPort",
    "IntVector",
    "JobInfo",
    "JobInvalid",
    "LabelSelector",
    "MetricSample",
    "NodeInfo",
    "NodeTable",
    "Plugin",
    "PodLinks",
    "PodTerms",
    "PreBindWriter",
    "PredicateResult",
    "Preferred",
    "PumiceError",
    "QuantityError",
    "QueueInfo",
    "ReasonList",
    "Requirement",
    "Resource",
    "RowPredicate",
    "RowScore",
    "Selector",
    "SessionView",
    "SpreadConstraint",
    "Statement",
    "StatementError",
    "TaskInfo",
    "TaskShape",
    "TaskStatus",
    "Term",
    "Toleration",
    "Tolerations",
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
    "format_amount",
    "hookimpl",
    "is_int",
    "is_number",
    "parse_duration",
    "parse_quantity",
    "pod_requests",
    "pod_terms",
    "resource_list",
    "selector_matches",
    "sum_within",
    "warn_once",
]
