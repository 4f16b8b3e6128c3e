"""Verifying a suggestion: the whole run again, on the objects with the change made.

A change is made on a copy of the input objects (``explain_changes.apply_change``) — the
edit a user would make on the manifests — and the result is run exactly as ``pumice
simulate`` runs it (``explain_core.run_cluster``: the same feed through the cache handlers,
the same sessions, every other pending job included, in the session's own order, cycle after
cycle). The change admits the job when that run places every pod of the target that waits;
the run stops as soon as it has. Anything less — one session on the explaining run's settled
cache, say — decides on a state the changed manifests never produce (the other pending jobs
already placed), and what it "verifies" may then fail when the user applies it.

A run costs as much as the explaining run itself, so verification has a CPU budget
(``Verifier.budget``, in seconds of this thread's CPU): no run starts once it is spent, and
a candidate not run is not verified, so it is not listed.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from pumice.commands.explain_changes import apply_change
from pumice.commands.explain_core import Pace, run_cluster
from pumice.commands.explain_target import Target
from pumice.framework.config import SchedulerConfig
from pumice.framework.host import PluginHost
from pumice.plain import Obj

MIN_BUDGET = 2.0
"""Seconds of CPU verification may always take (small clusters never come near it)."""


class Verifier:
    """Runs candidate changes of ``objects`` and says which admit the target."""

    def __init__(
        self,
        objects: list[Obj],
        target: Target,
        config: SchedulerConfig,
        host: PluginHost,
        scheduler_name: str,
        *,
        budget: float = MIN_BUDGET,
        pace: Pace | None = None,
        tidy: Callable[[], object] | None = None,
    ) -> None:
        self.objects = objects
        self.target = target
        self.config = config
        self.host = host
        self.scheduler_name = scheduler_name
        self.budget = budget
        self.pace = pace
        self.tidy = tidy
        """Called before each run but the first: the command frees the garbage of the runs
        before it there (its collector is paused), and so never pays for the last run's
        (0.2 s on the bench cluster) nor for the explaining run's when one run verifies."""
        self.runs = 0
        self.spent = 0.0
        """Seconds of this thread's CPU the runs took."""

    def admits(self, change: Obj) -> bool:
        """Does the run of the changed objects place every waiting pod of the target?"""
        if self.spent >= self.budget:
            return False
        started = time.thread_time()
        try:
            if self.runs and self.tidy is not None:
                self.tidy()
            self.runs += 1
            changed = apply_change(self.objects, change, self.target)
            result = run_cluster(
                changed,
                self.target,
                self.config,
                self.host,
                self.scheduler_name,
                detail=False,
                until_placed=True,
                pace=self.pace,
            )
        finally:
            self.spent += time.thread_time() - started
        return result.exists and not result.pending and bool(result.placed)
