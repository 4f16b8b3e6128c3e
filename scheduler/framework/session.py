"""A scheduling session: one pass of the configured actions over a cluster snapshot.

The session is internal to the framework: plugins see a ``SessionView``, actions an
``ActionContext`` (``pumice.framework.action``, which also runs them: ``run_actions``).
Opening a session builds a fresh instance of every configured plugin, tier by tier, from its
arguments, collects the implemented hooks in tier order (leaving out those whose ``enable…``
flag is off), and calls ``session_open`` on each plugin. The session then answers the
actions' questions by applying the combination rule of each hook (see
``pumice.framework.hookspecs``); hook implementations are called directly, in tier order,
without going through pluggy's dispatch on the hot path.

Errors (defined in ``pumice.framework.hookcalls``, re-exported here)::

    SessionError              a configured plugin or action is unknown or fails to start
    PluginContractError       a plugin answered with the wrong shape or type

Where decisions go is a ``Committer`` (``pumice.framework.committer``, re-exported here).
"""

from __future__ import annotations

import inspect
import logging
import random
import uuid
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from pumice.framework.base import Catalog, Plugin
from pumice.framework.candidates import Candidates
from pumice.framework.committer import IGNORED_WRITES, Committer, RecordingCommitter
from pumice.framework.config import PluginOption, SchedulerConfig
from pumice.framework.contributions import Contributions, gather
from pumice.framework.evaluation import ShapeCache
from pumice.framework.hookcalls import (
    Hook,
    HookTime,
    PluginContractError,
    SessionError,
    adapt,
    adapt_by_name,
    first_message,
    is_row_local,
    read_only,
    row_maker,
    tier_victims,
    tier_vote,
    timed,
    vector_answer,
)
from pumice.framework.hookspecs import HOOK_FLAGS, PluginSpec
from pumice.framework.placement import (
    Scoring,
    candidate_scores,
    choose_node,
    node_scores,
    pick_best,
    score_parts,
)
from pumice.framework.results import Feasibility, JobInvalid
from pumice.framework.statement import Statement
from pumice.framework.view import SessionView
from pumice.logs import warn_once
from pumice.model.objects import JobInfo, QueueInfo, TaskInfo, pod_name_index
from pumice.model.snapshot import ClusterSnapshot

log = logging.getLogger("pumice.session")

__all__ = [
    "Committer",
    "PluginContractError",
    "RecordingCommitter",
    "Session",
    "SessionError",
    "pod_name_index",
]

SPEC_ARGS: dict[str, tuple[str, ...]] = {
    name: tuple(inspect.signature(getattr(PluginSpec, name)).parameters)[1:] for name in HOOK_FLAGS
}
"""Each hook's arguments, in order."""


class Session:
    """Plugins instantiated for one cycle, the snapshot they look at, and the tier rules."""

    def __init__(
        self,
        snapshot: ClusterSnapshot,
        config: SchedulerConfig,
        host: Catalog,
        *,
        committer: Committer,
        rng: random.Random | None = None,
        time_hooks: bool = False,
    ) -> None:
        self.uid = uuid.uuid4().hex
        self.snapshot = snapshot
        self.jobs = snapshot.jobs
        self.nodes = snapshot.nodes
        self.queues = snapshot.queues
        self.table = snapshot.table
        self.config = config
        self.host = host
        self.committer: Committer = committer
        self._rng = rng if rng is not None else random.Random()
        self.plugins: list[tuple[int, PluginOption, Plugin]] = []
        # hook -> per tier -> [(plugin name, callable taking the hook's full argument list)]
        self._tiers: dict[str, list[list[tuple[str, Hook]]]] = {h: [] for h in HOOK_FLAGS}
        self._flat: dict[str, list[tuple[str, Hook]]] = {h: [] for h in HOOK_FLAGS}
        self._row_local: set[tuple[str, str]] = set()
        """(hook, plugin) pairs whose implementation accepts ``rows`` (see evaluation)."""
        self.is_open = False
        self.view = SessionView(self)
        """What plugins are given of this session."""
        self._shapes: ShapeCache | None = None
        self._scoring: Scoring | None = None
        self.task_reasons: dict[str, str] = {}
        """Why a task was left pending this session (task uid -> message), for conditions."""
        self.job_reasons: dict[str, str] = {}
        """Why a job was not (fully) scheduled this session (job uid -> message)."""
        self.action = ""
        """The name of the action running now ("" outside ``run_actions``)."""
        self.action_seconds: dict[str, float] = {}
        """Wall-clock seconds each action took in ``run_actions`` (the daemon's metrics)."""
        self.explain = False
        """When True, every placement records its per-plugin scores in ``placement_scores``."""
        self.placement_scores: dict[str, dict[str, dict[str, float]]] = {}
        """Task uid -> feasible node -> {plugin: score, ..., "total": sum}, taken just before
        the task's last allocation or pipelining this session (only when ``explain``)."""
        # hook -> [(plugin name, callable)] of the plugins whose victim answers protect
        self._guards: dict[str, list[tuple[str, Hook]]] = {"preemptable": [], "reclaimable": []}
        self.time_hooks = time_hooks
        self.contributions = Contributions()
        """The plugins' PodGroup conditions, Queue status fields and metric samples, gathered
        by ``close`` (empty until then)."""
        self.hook_time: dict[tuple[str, str], HookTime] = {}
        """(plugin, hook) -> the time its calls took so far, when ``time_hooks`` (the daemon's
        metrics); empty otherwise, and then hooks are called without a clock around them."""

    # -- life cycle -------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        snapshot: ClusterSnapshot,
        config: SchedulerConfig,
        host: Catalog,
        *,
        committer: Committer,
        rng: random.Random | None = None,
        time_hooks: bool = False,
    ) -> Session:
        """Build every configured plugin, collect its hooks, and call ``session_open``.

        ``committer`` receives the committed binds and evictions: the daemon's binder, a
        recorder for ``pumice simulate`` and the tests, a logger for dry-run. There is no
        default, so no caller forgets where decisions go. ``time_hooks`` clocks every hook
        call into ``hook_time``."""
        session = cls(snapshot, config, host, committer=committer, rng=rng, time_hooks=time_hooks)
        session._build_plugins()
        for _, hook in session._flat["session_open"]:
            hook(session.view)
        session.is_open = True
        return session

    def close(self) -> None:
        """Call ``session_close`` on every plugin, in tier order, then gather what plugins
        contribute to status and metrics into ``contributions``. Safe to call twice."""
        if not self.is_open:
            return
        self.is_open = False
        for name, hook in self._flat["session_close"]:
            try:
                hook(self.view)
            except Exception:
                log.exception("plugin %s failed in session_close", name)
        self.contributions = gather(self._flat, self.jobs, self.queues)
        for error in self.contributions.errors:
            # a daemon closes a session every period: say each broken contract once
            warn_once(log, f"contract:{error}", "%s; that answer is left out", error)

    def dispose(self) -> None:
        """Close, then break the session's reference cycles (plugins and their view, hooks,
        committer, the snapshot's node table) so that reference counting frees it, not the
        garbage collector. Nothing of the session may be used afterwards."""
        self.close()
        self.snapshot.dispose()
        self.__dict__.clear()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _build_plugins(self) -> None:
        by_queue = False  # does a row-local plugin's answer depend on the task's queue?
        makers: dict[str, dict[str, Hook | None]] = {"predicate": {}, "node_score": {}}
        for tier_index, tier in enumerate(self.config.tiers):
            for hooks in self._tiers.values():
                hooks.append([])
            for option in tier.plugins:
                provided = self.host.get(option.name)
                if provided is None or provided.kind != "plugin":
                    raise SessionError(f"unknown plugin {option.name!r} in tier {tier_index + 1}")
                try:
                    instance = provided.cls(option.arguments)
                except Exception as exc:
                    raise SessionError(f"plugin {option.name!r} failed to start: {exc}") from exc
                instance.option = option
                self.plugins.append((tier_index, option, instance))
                for hook, argnames in provided.hooks.items():
                    flag = HOOK_FLAGS[hook]
                    if flag is not None and not option.enabled(flag):
                        continue
                    method = getattr(instance, hook)
                    if is_row_local(hook, method):
                        call = adapt_by_name(method, SPEC_ARGS[hook])
                        self._row_local.add((hook, option.name))
                        by_queue = by_queue or getattr(provided.cls, "row_local_reads_queue", True)
                    else:
                        call = adapt(method, argnames, SPEC_ARGS[hook])
                    clock = None
                    if self.time_hooks:
                        clock = self.hook_time.setdefault((option.name, hook), HookTime())
                        call = timed(call, clock)
                    if hook in makers and (hook, option.name) in self._row_local:
                        makers[hook][option.name] = row_maker(instance, hook, clock)
                    entry = (option.name, call)
                    self._tiers[hook][-1].append(entry)
                    self._flat[hook].append(entry)
                    if hook in self._guards and getattr(provided.cls, "protects_victims", False):
                        self._guards[hook].append(entry)
        self._shapes = ShapeCache(
            self.table,
            [(n, h, ("predicate", n) in self._row_local) for n, h in self._flat["predicate"]],
            [(n, h, ("node_score", n) in self._row_local) for n, h in self._flat["node_score"]],
            vector_answer,
            self._queue_of_task if by_queue else None,
            shape_keys=[hook for _, hook in self._flat["shape_key"]],
            stale=[hook for _, hook in self._flat["stale_rows"]],
            row_makers=(makers["predicate"], makers["node_score"]),
        )
        local_scorers = frozenset(n for h, n in self._row_local if h == "node_score")
        tie_break = self.config.scheduler.tie_break
        self._scoring = Scoring(
            self.table, self._shapes, self._flat, local_scorers, tie_break, self._rng
        )

    def _queue_of_task(self, task: TaskInfo) -> str:
        """The queue of the task's job ('' if unknown): shapes are cached per queue."""
        job = self.jobs.get(task.job)
        return job.queue if job is not None else ""

    def implemented(self, hook: str) -> bool:
        """Does any enabled plugin implement ``hook`` in this session?"""
        return bool(self._flat[hook])

    def statement(self) -> Statement:
        """A new transaction over this session."""
        return Statement(self)

    # -- ordering ---------------------------------------------------------------------------

    def queue_order_key(self, queue: QueueInfo) -> tuple[Any, ...]:
        keys = [hook(queue) for _, hook in self._flat["queue_order_key"]]
        return (*keys, queue.creation_timestamp, queue.name)

    def job_order_key(self, job: JobInfo) -> tuple[Any, ...]:
        keys = [hook(job) for _, hook in self._flat["job_order_key"]]
        return (*keys, job.creation_timestamp, job.uid)

    def task_order_key(self, task: TaskInfo) -> tuple[Any, ...]:
        """Plugins' keys, then Volcano's fallback: the pod-name index, creation time, name."""
        keys = [hook(task) for _, hook in self._flat["task_order_key"]]
        return (*keys, pod_name_index(task.name), task.creation_timestamp, task.name)

    def sort_queues(self, queues: Iterable[QueueInfo]) -> list[QueueInfo]:
        return sorted(queues, key=self.queue_order_key)

    def sort_jobs(self, jobs: Iterable[JobInfo]) -> list[JobInfo]:
        return sorted(jobs, key=self.job_order_key)

    def sort_tasks(self, tasks: Iterable[TaskInfo]) -> list[TaskInfo]:
        return sorted(tasks, key=self.task_order_key)

    # -- nodes ------------------------------------------------------------------------------

    @property
    def shapes(self) -> ShapeCache:
        if self._shapes is None:
            raise SessionError("the session is not open")
        return self._shapes

    @property
    def scoring(self) -> Scoring:
        """What choosing a node reads (``pumice.framework.placement``)."""
        if self._scoring is None:
            raise SessionError("the session is not open")
        return self._scoring

    def predicate(self, task: TaskInfo) -> Feasibility:
        """Which nodes may take ``task`` (AND of every predicate; first failure's reason).

        Evaluated once per task shape and kept current row by row where every predicate
        plugin is row-local (``pumice.framework.evaluation``). The mask is read-only."""
        parts, mask = self.shapes.predicate(task)
        return Feasibility(read_only(mask), parts=parts)

    def fit(self, task: TaskInfo) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
        """Nodes whose idle, and whose future idle, resources hold the task's request in
        every dimension (``FIT_TOLERANCE`` of slack); read-only masks, kept per shape."""
        now, future = self.shapes.fit(task)
        return read_only(now), read_only(future)

    def node_scores(
        self, task: TaskInfo, mask: npt.NDArray[np.bool_] | None = None
    ) -> npt.NDArray[np.float64]:
        """The summed score of every node for ``task`` (read-only): row-local ``node_score``
        from the per-shape cache, the others called; ``normalized_score`` over ``mask``, the
        candidate nodes (every node when None)."""
        return node_scores(self.scoring, task, mask)

    def node_score_parts(
        self, task: TaskInfo, mask: npt.NDArray[np.bool_] | None = None
    ) -> dict[str, npt.NDArray[np.float64]]:
        """Each scoring plugin's vector for ``task`` (weight included; ``node_score`` and
        ``normalized_score`` over ``mask`` together), in tier order, summing to ``node_scores``;
        a plugin that answers None is left out."""
        return score_parts(self.scoring, task, mask)

    def record_scores(self, task: TaskInfo) -> None:
        """Keep, in ``placement_scores``, each plugin's score of every node the task may go to
        now (see ``pumice.framework.placement``). Statements call this just before placing a
        task when ``explain`` is on."""
        self.placement_scores[task.uid] = candidate_scores(self.scoring, task)

    def nominate(self, task: TaskInfo, node: str) -> None:
        """Tell the committer, if it takes nominations, that ``task`` waits for ``node``."""
        nominate = getattr(self.committer, "nominate", None)
        if nominate is not None:
            nominate(task, node)

    def pre_bind(self, task: TaskInfo, node: str) -> None:
        """Every plugin's ``pre_bind`` for ``task`` about to be bound to ``node``, with the
        committer's writer (one that ignores the writes when the committer has none)."""
        hooks = self._flat["pre_bind"]
        if not hooks:
            return
        opener = getattr(self.committer, "pre_bind", None)
        writer = opener(task, node) if opener is not None else IGNORED_WRITES
        for _, hook in hooks:
            hook(task, node, writer)

    def best_node(
        self,
        task: TaskInfo,
        scores: npt.NDArray[np.float64],
        mask: npt.NDArray[np.bool_] | None = None,
    ) -> str | None:
        """The node for ``task``: the first plugin naming a feasible node, else the top score
        (``pumice.framework.placement.pick_best``); None when no node is feasible."""
        if mask is None:
            mask = np.ones(len(self.table), dtype=np.bool_)
        return pick_best(self.scoring, task, np.where(mask, scores, -np.inf), mask)

    def candidates(self, task: TaskInfo) -> Candidates:
        """Where ``task`` may go now and later, and the summed row-local scores there
        (``pumice.framework.evaluation.Candidates``; the cache's own: read, never change)."""
        shapes = self._shapes  # ``shapes`` without its property's frame: asked per task
        return (shapes if shapes is not None else self.shapes).candidates(task)

    def choose_node(self, task: TaskInfo, candidates: Candidates, now: bool) -> str | None:
        """``best_node`` over the task's ``now`` (else future) candidates, from the cache."""
        scoring = self._scoring  # as in ``candidates``
        return choose_node(scoring if scoring is not None else self.scoring, task, candidates, now)

    def hooks(self, hook: str) -> list[tuple[str, Hook]]:
        """The enabled implementations of ``hook``, in tier order: (plugin, callable)."""
        return self._flat[hook]

    def row_local(self, hook: str, plugin: str) -> bool:
        """Does ``plugin``'s ``hook`` accept ``rows`` (see ``pumice.framework.evaluation``)?"""
        return (hook, plugin) in self._row_local

    # -- queues and jobs --------------------------------------------------------------------

    def overused(self, queue: QueueInfo) -> bool:
        return any(hook(queue) for _, hook in self._flat["overused"])

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        for _, hook in self._flat["allocatable"]:  # noqa: SIM110 - asked per task: all() costs more
            if not hook(queue, task):
                return False
        return True

    def overused_reason(self, queue: QueueInfo) -> str | None:
        return first_message(self._flat["overused_reason"], queue)

    def allocatable_reason(self, queue: QueueInfo, task: TaskInfo) -> str | None:
        return first_message(self._flat["allocatable_reason"], queue, task)

    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> bool:
        return all(hook(queue, task) for _, hook in self._flat["preemptive"])

    def job_ready(self, job: JobInfo) -> bool:
        for _, hook in self._flat["job_ready"]:  # noqa: SIM110 - asked per placement
            if not hook(job):
                return False
        return True

    def job_pipelined(self, job: JobInfo) -> bool:
        return self._vote("job_pipelined", job)

    def job_enqueueable(self, job: JobInfo) -> bool:
        return self._vote("job_enqueueable", job)

    def _vote(self, hook_name: str, job: JobInfo) -> bool:
        return tier_vote(hook_name, self._tiers[hook_name], job)

    def job_starving(self, job: JobInfo) -> bool:
        for tier in self._tiers["job_starving"]:
            if tier:
                return all(hook(job) for _, hook in tier)
        return False

    def job_valid(self, job: JobInfo) -> JobInvalid | None:
        for _, hook in self._flat["job_valid"]:
            answer = hook(job)
            if answer is not None:
                return answer  # type: ignore[no-any-return]
        return None

    # -- victims ----------------------------------------------------------------------------

    def preemptable(self, preemptor: TaskInfo, candidates: Sequence[TaskInfo]) -> list[TaskInfo]:
        """Victims for ``preemptor`` among ``candidates`` (per-tier intersection).

        Protections come first: every plugin with ``protects_victims`` (conformance) removes
        the candidates it leaves out before any tier is asked, so no later tier can pick them.
        """
        return self._victims("preemptable", preemptor, candidates)

    def reclaimable(self, reclaimer: TaskInfo, candidates: Sequence[TaskInfo]) -> list[TaskInfo]:
        """Victims for ``reclaimer`` among ``candidates`` (per-tier intersection)."""
        return self._victims("reclaimable", reclaimer, candidates)

    def _victims(
        self, hook_name: str, initiator: TaskInfo, candidates: Sequence[TaskInfo]
    ) -> list[TaskInfo]:
        return tier_victims(self._guards[hook_name], self._tiers[hook_name], initiator, candidates)

    # -- events -----------------------------------------------------------------------------

    def fire_allocate(self, task: TaskInfo) -> None:
        """Tell every plugin that ``task`` was allocated; if one raises, the ones already told
        are told of the deallocation, and the error propagates (a veto)."""
        hooks = self._flat["on_allocate"]
        calls = iter(hooks)  # no counter per hook (asked per placement): what is left says
        try:
            for _, hook in calls:
                hook(task)
        except Exception:
            done = len(hooks) - len(list(calls)) - 1  # the one that raised was not told
            told = {name for name, _ in hooks[:done]}
            for other, undo in reversed(self._flat["on_deallocate"]):
                if other in told:
                    undo(task)
            raise

    def fire_job_enqueued(self, job: JobInfo) -> None:
        """Tell every plugin that ``job`` was admitted."""
        for _, hook in self._flat["job_enqueued"]:
            hook(job)

    def job_for_update(self, job: JobInfo) -> JobInfo:
        """The session's own copy of ``job``, for an action that will place its tasks and
        ask about it afterwards (statements change only the session's own copies)."""
        return self.snapshot.writable_job(job.uid)

    def fire_deallocate(self, task: TaskInfo) -> None:
        """Tell every plugin that ``task`` gave its resources back."""
        for _, hook in self._flat["on_deallocate"]:
            hook(task)
