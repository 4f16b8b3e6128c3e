"""``sra``: scarce-resource avoidance, Volcano 1.13's companion of resource-strategy-fit.

Hook: ``node_score(task, nodes)``. Tasks that do not need a scarce device (a GPU) prefer nodes
that have none, so the GPU nodes stay free for the tasks that need them. Arguments and formula:
see ``pumice.plugins._scarce`` (``resources``, ``weight``, ``resourceWeight``; ``enable``
defaults to true here). The same scoring is available as the ``sra:`` map of
``resource-strategy-fit``, where Volcano configurations put it.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from pumice import Arguments, NodeTable, Plugin, TaskInfo, hookimpl
from pumice.plugins._scarce import Sra


class SraPlugin(Plugin):
    """Keeps tasks that need no scarce device off the nodes that have one."""

    row_local_reads_queue = False  # its row-local answers read the row and the shape only

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.sra: Sra | None = Sra.parse("sra", arguments)

    @hookimpl
    def node_score(
        self, task: TaskInfo, nodes: NodeTable, rows: npt.NDArray[np.int64] | None = None
    ) -> npt.NDArray[np.float64] | None:
        # Row-local: a node's score reads only its own allocatable.
        if self.sra is None:
            return None
        if rows is not None and len(rows) == 1:
            return np.array([self.sra.score_row(task, nodes, int(rows[0]))])
        return self.sra.node_score(task, nodes, rows)
