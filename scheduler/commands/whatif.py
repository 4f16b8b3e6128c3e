"""Virtual time for ``pumice simulate --until-done``: jobs arrive, run and complete.

The run drives a ``pumice.cache.ClusterCache`` exactly as the daemon's informers and binder
do, only with a clock of its own:

* the cluster files' objects are handed to the cache's handlers as ADDED events (nodes,
  PriorityClasses, Queues, PodGroups, then pods: ours without a node to the pending-pods
  handler, assigned ones to the assigned-pods handler), all at t = 0; a trace job arrives at
  its ``arrival`` as a PodGroup and its pods (``whatif_inputs.job_objects``);
* a cycle runs at the first ``scheduler.period`` boundary at or after each arrival or
  completion (events at the boundary itself come first); when pods wait, it takes
  ``cache.snapshot()`` and runs a session with a committer that records. Each bind is then
  applied as in the daemon: assumed in the cache, the bind accepted, and the watch events
  that follow (the pod leaves the pending watch and is ADDED on the assigned one, Running);
  an eviction is asked for and the pod deleted, and its controller creates it again, pending,
  with its whole runtime; a nomination is a pending-pod update. PodGroup status (the phase)
  and Queue ``status.reservation`` go back into the cache as the status writer's updates
  would come back through the watch (``pumice.daemon.outcome.collect``, the daemon's code);
* a pod with a runtime (``pumice.sim/complete-after``) completes that long after its bind:
  the assigned watch's DELETED (it turned Succeeded), so its node is free at once; a job
  whose pods have all completed has its PodGroup deleted;
* a cycle that bound or evicted something while pods still wait is followed by one more a
  period later (as the daemon's loop does); otherwise time jumps to the next event.

The run ends when no event is left: no arrival to come, no pod with runtime left, and the last
cycle placed nothing. Time never moves in fixed steps, so a week of jobs costs what its
arrivals and completions cost, not what its seconds would.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pumice.cache import ClusterCache
from pumice.cache.pods import pod_uid
from pumice.commands.whatif_inputs import (
    Cluster,
    QueueFigures,
    TraceError,
    TraceJob,
    job_objects,
    key_of,
    plugin_figures,
    podgroup_statuses,
    runtime_of,
    write_status,
)
from pumice.commands.whatif_report import JobRecord, Timeline
from pumice.daemon.collector import CollectorPolicy
from pumice.framework.action import run_actions
from pumice.framework.committer import RecordingCommitter
from pumice.framework.config import SchedulerConfig
from pumice.framework.host import PluginHost
from pumice.framework.session import Session
from pumice.model.tasks import GROUP_NAME_ANNOTATION
from pumice.plain import Obj

EPSILON = 1e-9
ARRIVAL, COMPLETION = 0, 1


@dataclass(slots=True)
class PodRun:
    """One pod of the run: what the cache was last given for it."""

    key: str
    uid: str
    obj: Obj
    pending: Obj
    """The pod as it waits for a node (what its controller creates again after an eviction)."""
    job: JobRecord | None
    runtime: float | None
    restarts: int = 0
    done: bool = False
    """Completed (its node is free; the pod is gone from the cache)."""

    @property
    def bound(self) -> bool:
        return not self.done and self.obj is not self.pending


class VirtualRun:
    """One run of a cluster and a trace under one configuration."""

    def __init__(
        self,
        cluster: Cluster,
        trace: Sequence[TraceJob],
        config: SchedulerConfig,
        host: PluginHost,
        *,
        scheduler_name: str,
        label: str,
    ) -> None:
        self.config, self.host = config, host
        self.scheduler_name = scheduler_name
        self.period = config.scheduler.period
        self.default_queue = config.scheduler.default_queue
        self.now = 0.0
        self.base = cluster.start()
        self.cache = ClusterCache(
            scheduler_name,
            volcano=True,
            default_queue=self.default_queue,
            clock=lambda: self.base + self.now,
        )
        self.timeline = Timeline(label)
        self.pods: dict[str, PodRun] = {}
        self.members: dict[str, list[PodRun]] = {}
        """Job key -> its pods."""
        self.by_uid: dict[str, str] = {}
        self.waiting: set[str] = set()
        self._events: list[tuple[float, int, int, Any]] = []
        self._cycles: list[float] = []
        self._seq = itertools.count()
        self._shares: dict[str, tuple[float, Obj]] = {}
        self._finished_since_sample = False
        """Did a pod finish since the shares were last sampled?"""
        self._load(cluster, trace)

    # -- loading -----------------------------------------------------------------------------

    def _load(self, cluster: Cluster, trace: Sequence[TraceJob]) -> None:
        objects = cluster.objects
        queues = {str(q["metadata"]["name"]) for q in objects["Queue"]} | {self.default_queue}
        classes = {str(pc["metadata"]["name"]) for pc in objects["PriorityClass"]}
        generated: dict[int, Obj] = {}
        self._trace_classes: dict[str, str | None] = {}
        podgroups = {key_of(pg) for pg in objects["PodGroup"]}
        for job in trace:
            queue = job.queue or self.default_queue
            if queue not in queues:
                raise TraceError(job.source, job.line, f"queue {queue!r} is not in the cluster")
            if job.key in podgroups:
                raise TraceError(
                    job.source, job.line, f"job {job.key} is a PodGroup of the cluster files"
                )
            self._trace_classes[job.key] = self._class_of(job, classes, generated)
        for node in objects["Node"]:
            self.cache.nodes.on_add(node)
        for pc in [*objects["PriorityClass"], *generated.values()]:
            self.cache.priority_classes.on_add(pc)
        for queue_obj in objects["Queue"]:
            self.cache.queues.on_add(queue_obj)
        groups: dict[str, JobRecord] = {}
        for pg in objects["PodGroup"]:
            self.cache.podgroups_handler.on_add(pg)
            key, spec = key_of(pg), pg.get("spec") or {}
            groups[key] = JobRecord(key, str(spec.get("queue") or self.default_queue), 0.0, 0)
        for pod in objects["Pod"]:
            self._add_cluster_pod(pod, groups)
        for record in groups.values():
            if record.pods and len(record.bound) < record.pods:  # it had pods to schedule
                self.timeline.jobs[record.key] = record
        requested = {"cpu", "memory"}
        for job in trace:
            requested.update(job.requests)
            self._push(job.arrival, ARRIVAL, job)
        for pod in objects["Pod"]:
            for container in (pod.get("spec") or {}).get("containers") or ():
                resources = (container or {}).get("resources") or {}
                requested.update((resources.get("requests") or {}).keys())
        table = self.cache.state.table
        self.dims = [d for d in sorted(requested, key=_dim_order) if table.dim(d) is not None]
        self._cycle_at(0.0)

    def _class_of(self, job: TraceJob, classes: set[str], generated: dict[int, Obj]) -> str | None:
        if job.priority is None:
            return None
        if isinstance(job.priority, str):
            if job.priority not in classes:
                raise TraceError(
                    job.source, job.line, f"priority: no PriorityClass {job.priority!r}"
                )
            return job.priority
        name = f"pumice-whatif-priority-{job.priority}"
        generated[job.priority] = {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": job.priority,
        }
        return name

    def _add_cluster_pod(self, pod: Obj, groups: dict[str, JobRecord]) -> None:
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            return
        meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
        ours = spec.get("schedulerName") == self.scheduler_name
        if not ours and not spec.get("nodeName"):
            return  # another scheduler's pending pod: never ours to place
        key = key_of(pod)
        record: JobRecord | None = None
        if ours:
            group = (meta.get("annotations") or {}).get(GROUP_NAME_ANNOTATION)
            if group:
                record = groups.get(f"{meta.get('namespace') or 'default'}/{group}")
            else:
                record = JobRecord(key, self.default_queue, 0.0, 0)
                if not spec.get("nodeName"):
                    self.timeline.jobs[key] = record
            if record is not None:
                record.pods += 1
        self._add_pod(key, pod, record, runtime_of(pod))

    # -- events ------------------------------------------------------------------------------

    def _push(self, when: float, kind: int, payload: Any) -> None:
        heapq.heappush(self._events, (when, kind, next(self._seq), payload))

    def _cycle_at(self, when: float) -> None:
        """Ask for a cycle at the first period boundary at or after ``when``."""
        if self.period > 0:
            when = math.ceil(when / self.period - EPSILON) * self.period
        if when not in self._cycles:
            heapq.heappush(self._cycles, when)

    def run(self) -> Timeline:
        """Go through every event and cycle; the figures of the run."""
        # The daemon's garbage collection: the loaded heap frozen, young collections between
        # cycles only (automatic ones cost about a tenth of a week's run).
        collector = CollectorPolicy()
        collector.synced()  # what the cluster files brought is frozen; collect at turns
        try:
            self._run(collector)
        finally:
            collector.stop()
        if self.timeline.sessions:
            self._closing_figures()
        self.timeline.pending = len(self.waiting)
        return self.timeline

    def _run(self, collector: CollectorPolicy) -> None:
        events, cycles = self._events, self._cycles
        while events or cycles:
            if events and (not cycles or events[0][0] <= cycles[0] + EPSILON):
                self.now = events[0][0]
                while events and events[0][0] <= self.now + EPSILON:
                    _, kind, _, payload = heapq.heappop(events)
                    if kind == ARRIVAL:
                        self._arrive(payload)
                    else:
                        self._complete(*payload)
                self._cycle_at(self.now)
                self._sample_use()
            else:
                self.now = heapq.heappop(cycles)
                self._cycle()
                collector.turn()

    def _arrive(self, job: TraceJob) -> None:
        created = self.base + self.now
        podgroup, pods = job_objects(
            job,
            scheduler_name=self.scheduler_name,
            priority_class=self._trace_classes.get(job.key),
            created=created,
        )
        record = JobRecord(job.key, job.queue or self.default_queue, self.now, job.pods)
        self.timeline.jobs[job.key] = record
        self.cache.podgroups_handler.on_add(podgroup)
        for pod in pods:
            self._add_pod(f"{job.namespace}/{pod['metadata']['name']}", pod, record, job.runtime)

    def _add_pod(self, key: str, pod: Obj, job: JobRecord | None, runtime: float | None) -> None:
        slim = self.cache.slim_pod(pod)
        uid = pod_uid(slim)
        bound = bool((slim.get("spec") or {}).get("nodeName"))
        run = PodRun(key, uid, slim, {}, job, runtime)
        self.pods[key] = run
        self.by_uid[uid] = key
        if job is not None:
            self.members.setdefault(job.key, []).append(run)
        if bound:
            self.cache.assigned_pods.on_add(slim)
            if job is not None:
                job.bound[key] = self.now
            self._started(run)
        else:
            run.pending = slim
            self.cache.pending_pods.on_add(slim)
            self.waiting.add(key)

    def _started(self, run: PodRun) -> None:
        if run.runtime is not None:
            self._push(self.now + run.runtime, COMPLETION, (run.key, run.uid))

    def _complete(self, key: str, uid: str) -> None:
        run = self.pods.get(key)
        if run is None or run.uid != uid or not run.bound:
            return  # restarted meanwhile: its new incarnation has a completion of its own
        self.cache.assigned_pods.on_delete(run.obj)  # Succeeded: gone from the assigned watch
        run.done = True
        del self.by_uid[uid]
        self.timeline.makespan = max(self.timeline.makespan, self.now)
        self._finished_since_sample = True
        job = run.job
        if job is None:
            return
        job.done.add(key)
        if len(job.done) >= job.pods and job.finished is None:
            job.finished = self.now
            entry = self.cache.podgroups.get(job.key)
            if entry is not None:
                self.cache.podgroups_handler.on_delete(entry.obj)

    # -- cycles ------------------------------------------------------------------------------

    def _cycle(self) -> None:
        self.timeline.cycles += 1
        if not self.waiting:
            # Nothing to place: the daemon opens no session either, but it writes the Queues'
            # status afresh; so the shares are sampled when pods finished since the last one
            # (a queue whose last job ended must not keep its old share until the next arrival).
            if self._finished_since_sample:
                self._closing_figures()
            return
        self.timeline.sessions += 1
        snapshot = self.cache.snapshot()
        snapshot.taken_at = self.base + self.now
        recorder = RecordingCommitter(quiet=True)
        session = Session.open(snapshot, self.config, self.host, committer=recorder)
        try:
            try:
                run_actions(session)
            finally:
                session.close()
            decided = {d.task.job for d in recorder.made if d.kind != "nominate"}
            statuses = podgroup_statuses(self.cache, session, decided)
            shares, reservations = plugin_figures(session)
        finally:
            session.dispose()
        restarted: set[str] = set()
        for d in recorder.of_kind("evict"):
            self._evict(d.task.uid, restarted)
        for d in recorder.of_kind("bind"):
            self._bind(d.task.uid, d.node)
        for d in recorder.of_kind("nominate"):
            self._nominate(d.task.uid, d.node)
        write_status(self.cache, statuses, reservations)
        self._sample_shares(shares)
        self._finished_since_sample = False
        self._sample_use()
        if (recorder.of_kind("bind") or recorder.of_kind("evict")) and self.waiting:
            self._cycle_at(self.now + max(self.period, EPSILON))

    def _closing_figures(self) -> None:
        """The shares as they stand, from a session that runs no action: at the end of the run,
        and at a cycle where nothing waits but pods finished (no session would sample them)."""
        session = Session.open(
            self.cache.snapshot(), self.config, self.host, committer=RecordingCommitter(quiet=True)
        )
        try:
            session.close()
            shares, _ = plugin_figures(session)
        finally:
            session.dispose()
        self._sample_shares(shares)
        self._finished_since_sample = False

    def _bind(self, uid: str, node: str) -> None:
        key = self.by_uid[uid]
        run = self.pods[key]
        self.cache.assume(uid, node=node)  # the daemon assumes at once ...
        self.cache.finish_binding(uid)  # ... the API server accepts the bind ...
        pending = run.obj
        status = dict(pending.get("status") or {})
        status.pop("nominatedNodeName", None)
        bound = {
            **pending,
            "spec": {**(pending.get("spec") or {}), "nodeName": node},
            "status": {**status, "phase": "Running"},
        }
        self.cache.pending_pods.on_delete(pending)  # ... and the watches show the move
        self.cache.assigned_pods.on_add(bound)
        run.obj = bound
        self.waiting.discard(key)
        if run.job is not None:
            run.job.bound[key] = self.now
        self._started(run)

    def _evict(self, uid: str, restarted: set[str]) -> None:
        """The pod is evicted; its job's controller restarts the whole job (Volcano's
        ``PodEvicted: RestartJob``): every pod of it is deleted and created again, pending,
        with its whole runtime. (Restarting only the evicted pod would leave a gang whose
        completed pods are gone from the cache short of ``minMember`` for good.)"""
        key = self.by_uid.get(uid)
        run = self.pods.get(key or "")
        if run is None or not run.bound:
            return
        self.timeline.evictions += 1
        self.cache.evicting(uid)
        job = run.job
        if job is None:
            self._restart(run)
            return
        if job.key in restarted:
            return
        restarted.add(job.key)
        for member in self.members.get(job.key, [run]):
            self._restart(member)
        job.done.clear()

    def _restart(self, run: PodRun) -> None:
        if not run.done:
            if run.bound:
                self.cache.assigned_pods.on_delete(run.obj)
            elif run.pending:
                self.cache.pending_pods.on_delete(run.obj)
            self.by_uid.pop(run.uid, None)
        if run.job is not None:
            run.job.bound.pop(run.key, None)
        run.restarts += 1
        template = run.pending or run.obj
        origin = pod_uid(template).split("~", 1)[0]
        spec = {k: v for k, v in (template.get("spec") or {}).items() if k != "nodeName"}
        pending = {
            **template,
            "metadata": {**template["metadata"], "uid": f"{origin}~{run.restarts}"},
            "spec": spec,
            "status": {"phase": "Pending"},
        }
        run.uid, run.obj, run.pending, run.done = pod_uid(pending), pending, pending, False
        self.by_uid[run.uid] = run.key
        self.cache.pending_pods.on_add(pending)
        self.waiting.add(run.key)

    def _nominate(self, uid: str, node: str) -> None:
        key = self.by_uid.get(uid)
        run = self.pods.get(key or "")
        if run is None or run.bound or run.done:
            return
        status = {**(run.obj.get("status") or {}), "nominatedNodeName": node}
        updated = {**run.obj, "status": status}
        self.cache.pending_pods.on_update(run.obj, updated)
        run.obj = run.pending = updated

    # -- samples -----------------------------------------------------------------------------

    def _sample_use(self) -> None:
        table = self.cache.state.table
        fractions: dict[str, float] = {}
        for dim in self.dims:
            allocatable = table.column("allocatable", dim)
            used = table.column("used", dim)
            total = float(allocatable.sum()) if allocatable is not None else 0.0
            taken = float(used.sum()) if used is not None else 0.0
            fractions[dim] = taken / total if total > 0 else 0.0
        self.timeline.sample_use(self.now, fractions)

    def _sample_shares(self, shares: dict[str, QueueFigures]) -> None:
        """Each queue's share and deserved as the session left them, when they changed; a
        queue that no longer has jobs has a share of 0."""
        for name in sorted(set(shares) | set(self._shares)):
            share, deserved = shares.get(name, (0.0, {}))
            if self._shares.get(name) == (share, deserved):
                continue
            self._shares[name] = (share, deserved)
            self.timeline.shares.append(
                {"t": self.now, "queue": name, "share": share, "deserved": deserved}
            )


def _dim_order(name: str) -> tuple[int, str]:
    return ({"cpu": 0, "memory": 1}.get(name, 2), name)
