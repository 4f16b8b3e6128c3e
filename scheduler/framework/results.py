"""Values that hooks return and that the session hands back: votes, predicate results,
feasibility over all nodes, and the reason a job is invalid."""

from __future__ import annotations

import enum
from collections import Counter
from dataclasses import dataclass

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
    nodes are ignored).
    """

    mask: npt.NDArray[np.bool_]
    reasons: str | npt.NDArray[np.object_]


@dataclass(frozen=True, slots=True)
class Feasibility:
    """Which nodes may take a task, with the first reason for each node that may not."""

    mask: npt.NDArray[np.bool_]
    reasons: npt.NDArray[np.object_]

    @property
    def feasible(self) -> int:
        return int(self.mask.sum())

    def reason_counts(self) -> Counter[str]:
        """How many nodes were rejected for each reason."""
        return Counter(str(r) for r in self.reasons[~self.mask])

    def message(self) -> str:
        """The kube-scheduler style summary: ``0/5 nodes are available: 3 Insufficient cpu.``"""
        total = len(self.mask)
        counts = sorted(self.reason_counts().items(), key=lambda kv: (-kv[1], kv[0]))
        detail = ", ".join(f"{n} {reason}" for reason, n in counts)
        head = f"{self.feasible}/{total} nodes are available"
        return f"{head}: {detail}." if detail else f"{head}."


@dataclass(frozen=True, slots=True)
class JobInvalid:
    """Why a job may not be scheduled this session (from ``job_valid``)."""

    reason: str
    message: str = ""
