"""The plugin base class, and what the plugin host tells a session of each plugin or action.

Subclass ``Plugin`` and mark hook methods with ``@hookimpl`` (the hooks are the plugin contract:
``pumice.framework.hookspecs``); actions subclass ``pumice.Action``
(``pumice.framework.action``). Both are built fresh for every session from their configured
arguments, available as ``self.arguments``.

Both may declare the arguments they take in ``declared_arguments`` (a tuple of
``ArgumentSpec``; ``()`` for none), so that a bad value is a configuration error naming the
file, line and key, and an argument nobody declared is warned about. Left at ``None``, every
argument is accepted without a word (see ``pumice.framework.argspec``).

A session needs of the plugin host only a ``Catalog``: the ``Provided`` record of a plugin or
action by name, so the session does not depend on how plugins are found and loaded.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import ClassVar, Literal, Protocol

from pumice.framework.argspec import ArgumentSpec
from pumice.framework.arguments import Arguments
from pumice.framework.config import PluginOption
from pumice.model.node import NodeTable
from pumice.model.objects import TaskInfo

RowPredicate = Callable[[int], str]
"""A row-local predicate for one task shape and one row: "" where the node passes, else the
reason it is rejected (see ``Plugin.predicate_row``)."""
RowScore = Callable[[int], float]
"""A row-local score for one task shape and one row, a Python float (``Plugin.node_score_row``)."""


class Plugin:
    """A scheduling plugin. ``name`` is set from the entry-point name when it is loaded."""

    name: ClassVar[str] = ""
    declared_arguments: ClassVar[tuple[ArgumentSpec, ...] | None] = None
    """The arguments this plugin takes; None: undeclared, anything accepted."""

    protects_victims: ClassVar[bool] = False
    """True for a plugin whose ``preemptable`` / ``reclaimable`` answers are protections
    (conformance): the session removes what it leaves out before any tier is asked, so a later
    tier can never offer a protected task as a victim."""

    row_local_reads_queue: ClassVar[bool] = True
    """Whether this plugin's row-local answers (``predicate`` / ``node_score`` taking
    ``rows``) may depend on the task's queue. True, the safe default: the session keeps the
    cached answers per (queue, task shape). A plugin whose answers depend on the node's row
    and the task's shape alone says False; when every row-local plugin of a session does,
    tasks of one shape share the cache across queues."""

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments
        self.option: PluginOption | None = None
        """This plugin's entry in the configuration (flags, arguments); set by the session."""

    # -- row functions: optional fast paths of the row-local hooks --------------------------
    # After a placement the session refreshes one row of each cached shape; a plugin whose
    # ``predicate`` / ``node_score`` is row-local may hand it a function of that row, made
    # once per shape, instead of being called with a one-row ``rows`` vector each time.

    def predicate_row(self, task: TaskInfo, nodes: NodeTable) -> RowPredicate | None:
        """A function of one row answering as ``predicate(task, nodes, rows=[row])`` would:
        "" where the node passes, else the reason (a rejection must have a non-empty reason;
        its resolvability is the one this plugin's ``predicate`` answers give it). None (the
        default): no such function, ``predicate`` is called.

        Made once per task shape (with the shape's first task, as ``predicate`` is called) and
        used while the table's ``epoch`` and ``layout`` stay the same, so it may keep views of
        the table's columns and anything worked out from the shape. Only asked of a plugin
        whose ``predicate`` is row-local and answers (not None) for this shape; it must then
        answer for every row. tests/framework/test_incremental.py holds the built-in ones to
        their ``predicate``."""
        return None

    def node_score_row(self, task: TaskInfo, nodes: NodeTable) -> RowScore | None:
        """A function of one row answering as ``node_score(task, nodes, rows=[row])`` would,
        as a Python float (bit for bit the same number). None (the default): no such
        function. Made and used as ``predicate_row`` is."""
        return None


@dataclass(frozen=True, slots=True)
class Provided:
    """A plugin or action the host knows, and where it came from."""

    name: str
    kind: Literal["plugin", "action"]
    cls: type
    package: str
    version: str = ""
    target: str = ""
    hooks: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """For plugins: each implemented hook -> the argument names its implementation takes."""


class Catalog(Protocol):
    """What a session asks of the plugin host (``pumice.framework.host.PluginHost``)."""

    def get(self, name: str) -> Provided | None:
        """The plugin or action registered as ``name``, or None."""
        ...
