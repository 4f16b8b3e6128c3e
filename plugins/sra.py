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
from pumice.plugins._capacity import CapacityCache
from pumice.plugins._scarce import Sra


class SraPlugin(Plugin):
    """Keeps tasks that need no scarce device off the nodes that have one."""

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.sra: Sra | None = Sra.parse("sra", arguments)
        self._cache = CapacityCache()

    @hookimpl
    def node_score(self, task: TaskInfo, nodes: NodeTable) -> npt.NDArray[np.float64] | None:
        if self.sra is None:
            return None
        return self.sra.node_score(task, nodes, self._cache)
