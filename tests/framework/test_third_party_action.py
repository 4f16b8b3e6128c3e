"""A third-party action written from docs/actions.md alone: tests/fixtures/example_action, a
package installed beside pumice (into build/test-plugins, never .venv) and found through the
``pumice`` entry-point group, is configured, run by ``pumice simulate`` and places pods.

The page and the package are kept honest together: the package's code is the page's example,
and it imports nothing of pumice but ``pumice`` itself (tests/test_contract_docs.py checks that
the page names every member of ``ActionContext``).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from pumice.framework.host import PluginHost
from support.manifests import gang_pods, node, pod, podgroup, run_cli, simulate

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "actions.md"
PACKAGE = ROOT / "tests" / "fixtures" / "example_action" / "pumice_example_action"
CONFIG = """\
actions: "enqueue, greedy-allocate"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
configurations:
- name: greedy-allocate
  arguments: {stopAtFirstFailure: true}
"""


def test_the_package_is_found_through_the_entry_point_group() -> None:
    provided = PluginHost.discover().get("greedy-allocate")
    assert provided is not None
    assert (provided.kind, provided.package, provided.version) == (
        "action",
        "pumice-example-action",
        "0.2.0",
    )


def test_simulate_runs_the_third_party_action(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    objects = [node("n1", "4", "8Gi"), node("n2", "4", "8Gi")]
    objects += [podgroup("pair", 2), *gang_pods("pair", 2, "1")]
    objects += [podgroup("trio", 3), *gang_pods("trio", 3, "3")]  # only two fit the nodes
    objects += [pod("huge", "5")]  # within the queue's share, more than any node has
    result = simulate(tmp_path, objects, capsys, config=CONFIG)
    placed = {p["pod"]: p["action"] for p in result["placements"]}
    assert placed == {"default/pair-0": "greedy-allocate", "default/pair-1": "greedy-allocate"}
    pending = {u["pod"]: u["message"] for u in result["unschedulable"]}
    assert pending["default/huge"] == "0/2 nodes are available: 2 Insufficient cpu."
    # the gang of three did not become ready: what the action placed of it was undone
    assert {"default/trio-0", "default/trio-1", "default/trio-2"} <= set(pending)


def test_pumice_plugins_lists_it(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(["plugins"], capsys)
    assert code == 0
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line.strip()}
    assert rows["greedy-allocate"][1:4] == ["action", "pumice-example-action", "0.2.0"]


def test_the_package_is_the_pages_example_and_imports_only_pumice() -> None:
    source = (PACKAGE / "__init__.py").read_text()
    example = PAGE.read_text().split("## A whole action", 1)[1]
    code = re.search(r"```python\n(.*?)```", example, re.S)
    assert code is not None and code.group(1) in source
    imported = [
        n.module if isinstance(n, ast.ImportFrom) else alias.name
        for n in ast.walk(ast.parse(source))
        if isinstance(n, ast.Import | ast.ImportFrom)
        for alias in n.names
    ]
    assert imported and set(imported) == {"pumice"}
