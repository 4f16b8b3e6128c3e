# mypy: disable-error-code="empty-body"
"""The plugin contract: every extension point a plugin may implement.

A plugin is a class (subclass of ``pumice.Plugin``) whose methods are marked with
``@pumice.hookimpl`` and named after the hooks below. A fresh instance is built for every
session from the plugin's configured ``arguments``; state kept on ``self`` lives for one
session. An implementation may accept a subset of a hook's arguments (pluggy's rule), so new
arguments can be added to a hook without breaking existing plugins.

How answers combine is fixed by the framework and walks the configured tiers in order and, in
a tier, the plugins in listed order. Each hook's docstring gives its rule; ``COMBINATION`` below
names them, and ``HOOK_FLAGS`` names the ``enable…`` flag that switches a hook off for one plugin.
No hook is ever called once per (task, node) pair: node hooks take the whole ``NodeTable``.

Actions are plain subclasses of ``pumice.Action`` that override ``execute(context)``, given an
``ActionContext`` (``pumice.framework.action``); they are found through the same entry-point
group as plugins.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from pumice.framework.committer import PreBindWriter
    from pumice.framework.results import JobInvalid, MetricSample, PredicateResult, Vote
    from pumice.framework.view import SessionView
    from pumice.model.node import NodeTable
    from pumice.model.objects import JobInfo, QueueInfo, TaskInfo

PROJECT = "pumice"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


class PluginSpec:
    """Hooks of scheduling plugins."""

    @hookspec
    def session_open(self, session: SessionView) -> None:
        """Once per session, after every plugin of every tier is built, in tier order.

        Keep the session if you need it later; compute per-session state here.
        Combination: every plugin is called.
        """

    @hookspec
    def session_close(self, session: SessionView) -> None:
        """Once per session after the last action, in tier order. Combination: every plugin."""

    @hookspec
    def queue_order_key(self, queue: QueueInfo) -> Any:
        """A sort key for a queue: lower sorts first. Called once per queue when ordering.

        Combination: the first plugin in tier order whose keys differ for two queues decides;
        when no plugin distinguishes them, earlier creation time then name. Flag:
        ``enableQueueOrder``.
        """

    @hookspec
    def job_order_key(self, job: JobInfo) -> Any:
        """A sort key for a job: lower is scheduled first. Combination as queue_order_key.

        Flag: ``enableJobOrder``.
        """

    @hookspec
    def task_order_key(self, task: TaskInfo) -> Any:
        """A sort key for a task within its job. Combination as queue_order_key, except that
        the fallback puts Volcano's numeric pod-name index first (the last ``-`` part of a name
        of three or more parts: ``job-w-2`` before ``job-w-10``), then creation time, then name.

        Flag: ``enableTaskOrder``.
        """

    @hookspec
    def predicate(
        self, task: TaskInfo, nodes: NodeTable, rows: npt.NDArray[np.int64] | None
    ) -> PredicateResult | npt.NDArray[np.bool_] | None:
        """Which nodes may take ``task``: a boolean mask over the table's rows, or a
        ``PredicateResult`` carrying the reason for the nodes it rejects.

        Row-local plugins accept ``rows``: by doing so a plugin promises that its answer for a
        node depends only on that node's row, the task's shape (request and scheduling
        terms, see ``pumice.framework.evaluation``) and the task's queue (shapes are kept
        apart per queue) — or, additively, on what its ``shape_key`` names of the task and on
        other rows whose changes it reports through ``stale_rows``. The session then
        evaluates each shape once and, after placements, calls again with ``rows`` = the
        changed rows, expecting answers for exactly those rows in that order (None: every
        row). A plugin without ``rows`` is called with every node, once per task.

        Combination: AND over every plugin of every tier; for a rejected node the reason of
        the first plugin (tier order) that rejected it is reported. None means "no opinion".
        Flag: ``enablePredicate``.

        Preemption: ``PredicateResult.resolvable`` names the reasons that evicting pods may
        cure; preempt and reclaim try the nodes every plugin passes or rejects only for such
        reasons (a bare mask's rejections are unresolvable). Before they place a preemptor they
        call this hook again for that one node as it will be once its Releasing tasks (the
        victims) are gone: ``node.tasks`` and the node's row then leave them out, and the
        victims evicted in this session have been through ``on_deallocate``. A plugin must
        therefore read the pods on a node from ``node.tasks`` (or from counts it keeps by
        ``on_allocate`` / ``on_deallocate``, leaving out the Releasing pods ``node.tasks`` no
        longer holds) at the time of the call, not from a copy taken earlier.
        """

    @hookspec
    def shape_key(self, task: TaskInfo) -> Any:
        """What else, besides its shape (and queue), this plugin's row-local answers for
        ``task`` depend on; None: nothing. Tasks whose keys differ never share a cached
        predicate mask (e.g. the pod's namespace and labels, which other pods' anti-affinity
        selects); their fit masks and row-local ``node_score`` answers stay shared per shape,
        so those must not depend on the key. Called once per task per session; the key must
        be hashable.

        Combination: every plugin's answer is part of the cache key. No flag.
        """

    @hookspec
    def stale_rows(
        self, task: TaskInfo, nodes: NodeTable, since: int
    ) -> npt.NDArray[np.int64] | bool | None:
        """For a row-local ``predicate`` whose answer for a row may change when *another* row
        changes (pod-to-pod constraints: a pod placed in a zone changes the zone's answer):
        the rows whose answers for ``task``'s shape changed since the table's ``version`` was
        ``since``, beyond the rows whose own accounting changed (``NodeTable.changed_rows``,
        always refreshed). Return the rows (any order, may repeat), True for every row (the
        shape is evaluated in full), or None / False for none. Asked whenever a cached mask is
        brought up to date, so answer quickly.

        Combination: the union over every plugin. Flag: ``enablePredicate``.
        """

    @hookspec
    def node_score(
        self, task: TaskInfo, nodes: NodeTable, rows: npt.NDArray[np.int64] | None
    ) -> npt.NDArray[np.float64] | float | None:
        """A score for every node (a float vector over the table's rows). Once per task, or,
        for a row-local plugin (one that accepts ``rows``, as for ``predicate``), once per
        shape and then for the changed rows only; asked for one row, a plain number is
        accepted in place of a vector of one (most refreshes are of one row).

        Combination: summed over every plugin of every tier. Flag: ``enableNodeOrder``.
        """

    @hookspec
    def normalized_score(
        self, task: TaskInfo, nodes: NodeTable, mask: npt.NDArray[np.bool_]
    ) -> npt.NDArray[np.float64] | None:
        """Scores that are normalised over the candidate nodes, as kube-scheduler's
        NormalizeScore does (e.g. node affinity: ``100 * s // max`` over the nodes the task
        may go to). ``mask`` marks those candidates (every predicate passed and the request
        fits); values for other nodes are ignored. Called once per task, never cached.
        Combination: summed with every ``node_score``. Flag: ``enableNodeOrder``.
        """

    @hookspec
    def best_node(
        self, task: TaskInfo, scores: npt.NDArray[np.float64], nodes: NodeTable
    ) -> str | None:
        """Name the node for ``task``, or None to let the next plugin choose. ``scores`` holds
        the summed score of each feasible node and -inf for the others.

        Combination: the first plugin in tier order naming a feasible node wins; otherwise
        the highest score, ties broken by the configured ``tieBreak``. Flag: ``enableBestNode``.
        """

    @hookspec
    def overused(self, queue: QueueInfo) -> bool:
        """True when the queue already holds more than it deserves.

        Combination: any True makes it overused. Flag: ``enabledOverused``.
        """

    @hookspec
    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        """May ``task`` be given resources on behalf of ``queue`` now?

        Combination: all must agree (AND); nobody registered means True. Flag:
        ``enabledAllocatable``.
        """

    @hookspec
    def overused_reason(self, queue: QueueInfo) -> str | None:
        """Why ``overused`` says True for ``queue``: a short message naming the queue, the
        limit and the figures, or None when this plugin does not find it overused. Asked only
        to explain an answer already given, never to decide.

        Combination: the first plugin in tier order with a message. Flag: ``enabledOverused``.
        """

    @hookspec
    def allocatable_reason(self, queue: QueueInfo, task: TaskInfo) -> str | None:
        """Why ``allocatable`` refuses ``task`` for ``queue``: a short message naming the
        queue, the limit and the figures (``queue q: cpu allocated 14 + request 2 exceeds
        deserved 15``), or None when this plugin would allow it. Asked only to explain a
        refusal, never to decide.

        Combination: the first plugin in tier order with a message. Flag:
        ``enabledAllocatable``.
        """

    @hookspec
    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> bool:
        """May ``task`` of ``queue`` preempt others?

        Combination: AND; nobody registered means True. Flag: ``enablePreemptive``.
        """

    @hookspec
    def job_ready(self, job: JobInfo) -> bool:
        """Has the job got enough to run (its gang is complete)?

        Combination: AND; nobody registered means True. Flag: ``enableJobReady``.
        """

    @hookspec
    def job_pipelined(self, job: JobInfo) -> Vote:
        """Is the job pipelined (holds or is promised enough)? A vote: PERMIT, ABSTAIN, REJECT.

        Combination: any REJECT gives False at once; a PERMIT gives True at the end of its
        tier (later tiers are not asked); all abstaining gives True. Flag:
        ``enableJobPipelined``.
        """

    @hookspec
    def job_enqueueable(self, job: JobInfo) -> Vote:
        """May the job be admitted (its PodGroup moved to Inqueue)? A vote, combined as
        job_pipelined. Flag: ``enableJobEnqueued``.
        """

    @hookspec
    def job_starving(self, job: JobInfo) -> bool:
        """Does the job want more resources (a candidate to preempt or reclaim for)?

        Combination: decided by the first tier that has any enabled implementation: True only
        if every implementation in that tier says True; nobody registered means False. Flag:
        ``enableJobStarving``.
        """

    @hookspec
    def job_valid(self, job: JobInfo) -> JobInvalid | None:
        """None if the job may be scheduled, else a ``JobInvalid`` saying why.

        Combination: the first failure in tier order is the answer. No flag.
        """

    @hookspec
    def preemptable(
        self, preemptor: TaskInfo, candidates: Sequence[TaskInfo]
    ) -> Sequence[TaskInfo] | None:
        """Which of ``candidates`` may be evicted for ``preemptor`` (same queue). None abstains.

        Combination: first the protections: every plugin whose class sets
        ``protects_victims`` (conformance) removes from the candidates what its answer leaves
        out, before any tier is asked, so a protected task is never a victim whatever a later
        tier answers (nothing left: no victims). Then, inside a tier the answers are
        intersected; an empty answer (or an empty intersection) means the tier decides nothing
        and the next tier is asked; the first tier with a non-empty answer wins. Flag:
        ``enablePreemptable``.
        """

    @hookspec
    def reclaimable(
        self, reclaimer: TaskInfo, candidates: Sequence[TaskInfo]
    ) -> Sequence[TaskInfo] | None:
        """Which of ``candidates`` (other queues) may be evicted for ``reclaimer``.

        Combination as preemptable (protections first). Flag: ``enableReclaimable``.
        """

    @hookspec
    def on_allocate(self, task: TaskInfo) -> None:
        """Synchronously after a statement allocates or pipelines ``task`` (and when an
        eviction is undone). Raising vetoes an allocate or pipeline: it is rolled back.
        Combination: every plugin."""

    @hookspec
    def pre_bind(self, task: TaskInfo, node: str, writer: PreBindWriter) -> None:
        """After a statement commits the allocation of ``task`` to ``node``, before the pod is
        handed to the committer to bind: ask ``writer`` for what must exist before the pod may
        bind (volume binding: a volume's ``claimRef``, a claim's selected node). Every
        allocation of the statement goes through this before the first of them is bound, so
        the committer knows all of a gang's writes before it binds any of its pods.

        The committer carries the writes out: the daemon assumes them in its cache at once,
        makes them, and binds the pod only once they took effect (every claim bound); if they
        fail or time out it forgets the pod and offers it again after a backoff (what was
        written stays written, as kube-scheduler leaves it). Dry-run logs them; ``pumice
        simulate`` records them. A committer that binds nothing gives a writer that ignores
        them.

        Combination: every plugin, in tier order. Raising fails the bind: the allocation is
        undone as a failed bind is, and nothing asked for so far is written. No flag: a plugin
        whose predicate assumed these writes must always make them.
        """

    @hookspec
    def job_enqueued(self, job: JobInfo) -> None:
        """Synchronously after a statement admits ``job`` (its phase became Inqueue).
        Combination: every plugin."""

    @hookspec
    def on_deallocate(self, task: TaskInfo) -> None:
        """Synchronously after a statement evicts ``task`` or undoes its allocation.
        Combination: every plugin."""

    @hookspec
    def podgroup_conditions(self, job: JobInfo) -> list[dict[str, Any]]:
        """Conditions (``{type, status, reason, message}``) this plugin adds to the status of
        ``job``'s PodGroup. Called at session close, after ``session_close``, for every job
        that has a PodGroup, with the job as the session left it.

        Combination: the lists of every plugin are appended, in tier order, after the
        framework's own condition (``Unschedulable`` or ``Scheduled``). No flag.
        """

    @hookspec
    def queue_status(self, queue: QueueInfo) -> dict[str, Any]:
        """Fields this plugin sets in the ``status`` of ``queue`` (JSON values). Called at
        session close, after ``session_close``, for every queue of the session.

        Combination: the dicts of every plugin are merged into the status the framework
        computes (``allocated`` and the PodGroup counts per phase). A key set by two plugins,
        or one the framework sets, is a ``PluginContractError``. No flag.
        """

    @hookspec
    def queue_events(self, queue: QueueInfo) -> list[tuple[str, str]]:
        """Warning events (``(reason, message)``) this plugin wants on ``queue``'s Queue object,
        each once: answer only what is new this session. Called at session close, after
        ``session_close``, for every queue of the session.

        Combination: appended in tier order; the daemon writes them (a queue without a Queue
        object gets none). No flag.
        """

    @hookspec
    def metric_samples(self) -> Iterable[MetricSample]:
        """Samples of this plugin's metrics as the session leaves them. Called once at
        session close, after ``session_close``.

        Combination: every plugin's samples are kept apart: the daemon exposes each as
        ``pumice_<plugin>_<sample name>`` (the plugin's name with ``-`` as ``_``) until the
        next session replaces them. No flag.
        """


HOOK_FLAGS: dict[str, str | None] = {
    "session_open": None,
    "session_close": None,
    "queue_order_key": "queue_order",
    "job_order_key": "job_order",
    "task_order_key": "task_order",
    "predicate": "predicate",
    "shape_key": None,
    "stale_rows": "predicate",
    "node_score": "node_order",
    "normalized_score": "node_order",
    "best_node": "best_node",
    "overused": "overused",
    "allocatable": "allocatable",
    "overused_reason": "overused",
    "allocatable_reason": "allocatable",
    "preemptive": "preemptive",
    "job_ready": "job_ready",
    "job_pipelined": "job_pipelined",
    "job_enqueueable": "job_enqueueable",
    "job_starving": "job_starving",
    "job_valid": None,
    "preemptable": "preemptable",
    "reclaimable": "reclaimable",
    "on_allocate": None,
    "job_enqueued": None,
    "pre_bind": None,
    "on_deallocate": None,
    "podgroup_conditions": None,
    "queue_status": None,
    "queue_events": None,
    "metric_samples": None,
}
"""Hook name -> the canonical flag (see ``PluginOption.flags``) that gates it, or None."""

COMBINATION: dict[str, str] = {
    "session_open": "every plugin",
    "session_close": "every plugin",
    "queue_order_key": "first plugin that distinguishes decides",
    "job_order_key": "first plugin that distinguishes decides",
    "task_order_key": "first plugin that distinguishes decides",
    "predicate": "all must pass; first failure gives the reason",
    "shape_key": "every answer is part of the cache key",
    "stale_rows": "union",
    "node_score": "summed",
    "normalized_score": "summed",
    "best_node": "first plugin naming a node wins",
    "overused": "any true",
    "allocatable": "all must agree",
    "overused_reason": "first plugin with a message",
    "allocatable_reason": "first plugin with a message",
    "preemptive": "all must agree",
    "job_ready": "all must agree",
    "job_pipelined": "vote",
    "job_enqueueable": "vote",
    "job_starving": "first tier with an implementation decides",
    "job_valid": "first failure wins",
    "preemptable": "protections first; intersected in a tier; first non-empty tier wins",
    "reclaimable": "protections first; intersected in a tier; first non-empty tier wins",
    "on_allocate": "every plugin",
    "job_enqueued": "every plugin",
    "pre_bind": "every plugin, in order, before the pod is bound; raising fails the bind",
    "on_deallocate": "every plugin",
    "podgroup_conditions": "appended in tier order",
    "queue_status": "merged; a key set twice is a contract error",
    "queue_events": "appended in tier order",
    "metric_samples": "every plugin, exposed under its own name",
}
