"""The volume filters of ``predicates`` for one session, and the writes they make before a
pod is bound: a private helper (kube-scheduler's VolumeRestrictions, NodeVolumeLimits,
VolumeBinding and VolumeZone, in that order).

``open`` surveys the session: when no pod waiting for a node uses a claim or an in-tree disk,
the filters are inactive and ``predicates`` decides exactly as without them. Otherwise each
such task gets a ``VolumeCheck``:

* ``reason``: the first PreFilter rejection (``pumice.plugins._volume_claims``), the pod's own
  and reported as kube-scheduler reports one (``0/N nodes are available: REASON.``);
* ``eligible``: the nodes VolumeBinding's PreFilter narrows the pod to (bound local volumes),
  the others rejected first with ``node(s) didn't satisfy plugin(s) [VolumeBinding]``;
* then, per node (``failures``): disk and ReadWriteOncePod conflicts, attach limits,
  VolumeBinding's reasons, VolumeZone's.

A placement (``place``, the plugin's ``on_allocate``) of a pod with unbound
``WaitForFirstConsumer`` claims chooses its bindings on its node — a volume for each claim, or
provisioning there — and the session's ``VolumeView`` assumes them, so the next pod never gets
a volume already taken, and a claim two pods share keeps one node. ``pre_bind`` hands the
chosen bindings to the committer's writer. Every placement or removal of a pod with claims
marks every row stale for the tasks with claims (``stale_rows``): their answers depend on
other nodes' pods (ReadWriteOncePod) and on the session's bindings.

**VolumeZone's Filter** (kube-scheduler's ``volumezone``, ``zone_mask``).

For every named claim that names a volume, the volume's zone and region labels
(``topology.kubernetes.io/zone`` and ``/region``, and their ``failure-domain.beta`` forms; a
value may list several, separated by ``__``) must hold on the node: the node's value for the
same key (for a beta key, the GA key's value when the node lacks the beta one) must be one of
them. A node with none of the four labels passes. Otherwise
``node(s) had no available volume zone`` (UnschedulableAndUnresolvable).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from pumice import (
    BoolVector,
    IntVector,
    NodeTable,
    PreBindWriter,
    SessionView,
    StatementError,
    TaskInfo,
    TaskStatus,
)
from pumice.plugins._interpod import DirtyLog
from pumice.plugins._k8s_terms import NodeTerms
from pumice.plugins._volume_binding import (
    BIND_CONFLICT,
    NODE_CONFLICT,
    NOT_ELIGIBLE,
    PV_NOT_EXIST,
    BindingPlan,
    Decision,
    VolumeView,
    decision,
    eligible_nodes,
    plan,
)
from pumice.plugins._volume_claims import (
    ClaimStates,
    PodVolumes,
    binding_reason,
    classify,
    restrictions_reason,
    rwop_claims,
    zone_reason,
)
from pumice.plugins._volume_limits import (
    MAX_VOLUME_COUNT,
    Attach,
    VolumeLimits,
    attached_volumes,
)
from pumice.plugins._volume_restrictions import (
    DISK_CONFLICT,
    RWOP_CONFLICT,
    PlacedVolumes,
    disk_conflict,
)
from pumice.volumes import NO_STORAGE, StorageObjects, meta, spec_of

ZONE_CONFLICT = "node(s) had no available volume zone"

BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
TOPOLOGY_LABELS = (BETA_ZONE, BETA_REGION, ZONE, REGION)
GA_OF = {BETA_ZONE: ZONE, BETA_REGION: REGION}


def zone_constraints(pv: PodVolumes, storage: StorageObjects) -> list[tuple[str, tuple[str, ...]]]:
    """(label key, allowed values) from the zone labels of the volumes the pod's named claims
    name (claims or volumes that are missing were turned away before)."""
    out: list[tuple[str, tuple[str, ...]]] = []
    for use in pv.uses:
        if use.ephemeral:
            continue
        claim = storage.claims.get(pv.key(use))
        name = str(spec_of(claim).get("volumeName") or "") if claim is not None else ""
        volume = storage.volumes.get(name) if name else None
        if volume is None:
            continue
        labels: Mapping[str, Any] = meta(volume).get("labels") or {}
        for key in TOPOLOGY_LABELS:
            value = labels.get(key)
            if value is None:
                continue
            items = [part.strip() for part in str(value).split("__")]
            if not items or any(not item for item in items):
                continue  # an empty item: the label is not taken into account
            out.append((key, tuple(sorted(set(items)))))
    return out


def zone_mask(terms: NodeTerms, constraints: list[tuple[str, tuple[str, ...]]]) -> BoolVector:
    """Nodes that meet every constraint (or carry none of the four labels)."""
    labelled = np.zeros(terms.size, dtype=np.bool_)
    for key in TOPOLOGY_LABELS:
        labelled |= terms.requirement("label", (key, "Exists", ()))
    ok = np.ones(terms.size, dtype=np.bool_)
    for key, values in constraints:
        inside = terms.requirement("label", (key, "In", values))
        ga = GA_OF.get(key)
        if ga is not None:
            lacks = ~terms.requirement("label", (key, "Exists", ()))
            inside = inside | (lacks & terms.requirement("label", (ga, "In", values)))
        ok &= inside
    return ok | ~labelled


ObjectVector = npt.NDArray[np.object_]

RESOLVABLE = frozenset({DISK_CONFLICT, RWOP_CONFLICT, MAX_VOLUME_COUNT})
"""What evicting pods may cure: a disk or a ReadWriteOncePod claim in use, attach limits."""

UNRESOLVABLE = frozenset({NOT_ELIGIBLE, NODE_CONFLICT, BIND_CONFLICT, PV_NOT_EXIST, ZONE_CONFLICT})
"""The per-node volume reasons no eviction cures (the pod's own reasons are not per node)."""

__all__ = [
    "NOT_ELIGIBLE",
    "RESOLVABLE",
    "UNRESOLVABLE",
    "ZONE_CONFLICT",
    "VolumeCheck",
    "VolumeFilters",
]


@dataclass(slots=True)
class VolumeCheck:
    """What the filters know of one pod for the session (see the module docstring)."""

    volumes: PodVolumes
    reason: str | None = None
    eligible: BoolVector | None = None
    states: ClaimStates | None = None
    zone: BoolVector | None = None
    new: dict[str, Attach] | str | None = None
    rwop: tuple[str, ...] = ()
    plan: BindingPlan | None = None


class VolumeFilters:
    """VolumeRestrictions, NodeVolumeLimits, VolumeBinding, VolumeZone for one session."""

    def __init__(self, *, binding: bool, zone: bool, limits: bool) -> None:
        self.binding = binding
        self.zone = zone
        self.limits_on = limits
        self.active = False
        self.session: SessionView | None = None
        self.storage: StorageObjects = NO_STORAGE
        self._view: VolumeView | None = None
        self._placed: PlacedVolumes | None = None
        self._limits: VolumeLimits | None = None
        self._log: DirtyLog | None = None
        self._volumes: dict[str, PodVolumes | None] = {}
        self._checks: dict[str, VolumeCheck] = {}
        self._decisions: dict[str, Decision] = {}

    def open(self, session: SessionView) -> None:
        """Survey the pods waiting for a node: does any use a claim or an in-tree disk?"""
        self.session = session
        self.storage = session.snapshot.storage
        for job in session.jobs.values():
            for task in job.tasks.values():
                # most pods name no volume: look no further than the field
                if not ((task.pod or {}).get("spec") or {}).get("volumes"):
                    continue
                if task.status == TaskStatus.PENDING and self.volumes_of(task) is not None:
                    self.active = True
                    self._log = DirtyLog(session.table)
                    return

    def volumes_of(self, task: TaskInfo) -> PodVolumes | None:
        """The pod's claims and disks; None when it has none (the filters never reject it)."""
        if task.uid in self._volumes:
            return self._volumes[task.uid]
        found: PodVolumes | None = None
        if ((task.pod or {}).get("spec") or {}).get("volumes"):
            pv = PodVolumes.of(task)
            found = None if pv.empty else pv
        self._volumes[task.uid] = found
        return found

    @property
    def view(self) -> VolumeView:
        if self._view is None:
            assert self.session is not None
            self._view = VolumeView(self.storage, self.session.table)
        return self._view

    @property
    def placed(self) -> PlacedVolumes:
        if self._placed is None:
            assert self.session is not None
            self._placed = PlacedVolumes(self.session)
        return self._placed

    @property
    def limits(self) -> VolumeLimits:
        if self._limits is None:
            self._limits = VolumeLimits(self.storage, self.placed)
        return self._limits

    # -- framework hooks ------------------------------------------------------------------

    def shape_key(self, task: TaskInfo) -> Hashable:
        pv = self.volumes_of(task) if self.active else None
        return None if pv is None else pv.shape_key(task.uid)

    def stale_rows(self, task: TaskInfo, since: int) -> IntVector | bool | None:
        if not self.active or self._log is None or self.volumes_of(task) is None:
            return None
        return self._log.since(since)

    def place(self, task: TaskInfo) -> None:
        if not self.active:
            return
        pv = self.volumes_of(task)
        if pv is None:
            return
        if self._placed is not None:
            self._placed.place(task)
        if self.binding and pv.uses and task.node_name is not None:
            check = self.check(task)
            if check is not None and check.states is not None and check.states.delayed:
                result = self._plan(check)
                row = self.view.table.row(task.node_name)
                if not result.ok[row]:
                    raise StatementError(
                        f"the volumes of {task.key} cannot be bound on {task.node_name}: "
                        f"{result.reasons[row]}"
                    )
                chosen = decision(self.view, result, row)
                self._decisions[task.uid] = chosen
                self.view.assume(task.uid, chosen)
        self._mark()

    def unplace(self, task: TaskInfo) -> None:
        if not self.active or self.volumes_of(task) is None:
            return
        if self._placed is not None:
            self._placed.unplace(task)
        chosen = self._decisions.pop(task.uid, None)
        if chosen is not None:
            self.view.forget(task.uid, chosen)
        self._mark()

    def _mark(self) -> None:
        if self._log is not None:
            self._log.mark(None)

    def pre_bind(self, task: TaskInfo, node: str, writer: PreBindWriter) -> None:
        """Ask ``writer`` for the bindings chosen when the task was placed on ``node``."""
        if not self._decisions:
            return
        chosen = self._decisions.get(task.uid)
        if chosen is None:
            return
        if chosen.node != node:
            raise StatementError(
                f"the volumes of {task.key} were chosen for {chosen.node}, not {node}"
            )
        for claim, volume in chosen.claims:
            if volume:
                writer.bind_volume(claim=claim, volume=volume)
            else:
                writer.provision_volume(claim=claim, node=node)

    def decided(self, task: TaskInfo) -> Decision | None:
        """The bindings chosen for a placed task (None: it needs none)."""
        return self._decisions.get(task.uid)

    # -- the checks -----------------------------------------------------------------------

    def check(self, task: TaskInfo) -> VolumeCheck | None:
        """The pod's ``VolumeCheck`` for this session; None when the filters never reject it."""
        if not self.active:
            return None
        pv = self.volumes_of(task)
        if pv is None:
            return None
        found = self._checks.get(task.uid)
        if found is None:
            found = self._checks[task.uid] = self._first_look(pv)
        return found

    def _first_look(self, pv: PodVolumes) -> VolumeCheck:
        storage = self.storage
        check = VolumeCheck(pv)
        if pv.uses:
            reason = restrictions_reason(pv, storage)
            if reason is None and self.binding:
                reason = binding_reason(pv, storage)
            if reason is None and self.zone:
                reason = zone_reason(pv, storage)
            if reason is not None:
                check.reason = reason
                return check
            check.rwop = tuple(rwop_claims(pv, storage))
            if self.binding:
                states = classify(pv, storage)
                if isinstance(states, ClaimStates):
                    check.states = states
                    check.eligible = eligible_nodes(self.view, states)
            if self.zone:
                constraints = zone_constraints(pv, storage)
                if constraints:
                    check.zone = zone_mask(self.view.terms, constraints)
        if self.limits_on:
            check.new = attached_volumes(pv, storage, new=True)
        return check

    def _plan(self, check: VolumeCheck) -> BindingPlan:
        view = self.view
        if check.plan is None or check.plan.version != view.version:
            assert check.states is not None
            check.plan = plan(view, check.states)
        return check.plan

    def failures(
        self,
        task: TaskInfo,
        check: VolumeCheck,
        nodes: NodeTable,
        rows: IntVector | None,
        ok: BoolVector,
    ) -> list[tuple[BoolVector, str | ObjectVector]]:
        """The rows (``rows``, or every row) each per-node check rejects, in kube-scheduler's
        order, with its reason; ``ok`` marks the rows still in the running."""
        n = len(ok)
        row_ids = np.arange(len(nodes)) if rows is None else rows
        out: list[tuple[BoolVector, str | ObjectVector]] = []
        if check.volumes.disks and self.placed.by_node:
            hit = np.zeros(n, dtype=np.bool_)
            for i in np.flatnonzero(ok):
                node = nodes.nodes[int(row_ids[i])]
                hit[i] = disk_conflict(check.volumes, self.placed, node, task.uid)
            out.append((hit, DISK_CONFLICT))
        if any(self.placed.users(key, task.uid) for key in check.rwop):
            out.append((np.ones(n, dtype=np.bool_), RWOP_CONFLICT))
        if self.limits_on and check.new:
            if isinstance(check.new, str):
                out.append((np.ones(n, dtype=np.bool_), check.new))
            else:
                over = np.zeros(n, dtype=np.bool_)
                csinodes = self.storage.csinodes
                for i in np.flatnonzero(ok):
                    node = nodes.nodes[int(row_ids[i])]
                    if node.name in csinodes:
                        over[i] = self.limits.exceeds(check.new, node, task.uid)
                out.append((over, MAX_VOLUME_COUNT))
        if check.states is not None and (check.states.bound or check.states.delayed):
            result = self._plan(check)
            sel = slice(None) if rows is None else rows
            out.append((~result.ok[sel], result.reasons[sel]))
        if check.zone is not None:
            out.append((~(check.zone if rows is None else check.zone[rows]), ZONE_CONFLICT))
        return out

    def row_reason(self, task: TaskInfo, check: VolumeCheck, nodes: NodeTable, row: int) -> str:
        """The first per-node reason for one row ('' when it passes)."""
        rows = np.array([row], dtype=np.int64)
        ok = np.ones(1, dtype=np.bool_)
        for failed, why in self.failures(task, check, nodes, rows, ok):
            if failed[0]:
                found = why if isinstance(why, str) else why[0]
                return found if isinstance(found, str) else str(found)  # a ReasonList stays one
        return ""
