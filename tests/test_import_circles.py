"""No import circle between pumice's modules, type-checking and function-level imports included.

The graph is grimp's default one (what import-linter reads): every ``import`` statement of a
module counts, also those under ``if TYPE_CHECKING:`` and those inside functions, because a
module that takes a higher one back for a type hint, or imports it later, is still tied to it.
Where a module needs only the shape of a higher one, it declares a ``Protocol`` (for example
``pumice.daemon.health.ProbedDaemon``), or the shared piece moves down.

grimp finds a package through ``importlib``; the editable install maps ``pumice`` onto several
folders, which it cannot follow, so the test lays the folders out as the wheel does (as
``make pkgtree`` does for mypy and import-linter) and asks grimp in a child process.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAPPING = {"scheduler": "pumice", "plugins": "pumice/plugins", "actions": "pumice/actions"}

_LIST_IMPORTS = """
import json, sys
import grimp
graph = grimp.build_graph("pumice", cache_dir=None)
json.dump({m: sorted(graph.find_modules_directly_imported_by(m)) for m in graph.modules},
          sys.stdout)
"""


def circles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, without recursion),
    each sorted, in order of their first module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            nxt = next(edges, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


@pytest.fixture(scope="module")
def import_graph(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    tree = tmp_path_factory.mktemp("pkgtree")
    for folder, target in MAPPING.items():
        shutil.copytree(ROOT / folder, tree / target, ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(
        [sys.executable, "-c", _LIST_IMPORTS],
        env=env,
        cwd=tree,
        capture_output=True,
        text=True,
        check=True,
    )
    graph: dict[str, list[str]] = json.loads(done.stdout)
    return graph


def test_the_graph_is_read_from_the_laid_out_tree(import_graph: dict[str, list[str]]) -> None:
    # Every mapped folder is in, packages' __init__ modules too, with type-checking imports
    # (pumice.daemon.metrics names CycleOutcome only under TYPE_CHECKING) and function-level
    # ones (pumice.cli loads logging setup only where used).
    assert {"pumice", "pumice.plugins", "pumice.actions.allocate", "pumice.sim"} <= set(
        import_graph
    )
    assert "pumice.daemon.outcome" in import_graph["pumice.daemon.metrics"]
    assert "pumice.logs" in import_graph["pumice.cli"]


def test_no_import_circle_between_modules(import_graph: dict[str, list[str]]) -> None:
    found = circles(import_graph)
    assert found == [], "import circles (strongly connected components): " + "; ".join(
        " <-> ".join(c) for c in found
    )


def test_circles_finds_a_circle_closed_far_away() -> None:
    graph = {"a": ["b"], "b": ["c"], "c": ["a", "d"], "d": [], "e": ["e"], "f": ["d"]}
    assert circles(graph) == [["a", "b", "c"]]
    assert circles({"x": ["y"], "y": []}) == []
