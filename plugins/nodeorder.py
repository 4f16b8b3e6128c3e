"""``nodeorder``: kube-scheduler's node scores, each times its weight, summed.

Hooks: ``node_score(task, nodes, rows)`` — the resource scores, row-local (a node's score reads
only its own row); ``normalized_score(task, nodes, mask)`` — node affinity and taint toleration,
normalised over the candidate nodes ``mask`` as kube-scheduler normalises over the nodes that
passed filtering. Each is None when its scorers all have weight 0. Scores are in
kube-scheduler units (0..100 per scorer, ``MAX_NODE_SCORE``) with
kube-scheduler's integer arithmetic (truncating divisions), then multiplied by the weight.

Arguments (integers >= 0, declared in ``declared_arguments``; Volcano's names and defaults;
a weight of 0 switches a scorer off):

=========================  =======  ==========================================================
``leastrequested.weight``  1        NodeResourcesFit LeastAllocated over cpu and memory:
                                    per resource ``(alloc - req) * 100 // alloc`` (0 when
                                    ``alloc == 0`` or ``req > alloc``), node score
                                    ``(cpu + memory) // 2`` over the resources with
                                    ``alloc > 0``.
``mostrequested.weight``   0        MostAllocated: ``min(req, alloc) * 100 // alloc``,
                                    combined the same way.
``balancedresource.weight`` 1       NodeResourcesBalancedAllocation: fractions
                                    ``f = min(req / alloc, 1)`` of cpu and memory,
                                    ``int((1 - |f_cpu - f_mem| / 2) * 100)`` (100 with fewer
                                    than two resources with ``alloc > 0``); for a task that
                                    requests ``nvidia.com/gpu``, on nodes that have GPUs, the
                                    three fractions' standard deviation replaces
                                    ``|f_cpu - f_mem| / 2``, as Volcano configures it.
``nodeaffinity.weight``    2        NodeAffinity: the sum of the weights of the pod's
                                    preferred terms each node matches, normalised to 0..100
                                    (``100 * s // max``; all 0 when the maximum is 0).
``tainttoleration.weight`` 3        TaintToleration: the number of ``PreferNoSchedule`` taints
                                    not tolerated (by tolerations with an empty or
                                    PreferNoSchedule effect), normalised and reversed
                                    (``100 - 100 * c // max``; all 100 when the maximum is 0).
=========================  =======  ==========================================================

``req`` is what the node's pods already ask for (the table's ``used``) plus the task's request.
For least/most the task's request is the *non-zero* one (a container without a cpu or memory
request counts 100m / 200Mi), as kube-scheduler scores; balanced allocation uses the real
requests, as current kube-scheduler does (``useRequested``), and gives nothing for a pod
that requests neither cpu nor memory (kube-scheduler skips it, kubernetes#129138).

Deviations, on purpose:

* The node side of least/most is the real requests of the pods on the node (the table's
  ``used``); kube-scheduler counts request-less pods already on a node as 100m / 200Mi.
* A preferred term that is invalid (e.g. ``Gt`` with a non-integer) matches no node;
  kube-scheduler fails the pod's scoring instead.

``podaffinity.weight`` (2) and ``podtopologyspread.weight`` (2): InterPodAffinity's and
PodTopologySpread's (ScheduleAnyway) scores, counted over the placed pods and normalised over
the candidates (``pumice.plugins._podscores``); ``podaffinity.hardPodAffinityWeight`` (1,
0..100) weighs placed pods' required affinity terms toward the pod. A task that no such term
concerns gets the label scores alone, as before.

Accepted but **not implemented** (a warning is logged once per process when set to a non-zero
weight): ``imagelocality.weight`` (ImageLocality); its Volcano default (1) contributes nothing.

The task's non-zero request and terms come from the model (``task.nonzero_request`` with the
defaults of ``pumice.NON_ZERO_DEFAULTS``, ``task.terms``), computed once per pod object.

Speed: the resource scores are evaluated once per task shape and refreshed on the changed rows
(in Python floats for one row); preferred terms and toleration sets are evaluated once per
distinct form per session (``_k8s_terms.NodeTerms``), and when no node matches a preferred
term or has a counted taint the label scores are one constant vector, whatever the mask.
"""

from __future__ import annotations

import logging
import struct
from typing import Any

import numpy as np
import numpy.typing as npt

from pumice import (
    Arguments,
    ArgumentSpec,
    FloatMatrix,
    FloatVector,
    NodeTable,
    Plugin,
    Preferred,
    RowScore,
    SessionView,
    TaskInfo,
    TaskShape,
    Tolerations,
    config_warning,
    hookimpl,
)
from pumice.plugins._k8s_terms import NodeTerms
from pumice.plugins._podscores import PodLinkScores, SparseScore
from pumice.plugins._resource_rows import resource_row_score

log = logging.getLogger("pumice.plugins.nodeorder")


MAX_NODE_SCORE = 100
SCORED = ("cpu", "memory")
_Pair = tuple[float, float]
GPU = "nvidia.com/gpu"

LEAST_REQUESTED = "leastrequested.weight"
MOST_REQUESTED = "mostrequested.weight"
BALANCED_RESOURCE = "balancedresource.weight"
NODE_AFFINITY = "nodeaffinity.weight"
TAINT_TOLERATION = "tainttoleration.weight"
POD_AFFINITY = "podaffinity.weight"
POD_TOPOLOGY_SPREAD = "podtopologyspread.weight"
HARD_POD_AFFINITY = "podaffinity.hardPodAffinityWeight"
NOT_IMPLEMENTED = ("imagelocality.weight",)
SPARSE_ANSWERS_KEPT = 64
"""Pod-to-pod score vectors kept for answering the same numbers with the same object."""

# -- kube-scheduler's formulas, over N x len(SCORED) matrices -------------------------------


def _int_div(
    numerator: npt.NDArray[np.float64], denominator: npt.NDArray[Any] | float
) -> npt.NDArray[np.float64]:
    """Integer division of whole numbers held as floats (Go's ``/`` on non-negative int64).

    ``floor(a / b)`` is exact while ``a < 2**53``: a quotient that is not whole stays at least
    ``1 / b`` below the next integer, more than a rounding step. Canonical amounts are whole
    millicores and bytes, and ``bytes * 100`` stays below ``2**53`` up to 90 TB.
    """
    quotient: npt.NDArray[np.float64] = np.floor(numerator / denominator)
    return quotient


def _combine(per_resource: FloatMatrix, counted: npt.NDArray[np.bool_]) -> FloatVector:
    """``sum(score * w) // sum(w)`` with weight 1 for each counted resource (0 if none)."""
    total = np.zeros(len(per_resource))
    count = np.zeros(len(per_resource))
    for i in range(per_resource.shape[1]):  # two columns: cheaper than reductions along rows
        total += np.where(counted[:, i], per_resource[:, i], 0.0)
        count += counted[:, i]
    return np.where(count > 0, _int_div(total, np.maximum(count, 1.0)), 0.0)


def least_allocated(requested: FloatMatrix, allocatable: FloatMatrix) -> FloatVector:
    """NodeResourcesFit LeastAllocated with weight 1 per resource."""
    counted = allocatable > 0
    safe = np.where(counted, allocatable, 1.0)
    free = _int_div((allocatable - requested) * MAX_NODE_SCORE, safe)
    per = np.where(requested > allocatable, 0.0, free)
    return _combine(per, counted)


def most_allocated(requested: FloatMatrix, allocatable: FloatMatrix) -> FloatVector:
    """NodeResourcesFit MostAllocated with weight 1 per resource (requests clamped)."""
    counted = allocatable > 0
    safe = np.where(counted, allocatable, 1.0)
    per = _int_div(np.minimum(requested, allocatable) * MAX_NODE_SCORE, safe)
    return _combine(per, counted)


def balanced_allocation(requested: FloatMatrix, allocatable: FloatMatrix) -> FloatVector:
    """NodeResourcesBalancedAllocation over exactly two resources (cpu, memory)."""
    counted = allocatable > 0
    fractions = np.minimum(requested / np.where(counted, allocatable, 1.0), 1.0)
    both = counted[:, 0] & counted[:, 1]
    std = np.where(both, np.abs((fractions[:, 0] - fractions[:, 1]) / 2), 0.0)
    return np.trunc((1.0 - std) * float(MAX_NODE_SCORE))


def _with_gpu(
    balanced: FloatVector,
    nodes: NodeTable,
    rows: npt.NDArray[np.int64] | None,
    requested: FloatMatrix,
    allocatable: FloatMatrix,
    gpu_request: float,
) -> FloatVector:
    """Balanced allocation over cpu, memory and ``nvidia.com/gpu`` where the node has GPUs
    (Volcano's nodeorder lists the GPU among the balanced resources; kube-scheduler skips an
    extended resource the node lacks): the standard deviation of the three fractions."""
    gpu_alloc = _columns_of(nodes, "allocatable", GPU, rows)
    gpu_used = _columns_of(nodes, "used", GPU, rows)
    counted = (allocatable[:, 0] > 0) & (allocatable[:, 1] > 0) & (gpu_alloc > 0)
    if not counted.any():
        return balanced
    safe = np.where(counted, gpu_alloc, 1.0)
    fractions = np.column_stack(
        [
            np.minimum(
                requested[:, i] / np.where(allocatable[:, i] > 0, allocatable[:, i], 1.0), 1.0
            )
            for i in range(2)
        ]
        + [np.minimum((gpu_used + gpu_request) / safe, 1.0)]
    )
    mean = fractions.sum(axis=1) / 3
    std = np.sqrt(((fractions - mean[:, None]) ** 2).sum(axis=1) / 3)
    three = np.trunc((1.0 - std) * float(MAX_NODE_SCORE))
    return np.where(counted, three, balanced)


def _columns_of(
    nodes: NodeTable, quantity: str, name: str, rows: npt.NDArray[np.int64] | None
) -> FloatVector:
    col = nodes.column(quantity, name)
    n = len(nodes) if rows is None else len(rows)
    if col is None:
        return np.zeros(n)
    return col if rows is None else col[rows]


def normalize(
    scores: FloatVector, mask: npt.NDArray[np.bool_] | None = None, *, reverse: bool = False
) -> FloatVector:
    """kube-scheduler's ``DefaultNormalizeScore`` to 0..100 (integer division), the maximum
    taken over the candidate nodes in ``mask`` (every node when None)."""
    candidates = scores if mask is None else scores[mask]
    top = float(candidates.max()) if len(candidates) else 0.0
    if top <= 0:
        return np.full(len(scores), float(MAX_NODE_SCORE) if reverse else 0.0)
    out = _int_div(scores * MAX_NODE_SCORE, top)
    return MAX_NODE_SCORE - out if reverse else out


def _weight(name: str, default: int, doc: str) -> ArgumentSpec:
    return ArgumentSpec(name, "int", default, minimum=0, doc=doc)


class NodeOrderPlugin(Plugin):
    """Least/most requested, balanced resources, node affinity and taint toleration scores."""

    row_local_reads_queue = False  # its row-local answers read the row and the shape only

    declared_arguments = (
        _weight(LEAST_REQUESTED, 1, "NodeResourcesFit LeastAllocated"),
        _weight(MOST_REQUESTED, 0, "NodeResourcesFit MostAllocated"),
        _weight(BALANCED_RESOURCE, 1, "NodeResourcesBalancedAllocation"),
        _weight(NODE_AFFINITY, 2, "preferred node affinity"),
        _weight(TAINT_TOLERATION, 3, "PreferNoSchedule taints"),
        _weight(POD_AFFINITY, 2, "InterPodAffinity (preferred and existing pods' terms)"),
        _weight(POD_TOPOLOGY_SPREAD, 2, "PodTopologySpread (ScheduleAnyway)"),
        ArgumentSpec(
            HARD_POD_AFFINITY,
            "int",
            1,
            minimum=0,
            maximum=100,
            doc="InterPodAffinity: weight of existing pods' required affinity terms",
        ),
        *(_weight(name, 0, "accepted, not implemented") for name in NOT_IMPLEMENTED),
    )

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.least_weight: int = arguments.get_int(LEAST_REQUESTED, 1)
        self.most_weight: int = arguments.get_int(MOST_REQUESTED, 0)
        self.balanced_weight: int = arguments.get_int(BALANCED_RESOURCE, 1)
        self.affinity_weight: int = arguments.get_int(NODE_AFFINITY, 2)
        self.taint_weight: int = arguments.get_int(TAINT_TOLERATION, 3)
        self.links = PodLinkScores(
            arguments.get_int(POD_AFFINITY, 2),
            arguments.get_int(POD_TOPOLOGY_SPREAD, 2),
            arguments.get_int(HARD_POD_AFFINITY, 1),
        )
        for key in NOT_IMPLEMENTED:
            if arguments.get_int(key, 0) != 0:
                config_warning(
                    log,
                    plugin="nodeorder",
                    key=key,
                    message="set but not implemented in pumice; ignored",
                )
        self._terms: NodeTerms | None = None
        self._row_functions: dict[tuple[float, ...], tuple[NodeTable, int, RowScore]] = {}
        """Per distinct scored request: the row function for the one-row path."""
        self._raw_labels: dict[
            tuple[Preferred, Tolerations], tuple[FloatVector | None, FloatVector | None]
        ] = {}
        """Per distinct (preferred terms, tolerations): the raw affinity sums and soft-taint
        counts over every node, None where all are 0."""
        self._raw_by_shape: dict[TaskShape, tuple[FloatVector | None, FloatVector | None]] = {}
        """The same per task shape (whose terms hold the preferred terms and tolerations)."""
        self._flat: FloatVector | None = None
        self._flat_by_shape: dict[TaskShape, tuple[NodeTable, int, FloatVector]] = {}
        """Task shape -> the constant label scores answered for it, with the table and epoch
        they were answered for (asked per task: this skips the lookups that led to them)."""
        self._sparse_answers: dict[tuple[int, tuple[int, ...], bytes], FloatVector] = {}
        """(rows, their values and the rest's value) -> the read-only vector answered."""

    @property
    def enabled(self) -> bool:
        """Does any implemented scorer have a non-zero weight?"""
        return any(
            (
                self.least_weight,
                self.most_weight,
                self.balanced_weight,
                self.affinity_weight,
                self.taint_weight,
            )
        )

    def node_terms(self, nodes: NodeTable) -> NodeTerms:
        """The term cache for ``nodes`` (made again if the table is not the one cached)."""
        if self._terms is None or not self._terms.fits(nodes):
            self._terms = NodeTerms(nodes)
            self._raw_labels.clear()
            self._raw_by_shape.clear()
            self._flat = None
        return self._terms

    @hookimpl
    def node_score(
        self, task: TaskInfo, nodes: NodeTable, rows: npt.NDArray[np.int64] | None = None
    ) -> FloatVector | float | None:
        # Row-local: resource scores read the node's own row; the label scores are normalised
        # over every node once per session (labels and taints do not change within one).
        if not self.enabled:
            return None
        gpu = task.resreq[GPU]
        if rows is not None and len(rows) == 1 and not gpu:
            return self._row_function(task, nodes)(int(rows[0]))  # one row: a plain number
        n = len(nodes) if rows is None else len(rows)
        score = np.zeros(n)
        if self.least_weight or self.most_weight or self.balanced_weight:
            allocatable = _columns(nodes, "allocatable", rows)
            used = _columns(nodes, "used", rows)
            if self.least_weight or self.most_weight:
                non_zero = task.nonzero_request
                requested = used + np.array([non_zero[r] for r in SCORED])
                if self.least_weight:
                    score += self.least_weight * least_allocated(requested, allocatable)
                if self.most_weight:
                    score += self.most_weight * most_allocated(requested, allocatable)
            own = np.array([task.resreq[r] for r in SCORED])
            if self.balanced_weight and own.any():
                balanced = balanced_allocation(used + own, allocatable)
                if gpu:
                    balanced = _with_gpu(balanced, nodes, rows, used + own, allocatable, gpu)
                score += self.balanced_weight * balanced
        return score

    def node_score_row(self, task: TaskInfo, nodes: NodeTable) -> RowScore | None:
        """``node_score`` as a function of one row (``_row_function``); none for a task
        asking for GPUs (their balanced score reads a third column: the vector path)."""
        if not self.enabled or task.resreq[GPU]:
            return None
        return self._row_function(task, nodes)

    def _row_function(self, task: TaskInfo, nodes: NodeTable) -> RowScore:
        """``node_score`` for one row in Python floats: the same operations in the same order
        as the vector path (IEEE doubles, floor and trunc alike), so bit-for-bit equal, without
        numpy's per-call overhead on one element. Written out for the two ``SCORED``
        resources (cpu, memory), as balanced allocation is; made once per distinct request
        while the table's layout lasts."""
        non_zero, request = task.nonzero_request, task.resreq
        key = (non_zero[SCORED[0]], non_zero[SCORED[1]], request[SCORED[0]], request[SCORED[1]])
        known = self._row_functions.get(key)
        if known is not None and known[0] is nodes and known[1] == nodes.layout:
            return known[2]
        function = resource_row_score(
            nodes, (self.least_weight, self.most_weight, self.balanced_weight), key
        )
        self._row_functions[key] = (nodes, nodes.layout, function)
        return function

    @hookimpl
    def session_open(self, session: SessionView) -> None:
        self.links.open(session)

    @hookimpl
    def on_allocate(self, task: TaskInfo) -> None:
        self.links.place(task)

    @hookimpl
    def on_deallocate(self, task: TaskInfo) -> None:
        self.links.unplace(task)

    @hookimpl
    def normalized_score(
        self, task: TaskInfo, nodes: NodeTable, mask: npt.NDArray[np.bool_]
    ) -> FloatVector | None:
        """Node affinity, taint toleration and the pod-to-pod scores, normalised over the
        candidate nodes as kube-scheduler normalises them over the nodes that passed
        filtering."""
        # a task no pod-to-pod score concerns gets the label scores alone, as without them
        links = self.links
        links_active = links.active and links.applies(task, self.node_terms(nodes))
        if not links_active:
            known = self._flat_by_shape.get(task.shape)
            if known is not None and known[0] is nodes and known[1] == nodes.epoch:
                return known[2]  # the constant label scores of this shape, as last time
        labels = self._label_scores(task, nodes, mask)
        if not links_active:
            if labels is not None and labels is self._flat:
                self._flat_by_shape[task.shape] = (nodes, nodes.epoch, labels)
            return labels
        linked = links.score(task, nodes, self.node_terms(nodes), mask)
        if linked is None:
            return labels
        if isinstance(linked, SparseScore):
            if labels is None or labels is self._flat:
                return self._sparse_answer(linked, labels, len(nodes))
            linked = linked.dense(len(nodes))
        return linked if labels is None else labels + linked

    def _sparse_answer(self, links: SparseScore, flat: FloatVector | None, n: int) -> FloatVector:
        """``flat + links`` (``flat`` the constant label scores, or none) as a read-only vector,
        the same object for the same numbers: the session then keeps it among the shape's
        candidates' scores instead of summing it afresh for each task (the pods of a gang
        drawn to one node see the same scores one after the other)."""
        if flat is not None:
            if not links.rows and links.base == 0.0:
                return flat  # constant + 0: the constant, bit for bit
            links = links.plus(float(self.taint_weight * MAX_NODE_SCORE))  # flat's value
        key = (n, links.rows, struct.pack(f"{len(links.values) + 1}d", links.base, *links.values))
        known = self._sparse_answers.get(key)
        if known is None:
            if len(self._sparse_answers) >= SPARSE_ANSWERS_KEPT:
                self._sparse_answers.clear()
            known = self._sparse_answers[key] = links.dense(n)
            known.flags.writeable = False
        return known

    def _label_scores(
        self, task: TaskInfo, nodes: NodeTable, mask: npt.NDArray[np.bool_]
    ) -> FloatVector | None:
        if not (self.affinity_weight or self.taint_weight):
            return None
        terms = self.node_terms(nodes)
        shape = task.shape  # interned: tasks of one shape hit by identity, no key to build
        raw = self._raw_by_shape.get(shape)
        if raw is None:
            pod = task.terms
            key = (pod.preferred, pod.tolerations)
            raw = self._raw_labels.get(key)
            if raw is None:
                affinity = (
                    terms.preferred(pod.preferred)
                    if self.affinity_weight and pod.preferred
                    else None
                )
                taints = (
                    terms.prefer_no_schedule_counts(pod.tolerations) if self.taint_weight else None
                )
                raw = self._raw_labels[key] = (
                    None if affinity is None or not affinity.any() else affinity,
                    None if taints is None or not taints.any() else taints,
                )
            self._raw_by_shape[shape] = raw
        affinity, taints = raw
        if affinity is None and taints is None:
            # nothing to normalise: the scores are the same on every node, whatever the mask
            return self._constant(len(nodes))
        score = np.zeros(len(nodes))
        if self.affinity_weight and affinity is not None:
            score += self.affinity_weight * normalize(affinity, mask)
        if self.taint_weight:
            counts = taints if taints is not None else np.zeros(len(nodes))
            score += self.taint_weight * normalize(counts, mask, reverse=True)
        return score

    def _constant(self, n: int) -> FloatVector:
        """The label scores when no node matches a preferred term or has a counted taint."""
        if self._flat is None or len(self._flat) != n:
            self._flat = np.full(n, float(self.taint_weight * MAX_NODE_SCORE))
            self._flat.flags.writeable = False
        return self._flat


def _columns(nodes: NodeTable, quantity: str, rows: npt.NDArray[np.int64] | None) -> FloatMatrix:
    """The cpu and memory columns of ``quantity`` over ``rows`` (all when None), zeros for a
    dimension the table lacks."""
    out = np.zeros((len(nodes) if rows is None else len(rows), len(SCORED)))
    for i, name in enumerate(SCORED):
        col = nodes.column(quantity, name)
        if col is not None:
            out[:, i] = col if rows is None else col[rows]
    return out
