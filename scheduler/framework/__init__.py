"""The scheduling framework: the plugin contract, the plugin host, sessions, statements and
configuration."""

from pumice.framework.argspec import ArgumentSpec
from pumice.framework.arguments import Arguments
from pumice.framework.base import Action, Plugin, RowPredicate, RowScore
from pumice.framework.committer import PreBindWriter
from pumice.framework.config import ConfigError, SchedulerConfig
from pumice.framework.configparse import load_config, parse_config
from pumice.framework.hookspecs import hookimpl
from pumice.framework.host import PluginConflictError, PluginError, PluginHost
from pumice.framework.released import predicate_once_gone
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
]
