"""``proportional``: keep cpu and memory for idle scarce devices, Volcano 1.13's companion of
resource-strategy-fit.

Hook: ``predicate(task, nodes)``. A task that asks for none of the listed devices may use a
node only if the node keeps, after it, the cpu and memory its idle devices need (so a CPU job
cannot strand a GPU node's GPUs). Arguments and rule: see ``pumice.plugins._scarce``
(``resources``, ``resourceProportion``; ``enable`` defaults to true here). The same check is
available as the ``proportional:`` map of ``resource-strategy-fit``.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from pumice import Arguments, NodeTable, Plugin, PredicateResult, TaskInfo, hookimpl
from pumice.plugins._scarce import Proportional


class ProportionalPlugin(Plugin):
    """Rejects nodes whose idle scarce devices would be left without cpu or memory."""

    row_local_reads_queue = False  # its row-local answers read the row and the shape only

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.proportional: Proportional | None = Proportional.parse("proportional", arguments)

    @hookimpl
    def predicate(
        self, task: TaskInfo, nodes: NodeTable, rows: npt.NDArray[np.int64] | None = None
    ) -> PredicateResult | None:
        # Row-local: the headroom check reads only the node's own idle columns.
        if self.proportional is None:
            return None
        return self.proportional.predicate(task, nodes, rows)
