"""The scheduling framework: the plugin and action contracts, the plugin host, sessions,
statements and configuration.

``Session`` is the framework's own: the daemon and the commands open one and hand it to
``run_actions``; plugins see a ``SessionView`` and actions an ``ActionContext`` of it."""

from pumice.framework.action import Action, ActionContext, predicate_once_gone, run_actions
from pumice.framework.argspec import ArgumentSpec
from pumice.framework.arguments import Arguments
from pumice.framework.base import Plugin, RowPredicate, RowScore
from pumice.framework.committer import PreBindWriter
from pumice.framework.config import ConfigError, SchedulerConfig
from pumice.framework.configfile import load_config, parse_config
from pumice.framework.hookspecs import hookimpl
from pumice.framework.host import PluginConflictError, PluginError, PluginHost
from pumice.framework.results import (
    Feasibility,
    JobInvalid,
    MetricSample,
    PredicateResult,
    ReasonList,
    Vote,
)
from pumice.framework.session import RecordingCommitter, Session, SessionError
from pumice.framework.statement import Statement, StatementError
from pumice.framework.view import SessionView

__all__ = [
    "Action",
    "ActionContext",
    "ArgumentSpec",
    "Arguments",
    "ConfigError",
    "Feasibility",
    "JobInvalid",
    "MetricSample",
    "Plugin",
    "PluginConflictError",
    "PluginError",
    "PluginHost",
    "PreBindWriter",
    "PredicateResult",
    "ReasonList",
    "RecordingCommitter",
    "RowPredicate",
    "RowScore",
    "SchedulerConfig",
    "Session",
    "SessionError",
    "SessionView",
    "Statement",
    "StatementError",
    "Vote",
    "hookimpl",
    "load_config",
    "parse_config",
    "predicate_once_gone",
    "run_actions",
]
