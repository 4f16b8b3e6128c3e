"""``predicates``: the node filters of kube-scheduler that decide where a pod may go at all.

Hook: ``predicate(task, nodes)`` — one boolean mask over every node of the table, with the
reason for each rejected node (the first failing filter, in the order below):

1. pod count: ``pod_count + 1 > max_pods`` → ``Too many pods``;
2. NodeUnschedulable: a cordoned node (``spec.unschedulable``) unless the pod tolerates
   ``node.kubernetes.io/unschedulable:NoSchedule`` → ``node(s) were unschedulable``;
3. TaintToleration: every ``NoSchedule`` / ``NoExecute`` taint must be tolerated →
   ``node(s) had untolerated taint {key: value}`` naming the node's first such taint;
4. NodeAffinity: the pod's ``nodeSelector`` (every key equal) and its required node affinity
   (terms ORed; requirements ANDed; operators In, NotIn, Exists, DoesNotExist, Gt, Lt;
   ``matchFields`` on ``metadata.name``) → ``node(s) didn't match Pod's node affinity/selector``;
5. NodePorts, only for a pod that asks for host ports: none may clash with the host ports of
   the non-terminated pods already on the node →
   ``node(s) didn't have free ports for the requested pod ports``;
5a. the volume filters (``pumice.plugins._volumes``), for a pod with claims or in-tree disks:
   VolumeRestrictions (``node(s) had no available disk``; a ReadWriteOncePod claim in use:
   ``node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode
   already in-use by another pod``), NodeVolumeLimits (``node(s) exceed max volume count``),
   VolumeBinding (``node(s) didn't match PersistentVolume's node affinity``, ``node(s) didn't
   find available persistent volumes to bind``, ``node(s) unavailable due to one or more
   pvc(s) bound to non-existent pv(s)``) and VolumeZone (``node(s) had no available volume
   zone``). What belongs to the pod rather than to a node (a claim that does not exist or is
   being deleted, an unbound claim of an ``Immediate`` class, …) rejects every node at once,
   before any filter, and the message is kube-scheduler's PreFilter form, ``0/N nodes are
   available: persistentvolumeclaim "data" not found.``; so does VolumeBinding's narrowing to
   the nodes bound local volumes name (``node(s) didn't satisfy plugin(s) [VolumeBinding]``
   for the others, before filter 1);
6. PodTopologySpread, the pod's ``DoNotSchedule`` constraints in spec order
   (``pumice.plugins._spread``) → ``node(s) didn't match pod topology spread constraints``, or
   ``… (missing required label)`` for a node without the topology key;
7. InterPodAffinity (``pumice.plugins._interpod``): the pod's required affinity →
   ``node(s) didn't match pod affinity rules``; its required anti-affinity →
   ``node(s) didn't match pod anti-affinity rules``; placed pods' required anti-affinity
   that selects it → ``node(s) didn't satisfy existing pods anti-affinity rules``.

Filters 6 and 7 count the pods on the nodes and the pods the session places (``on_allocate`` /
``on_deallocate``); they are not row-local in kube-scheduler's sense (a placement changes its
whole topology domain), so the plugin names the pod's identity and constraints in
``shape_key`` and reports the rows a placement changed elsewhere through ``stale_rows``. When
no pod of the session carries pod-to-pod constraints they do nothing at all.

``unresolvable(reason)`` tells the reasons kube-scheduler marks UnschedulableAndUnresolvable
(an eviction on that node cannot help): cordon, taints, node affinity, pod affinity, the
missing spread label and the volume reasons but three; the others (pod count, ports,
anti-affinity of either kind, spread skew, a disk or a ReadWriteOncePod claim in use, attach
limits) may be resolved by evicting pods.

Before a placed pod is bound, ``pre_bind`` hands the committer the volume bindings chosen for
it: a volume's ``claimRef`` for a claim matched to an existing volume, the claim's
``volume.kubernetes.io/selected-node`` for one to be provisioned there.

Resource fit is not checked here: the actions compare requests with idle / future-idle
resources, as in Volcano. The predicates answer which of their reasons are resolvable
(``RESOLVABLE``): preempt and reclaim try nodes rejected only for those.

Arguments (bool, declared in ``declared_arguments``; Volcano's names):

* ``predicate.NodeAffinityEnable`` (true), ``predicate.NodePortsEnable`` (true),
  ``predicate.TaintTolerationEnable`` (true) switch filters 4, 5 and 3 off;
* ``predicate.PodAffinityEnable`` (true), ``predicate.PodTopologySpreadEnable`` (true) switch
  filters 7 and 6 off;
* ``predicate.VolumeBindingEnable``, ``predicate.VolumeZoneEnable``,
  ``predicate.NodeVolumeLimitsEnable`` (true) switch those volume filters off (VolumeBinding
  with its PreFilter, its narrowing and its writes before the bind); VolumeRestrictions has no
  switch (Volcano has none);
* accepted but not implemented (a warning is logged once per process when one is set true):
  ``predicate.DynamicResourceAllocationEnable``, ``predicate.CacheEnable`` (its per-node
  cache is unneeded: every term is cached below).

Speed: the pod's constraints are put in canonical form once per pod object (``task.terms``,
kept by the model from one session to the next), and every distinct
selector, term and toleration set is evaluated once per session over all nodes
(``pumice.plugins._k8s_terms.NodeTerms``); a task costs a few numpy operations over the table.
The ports of the pods on a node are read only for tasks that want host ports, and only for
nodes that passed the other filters.
"""

from __future__ import annotations

import logging

import numpy as np
import numpy.typing as npt

from pumice import (
    COMPLETED_STATUSES,
    Arguments,
    ArgumentSpec,
    BoolVector,
    HostPort,
    NodeTable,
    Plugin,
    PreBindWriter,
    PredicateResult,
    RowPredicate,
    Selector,
    SessionView,
    TaskInfo,
    Tolerations,
    config_warning,
    hookimpl,
)
from pumice.plugins._interpod import AFFINITY_MISMATCH as POD_AFFINITY_MISMATCH
from pumice.plugins._interpod import ANTI_AFFINITY_MISMATCH, EXISTING_ANTI_AFFINITY
from pumice.plugins._k8s_terms import NodeTerms, PortsInUse
from pumice.plugins._links import PodLinkFilters
from pumice.plugins._spread import SPREAD_MISMATCH, SPREAD_MISSING_LABEL
from pumice.plugins._volumes import NOT_ELIGIBLE, VolumeFilters
from pumice.plugins._volumes import RESOLVABLE as VOLUMES_RESOLVABLE
from pumice.plugins._volumes import UNRESOLVABLE as VOLUMES_UNRESOLVABLE

log = logging.getLogger("pumice.plugins.predicates")


NODE_AFFINITY_ENABLE = "predicate.NodeAffinityEnable"
NODE_PORTS_ENABLE = "predicate.NodePortsEnable"
TAINT_TOLERATION_ENABLE = "predicate.TaintTolerationEnable"
POD_AFFINITY_ENABLE = "predicate.PodAffinityEnable"
POD_TOPOLOGY_SPREAD_ENABLE = "predicate.PodTopologySpreadEnable"
VOLUME_BINDING_ENABLE = "predicate.VolumeBindingEnable"
VOLUME_ZONE_ENABLE = "predicate.VolumeZoneEnable"
NODE_VOLUME_LIMITS_ENABLE = "predicate.NodeVolumeLimitsEnable"
NOT_IMPLEMENTED = (
    "predicate.DynamicResourceAllocationEnable",
    "predicate.CacheEnable",
)

TOO_MANY_PODS = "Too many pods"
UNSCHEDULABLE = "node(s) were unschedulable"
AFFINITY_MISMATCH = "node(s) didn't match Pod's node affinity/selector"
PORTS_TAKEN = "node(s) didn't have free ports for the requested pod ports"
RESOLVABLE = (
    frozenset(
        {
            TOO_MANY_PODS,
            PORTS_TAKEN,
            ANTI_AFFINITY_MISMATCH,
            EXISTING_ANTI_AFFINITY,
            SPREAD_MISMATCH,
        }
    )
    | VOLUMES_RESOLVABLE
)
"""What evicting pods from a node may cure, as in kube-scheduler: the pod count, host ports,
anti-affinity of either kind, spread skew, a disk or ReadWriteOncePod claim in use and attach
limits; a cordon, a taint, a node-affinity or pod-affinity mismatch, a missing spread label and
the other volume reasons stay whatever is evicted (``unresolvable``)."""

UNRESOLVABLE = (
    frozenset({UNSCHEDULABLE, AFFINITY_MISMATCH, POD_AFFINITY_MISMATCH, SPREAD_MISSING_LABEL})
    | VOLUMES_UNRESOLVABLE
)
"""Reasons an eviction cannot resolve (kube-scheduler's UnschedulableAndUnresolvable), besides
every untolerated-taint reason (see ``unresolvable``)."""


def unresolvable(reason: str) -> bool:
    """Is ``reason`` one that preempting pods on the node cannot resolve?"""
    return reason in UNRESOLVABLE or reason.startswith("node(s) had untolerated taint")


_count = np.count_nonzero
"""Is any entry of a mask set? (``ndarray.any`` goes through a Python wrapper, numpy's
count does not: cheaper on the few rows a refresh asks about.)"""
_ONE_ROW_PASSES = np.ones(1, dtype=np.bool_)
_ONE_ROW_PASSES.flags.writeable = False
_ONE_ROW_FAILS = np.zeros(1, dtype=np.bool_)
_ONE_ROW_FAILS.flags.writeable = False


class PredicatesPlugin(Plugin):
    """Pod count, unschedulable, taints, node affinity/selector and host ports (see module)."""

    row_local_reads_queue = False  # its row-local answers read the row and the shape only

    declared_arguments = (
        ArgumentSpec(NODE_AFFINITY_ENABLE, "bool", True, doc="nodeSelector and node affinity"),
        ArgumentSpec(NODE_PORTS_ENABLE, "bool", True, doc="host ports"),
        ArgumentSpec(TAINT_TOLERATION_ENABLE, "bool", True, doc="NoSchedule/NoExecute taints"),
        ArgumentSpec(POD_AFFINITY_ENABLE, "bool", True, doc="required pod (anti-)affinity"),
        ArgumentSpec(POD_TOPOLOGY_SPREAD_ENABLE, "bool", True, doc="DoNotSchedule spread"),
        ArgumentSpec(VOLUME_BINDING_ENABLE, "bool", True, doc="claims' binding (VolumeBinding)"),
        ArgumentSpec(VOLUME_ZONE_ENABLE, "bool", True, doc="volumes' zone labels (VolumeZone)"),
        ArgumentSpec(NODE_VOLUME_LIMITS_ENABLE, "bool", True, doc="CSI attach limits"),
        *(ArgumentSpec(k, "bool", False, doc="accepted, not implemented") for k in NOT_IMPLEMENTED),
    )

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.node_affinity = bool(arguments.get_bool(NODE_AFFINITY_ENABLE, True))
        self.node_ports = bool(arguments.get_bool(NODE_PORTS_ENABLE, True))
        self.taint_toleration = bool(arguments.get_bool(TAINT_TOLERATION_ENABLE, True))
        self.links = PodLinkFilters(
            affinity=bool(arguments.get_bool(POD_AFFINITY_ENABLE, True)),
            spread=bool(arguments.get_bool(POD_TOPOLOGY_SPREAD_ENABLE, True)),
        )
        self.volumes = VolumeFilters(
            binding=bool(arguments.get_bool(VOLUME_BINDING_ENABLE, True)),
            zone=bool(arguments.get_bool(VOLUME_ZONE_ENABLE, True)),
            limits=bool(arguments.get_bool(NODE_VOLUME_LIMITS_ENABLE, True)),
        )
        for key in NOT_IMPLEMENTED:
            if arguments.get_bool(key, False):
                config_warning(
                    log,
                    plugin="predicates",
                    key=key,
                    message="set but not implemented in pumice; ignored",
                )
        self._terms: NodeTerms | None = None
        self._static: dict[tuple[Tolerations, Selector | None], list[str]] = {}
        self._static_for: tuple[NodeTerms, int] | None = None
        self._clear: dict[int, tuple[list[str], bool]] = {}
        """id of a ``_static_reasons`` answer -> it, and whether every row is clear."""

    def node_terms(self, nodes: NodeTable) -> NodeTerms:
        """The term cache for ``nodes`` (made again if the table is not the one cached)."""
        if self._terms is None or not self._terms.fits(nodes):
            self._terms = NodeTerms(nodes)
        return self._terms

    @hookimpl
    def session_open(self, session: SessionView) -> None:
        self.links.open(session)
        self.volumes.open(session)

    @hookimpl
    def shape_key(self, task: TaskInfo) -> object:
        links = self.links.shape_key(task) if self.links.active else None
        if not self.volumes.active:
            return links
        volumes = self.volumes.shape_key(task)
        return links if volumes is None else (links, volumes)

    @hookimpl
    def stale_rows(
        self, task: TaskInfo, nodes: NodeTable, since: int
    ) -> npt.NDArray[np.int64] | bool | None:
        stale = self.links.stale_rows(task, since)
        if not self.volumes.active:
            return stale
        more = self.volumes.stale_rows(task, since)
        if more is True or stale is None or stale is False:
            return more
        if more is None or more is False or not len(more):
            return stale
        if stale is True:
            return True
        return np.concatenate([stale, more])

    @hookimpl
    def on_allocate(self, task: TaskInfo) -> None:
        if self.volumes.active:
            self.volumes.place(task)  # first: it may veto a placement its volumes cannot have
        self.links.place(task)

    @hookimpl
    def on_deallocate(self, task: TaskInfo) -> None:
        self.links.unplace(task)
        if self.volumes.active:
            self.volumes.unplace(task)

    @hookimpl
    def pre_bind(self, task: TaskInfo, node: str, writer: PreBindWriter) -> None:
        if self.volumes.active:
            self.volumes.pre_bind(task, node, writer)

    @hookimpl
    def predicate(
        self, task: TaskInfo, nodes: NodeTable, rows: npt.NDArray[np.int64] | None = None
    ) -> PredicateResult:
        # Row-local: each filter reads only the node's own row, labels, taints and pods.
        if rows is not None and len(rows) == 1:
            return self._check_row(task, nodes, int(rows[0]))
        terms = self.node_terms(nodes)
        pod = task.terms
        sel: slice | npt.NDArray[np.int64] = slice(None) if rows is None else rows
        n = len(nodes) if rows is None else len(rows)
        volumes = self.volumes.check(task) if self.volumes.active else None
        if volumes is not None and volumes.reason is not None:
            # the pod's own reason (kube's PreFilter): every node, whatever else holds
            return PredicateResult(np.zeros(n, dtype=np.bool_), volumes.reason, prefilter=True)
        failures: list[tuple[BoolVector, str | npt.NDArray[np.object_]]] = []
        # the first filter needs no mask of earlier rejections: its failures are the mask
        eligible = volumes.eligible if volumes is not None else None
        if eligible is not None:
            first, first_reason = ~eligible[sel], NOT_ELIGIBLE
        else:
            # pod_count + 1 > max_pods, in integers
            first, first_reason = nodes.pod_count[sel] >= nodes.max_pods[sel], TOO_MANY_PODS
        if _count(first):
            failures.append((first, first_reason))
        ok = ~first

        def reject(failed: BoolVector, why: str | npt.NDArray[np.object_]) -> None:
            newly = failed & ok
            if _count(newly):
                failures.append((newly, why))
                ok[newly] = False

        if eligible is not None:  # then the pod count comes second
            reject(nodes.pod_count[sel] >= nodes.max_pods[sel], TOO_MANY_PODS)
        if not self._static_clear(terms, nodes, pod.tolerations, pod.selector):
            # else no node's flags, taints or labels reject the pod: nothing to reject
            unschedulable = nodes.unschedulable[sel]
            if unschedulable.any() and not terms.tolerates_unschedulable(pod.tolerations):
                reject(unschedulable, UNSCHEDULABLE)
            if self.taint_toleration:
                tainted, taint_reasons = terms.untolerated(pod.tolerations)
                if terms.taints_anywhere(pod.tolerations):  # else: nothing to reject
                    reject(tainted[sel], taint_reasons[sel])
            if self.node_affinity and pod.selector is not None:
                reject(~terms.selector(pod.selector)[sel], AFFINITY_MISMATCH)
        if self.node_ports and pod.host_ports and _count(ok):
            row_ids = np.arange(len(nodes)) if rows is None else rows
            taken = np.zeros(n, dtype=np.bool_)
            taken[ok] = self._ports_taken(pod.host_ports, nodes, row_ids[ok])
            reject(taken, PORTS_TAKEN)
        if volumes is not None and _count(ok):
            for failed, volume_reason in self.volumes.failures(task, volumes, nodes, rows, ok):
                reject(failed, volume_reason)
        if self.links.active:
            for failed, link_reason in self.links.failures(task, nodes, terms, rows):
                reject(failed, link_reason)

        if not failures:
            return PredicateResult(ok, "", RESOLVABLE)
        if len(failures) == 1 and isinstance(failures[0][1], str):
            return PredicateResult(ok, failures[0][1], RESOLVABLE)
        reasons = np.full(n, "", dtype=object)
        for newly, why in failures:
            reasons[newly] = why if isinstance(why, str) else why[newly]
        return PredicateResult(ok, reasons, RESOLVABLE)

    def _check_row(self, task: TaskInfo, nodes: NodeTable, row: int) -> PredicateResult:
        """The same filters, in the same order, for one row (a placement changes one row, and
        numpy's per-call overhead dominates on one element): the first failing filter's
        reason, as the vector path reports it."""
        terms = self.node_terms(nodes)
        pod = task.terms
        reason = ""
        volumes = self.volumes.check(task) if self.volumes.active else None
        if volumes is not None and volumes.reason is not None:
            return PredicateResult(_ONE_ROW_FAILS, volumes.reason, prefilter=True)
        if volumes is not None and volumes.eligible is not None and not volumes.eligible[row]:
            reason = NOT_ELIGIBLE
        elif nodes.pod_count[row] + 1 > nodes.max_pods[row]:
            reason = TOO_MANY_PODS
        elif nodes.unschedulable[row] and not terms.tolerates_unschedulable(pod.tolerations):
            reason = UNSCHEDULABLE
        elif self.taint_toleration and (taints := terms.untolerated(pod.tolerations))[0][row]:
            reason = str(taints[1][row])
        elif (
            self.node_affinity
            and pod.selector is not None
            and not terms.selector(pod.selector)[row]
        ):
            reason = AFFINITY_MISMATCH
        elif (
            self.node_ports
            and pod.host_ports
            and self._ports_taken(pod.host_ports, nodes, np.array([row]))[0]
        ):
            reason = PORTS_TAKEN
        elif volumes is not None and (found := self.volumes.row_reason(task, volumes, nodes, row)):
            reason = found
        elif self.links.active:
            reason = self.links.row_reason(task, nodes, terms, row)
        return PredicateResult(_ONE_ROW_FAILS if reason else _ONE_ROW_PASSES, reason, RESOLVABLE)

    def predicate_row(self, task: TaskInfo, nodes: NodeTable) -> RowPredicate | None:
        """``predicate`` as a function of one row, made once per shape: the filters that read
        only a node's flags, taints and labels (unschedulable, taints, node affinity) are
        answered for every row at once and kept per distinct (tolerations, selector); the pod
        count, host ports and pod-to-pod filters are read per call, in the same order. None
        for a pod whose volumes are checked: its rows go through ``predicate`` (``_check_row``),
        which reads the volume filters too."""
        if self.volumes.active and self.volumes.check(task) is not None:
            return None
        terms = self.node_terms(nodes)
        pod = task.terms
        static = self._static_reasons(terms, nodes, pod.tolerations, pod.selector)
        pods, max_pods = nodes.pod_count.item, nodes.max_pods.item
        ports = pod.host_ports if self.node_ports else frozenset()
        links = self.links.row_function(task, nodes, terms) if self.links.active else None
        if not ports and links is None:

            def reason(row: int) -> str:
                if pods(row) >= max_pods(row):  # pod_count + 1 > max_pods, in integers
                    return TOO_MANY_PODS
                return static[row]

            return reason

        def reason_of_linked(row: int) -> str:
            if pods(row) >= max_pods(row):
                return TOO_MANY_PODS
            why = static[row]
            if why:
                return why
            if ports and self._ports_taken(ports, nodes, np.array([row]))[0]:
                return PORTS_TAKEN
            return links(row) if links is not None else ""

        return reason_of_linked

    def _static_clear(
        self,
        terms: NodeTerms,
        nodes: NodeTable,
        tolerations: Tolerations,
        selector: Selector | None,
    ) -> bool:
        """Do the unschedulable, taint and node-affinity filters pass the pod on every row?
        (Kept with ``_static_reasons``.)"""
        reasons = self._static_reasons(terms, nodes, tolerations, selector)
        clear = self._clear.get(id(reasons))
        if clear is None or clear[0] is not reasons:
            clear = self._clear[id(reasons)] = (reasons, not any(reasons))
        return clear[1]

    def _static_reasons(
        self,
        terms: NodeTerms,
        nodes: NodeTable,
        tolerations: Tolerations,
        selector: Selector | None,
    ) -> list[str]:
        """Per row, the first of the unschedulable, taint and node-affinity filters that
        rejects the pod ("" where none does), as the vector path orders them; kept per
        distinct (tolerations, selector) while the table's epoch lasts."""
        if self._static_for != (terms, nodes.epoch):
            self._static.clear()
            self._clear.clear()
            self._static_for = (terms, nodes.epoch)
        if not self.node_affinity:
            selector = None
        key = (tolerations, selector)
        known = self._static.get(key)
        if known is not None:
            return known
        n = len(nodes)
        reasons = np.full(n, "", dtype=object)
        ok = np.ones(n, dtype=np.bool_)
        unschedulable = nodes.unschedulable
        if unschedulable.any() and not terms.tolerates_unschedulable(tolerations):
            reasons[unschedulable] = UNSCHEDULABLE
            ok &= ~unschedulable
        if self.taint_toleration:
            tainted, taint_reasons = terms.untolerated(tolerations)
            newly = tainted & ok
            reasons[newly] = taint_reasons[newly]
            ok &= ~tainted
        if selector is not None:
            reasons[~terms.selector(selector) & ok] = AFFINITY_MISMATCH
        known = self._static[key] = reasons.tolist()
        return known

    def _ports_taken(
        self, wanted: frozenset[HostPort], nodes: NodeTable, candidates: npt.NDArray[np.int64]
    ) -> BoolVector:
        """For each candidate row: does a pod there already bind one of the ``wanted`` ports?"""
        taken = np.zeros(len(candidates), dtype=np.bool_)
        for i, row in enumerate(candidates):
            node = nodes.nodes[int(row)]
            in_use: set[HostPort] = set()
            for other in node.tasks.values():
                if not other.status & COMPLETED_STATUSES:
                    in_use |= other.terms.host_ports
            if in_use and PortsInUse.of(in_use).conflicts(wanted):
                taken[i] = True
        return taken
