"""Values that hooks return and that the session hands back: votes, predicate results,
feasibility over all nodes, the reason a job is invalid, and a plugin's metric sample."""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt


class Vote(enum.IntEnum):
    """A plugin's answer to a voting hook (job_pipelined, job_enqueueable)."""

    REJECT = -1
    ABSTAIN = 0
    PERMIT = 1


@dataclass(frozen=True, slots=True)
class PredicateResult:
    """A predicate's answer: which nodes pass, and why the others do not.

    ``reasons`` is one reason for every rejected node, or one per node (entries for passing
    nodes are ignored). ``resolvable`` names the reasons that evicting pods from the node may
    cure (kube-scheduler's ``Unschedulable`` as opposed to ``UnschedulableAndUnresolvable``):
    preempt and reclaim try such nodes, and only those, besides the nodes that pass. Every
    other reason is unresolvable. A node with several reasons gets a ``ReasonList``.

    ``prefilter``: the reason belongs to the pod, not to any node (kube-scheduler's PreFilter
    rejections, e.g. ``persistentvolumeclaim "data" not found``): every node is rejected with
    the one string ``reasons``, and the task's message reads ``0/N nodes are available:
    <reason>.``, without a count and whatever else rejected the nodes.
    """

    mask: npt.NDArray[np.bool_]
    reasons: str | npt.NDArray[np.object_]
    resolvable: frozenset[str] = frozenset()
    prefilter: bool = False


class ReasonList(str):
    """Several reasons for one node (kube-scheduler's status with more than one reason): the
    string reads as the reasons joined by ``", "``, and ``Feasibility`` counts each of
    ``parts`` on its own, as kube-scheduler's message does."""

    parts: tuple[str, ...]

    def __new__(cls, parts: tuple[str, ...]) -> ReasonList:
        made = super().__new__(cls, ", ".join(parts))
        made.parts = parts
        return made

    def __reduce__(self) -> tuple[object, ...]:
        return (ReasonList, (self.parts,))


@dataclass(slots=True)
class PredicatePart:
    """One predicate plugin's answer over every node: the mask, and the reason for each node
    it rejects (one string for all, or one per node)."""

    name: str
    mask: npt.NDArray[np.bool_]
    reasons: npt.NDArray[np.object_] | str
    resolvable: frozenset[str] = frozenset()
    """The reasons that evicting pods may cure (see ``PredicateResult``)."""
    prefilter: bool = False
    """The reason is the pod's own and rejects every node (see ``PredicateResult``)."""

    def resolvable_mask(self) -> npt.NDArray[np.bool_]:
        """Nodes this plugin passes, or rejects only for a resolvable reason."""
        if not self.resolvable or self.mask.all():
            return self.mask
        reasons = self.reasons
        if isinstance(reasons, str):
            return np.ones_like(self.mask) if reasons in self.resolvable else self.mask
        cured = self.mask.copy()
        for reason in self.resolvable:
            cured |= reasons == reason
        return cured


class Feasibility:
    """Which nodes may take a task, with the first reason for each node that may not.

    The reasons are worked out from the plugins' parts only when asked for (a task that finds
    a node never needs them).
    """

    __slots__ = ("_reasons", "mask", "parts")

    def __init__(
        self,
        mask: npt.NDArray[np.bool_],
        reasons: npt.NDArray[np.object_] | None = None,
        parts: Sequence[PredicatePart] = (),
    ) -> None:
        self.mask = mask
        self.parts = tuple(parts)
        self._reasons = reasons

    @property
    def reasons(self) -> npt.NDArray[np.object_]:
        """The first failing plugin's reason for every node ('' where every plugin passed)."""
        if self._reasons is None:
            n = len(self.mask)
            reasons = np.full(n, "", dtype=object)
            undecided = np.ones(n, dtype=np.bool_)
            for part in self.parts:
                newly = undecided & ~part.mask
                if newly.any():
                    why = part.reasons
                    reasons[newly] = why if isinstance(why, str) else why[newly]
                    undecided &= part.mask
            self._reasons = reasons
        return self._reasons

    def preemption_candidates(self) -> npt.NDArray[np.bool_]:
        """Nodes where evicting pods may let the task in: every plugin passes, or rejects
        only for a reason it calls resolvable (whether it then does is checked with the
        victims gone: ``pumice.framework.action.predicate_once_gone``)."""
        mask = np.ones(len(self.mask), dtype=np.bool_)
        for part in self.parts:
            mask &= part.resolvable_mask()
        return mask if self.parts else self.mask.copy()

    @property
    def feasible(self) -> int:
        return int(self.mask.sum())

    def reason_counts(self) -> Counter[str]:
        """How many nodes were rejected for each reason (each of a ``ReasonList``'s parts)."""
        counts: Counter[str] = Counter()
        for reason in self.reasons[~self.mask]:
            if isinstance(reason, ReasonList):
                counts.update(reason.parts)
            else:
                counts[str(reason)] += 1
        return counts

    def prefilter_reason(self) -> str | None:
        """The pod's own reason (a ``prefilter`` part, the first in tier order), if any."""
        for part in self.parts:
            if part.prefilter and not part.mask.any():
                return str(part.reasons)
        return None

    def message(
        self,
        shortfall: npt.NDArray[np.bool_] | None = None,
        dims: Sequence[str] = (),
    ) -> str:
        """kube-scheduler's summary: ``0/5 nodes are available: 2 Insufficient memory, 3 Too
        many pods.`` — one ``"<count> <reason>"`` part per reason, the parts sorted as strings.

        A node that fails a predicate counts once, under the first predicate's reason.
        ``shortfall`` (nodes x dimensions, named by ``dims``) marks where a request exceeds what
        a node has; a node that passed every predicate counts once under ``Insufficient <dim>``
        for each dimension it is short of, and is not available. A reason of the pod's own
        (``prefilter``) is the whole message, without a count, as kube-scheduler writes a
        PreFilter rejection: ``0/3 nodes are available: pod has unbound immediate
        PersistentVolumeClaims.``
        """
        pod_reason = self.prefilter_reason()
        if pod_reason is not None:
            return f"0/{len(self.mask)} nodes are available: {pod_reason}."
        counts = self.reason_counts()
        available = self.mask
        if shortfall is not None:
            short = shortfall.any(axis=1)
            per_dim = shortfall[self.mask & short].sum(axis=0)
            for index in np.flatnonzero(per_dim):
                counts[_shortage(dims[int(index)])] += int(per_dim[index])
            available = self.mask & ~short
        # kube-scheduler sorts the "<count> <reason>" parts as strings (so "10 …" precedes "2 …")
        detail = ", ".join(sorted(f"{n} {reason}" for reason, n in counts.items()))
        head = f"{int(available.sum())}/{len(self.mask)} nodes are available"
        return f"{head}: {detail}." if detail else f"{head}."


def _shortage(dimension: str) -> str:
    """kube-scheduler's reason for a node short of ``dimension``: ``Insufficient cpu``, but
    ``Too many pods`` for the pod count."""
    return "Too many pods" if dimension == "pods" else f"Insufficient {dimension}"


@dataclass(frozen=True, slots=True)
class JobInvalid:
    """Why a job may not be scheduled this session (from ``job_valid``)."""

    reason: str
    message: str = ""


@dataclass(frozen=True, slots=True)
class MetricSample:
    """One sample of a plugin's metric (``metric_samples``): exposed by the daemon as
    ``pumice_<plugin>_<name>``, a gauge (or a counter: ``kind="counter"``, ``_total``
    appended) with these labels. Samples of one name must share their label names."""

    name: str
    value: float
    labels: Mapping[str, str] = field(default_factory=dict)
    help: str = ""
    kind: str = "gauge"
