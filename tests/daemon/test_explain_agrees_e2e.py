"""One explanation path: the daemon's dry-run line and ``pumice simulate --explain`` give the
same numbers for the same placement, ``normalized_score`` included, taken before the placement.

The cluster is four identical nodes, so every per-node score a plugin computes from the node's
resources is the same on each: what sets them apart is nodeorder's ``normalized_score`` alone
(preferred node affinity, and a ``PreferNoSchedule`` taint), which the daemon's dry-run line
used to leave out, and which it now reports as ``simulate --explain`` does.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from pathlib import Path
from typing import Any

import pytest
from sim.simkit import node

from daemon.workload import pod, seed
from support.daemonrun import running_daemon, wait_for, write_config
from support.manifests import run_cli, write_yaml

pytestmark = pytest.mark.slow

Obj = dict[str, Any]
LINE = re.compile(
    r"dry-run: bind batch/picky to (?P<node>\S+) \(scores before placement: (?P=node) "
    r"(?P<total>\S+) \[(?P<parts>[^\]]*)\]; next best (?P<other>\S+) (?P<other_total>\S+) "
    r"\[(?P<other_parts>[^\]]*)\]\)"
)


def zoned(name: str, zone: str, *, soft_taint: bool = False) -> Obj:
    body = node(name, cpu="8", memory="32Gi")
    body["metadata"]["labels"]["topology.kubernetes.io/zone"] = zone
    if soft_taint:
        body["spec"] = {"taints": [{"key": "spot", "value": "yes", "effect": "PreferNoSchedule"}]}
    return body


def picky_pod() -> Obj:
    """A pod that prefers zone b (weight 80) over zone c (weight 20)."""
    body = pod("picky", cpu="1", memory="1Gi")
    preferred = [
        {
            "weight": weight,
            "preference": {
                "matchExpressions": [
                    {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]}
                ]
            },
        }
        for zone, weight in (("b", 80), ("c", 20))
    ]
    body["spec"]["affinity"] = {
        "nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferred}
    }
    return body


def cluster() -> list[Obj]:
    return [
        zoned("n-a", "a"),
        zoned("n-b1", "b", soft_taint=True),
        zoned("n-b2", "b"),
        zoned("n-c", "c"),
        picky_pod(),
    ]


def parts_of(text: str) -> dict[str, float]:
    pairs = (item.split("=") for item in text.split())
    return {name: float(value) for name, value in pairs}


async def dry_run_line(sim: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> re.Match[str]:
    seed(sim, cluster())
    caplog.set_level(logging.INFO, logger="pumice")
    async with running_daemon(sim.kubeconfig, write_config(tmp_path), dry_run=True) as daemon:
        await wait_for(lambda: daemon.cycles >= 1 and "dry-run: bind batch/picky" in caplog.text)
        await asyncio.sleep(0)
    found = LINE.search(caplog.text)
    assert found is not None, caplog.text
    return found


def simulate_scores(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[str, Obj]:
    path = write_yaml(tmp_path / "cluster.yaml", cluster())
    config = write_config(tmp_path)
    args = ["simulate", str(path), "--config", str(config), "--explain", "--output", "json"]
    code, out, err = run_cli(args, capsys)
    assert code == 0, err
    (placement,) = json.loads(out)["placements"]
    assert placement["pod"] == "batch/picky"
    return placement["node"], placement["scores"]


async def test_the_dry_run_line_and_simulate_explain_agree_with_normalized_scores(
    sim: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    line = await dry_run_line(sim, tmp_path, caplog)
    chosen, scores = simulate_scores(tmp_path, capsys)

    # the same node, and the same runner-up (the best scored of the others)
    assert line["node"] == chosen == "n-b2"
    others = {n: s for n, s in scores.items() if n != chosen}
    runner_up = min(others, key=lambda n: (-others[n]["total"], n))
    assert line["other"] == runner_up

    # the same figures, plugin by plugin (the line prints four significant digits)
    for node_name, total, parts in (
        (chosen, line["total"], line["parts"]),
        (runner_up, line["other_total"], line["other_parts"]),
    ):
        expected = scores[node_name]
        assert float(total) == pytest.approx(expected["total"], rel=1e-3)
        logged = parts_of(parts)
        assert set(logged) == set(expected) - {"total"}
        for plugin, value in logged.items():
            assert value == pytest.approx(expected[plugin], rel=1e-3, abs=1e-3)

    # normalized_score decides here: the plugins that score the (identical) nodes' resources
    # give every node the same figure, nodeorder's normalised affinity and taint scores do not
    assert len({round(s["binpack"], 6) for s in scores.values()}) == 1
    nodeorder = {n: s["nodeorder"] for n, s in scores.items()}
    assert max(nodeorder, key=nodeorder.__getitem__) == "n-b2"  # zone b, untainted
    assert nodeorder["n-b1"] < nodeorder["n-b2"]  # zone b too, but the PreferNoSchedule taint
    assert nodeorder["n-c"] > nodeorder["n-a"]  # the weaker preference beats none
    # taken before the placement: the chosen node never shows less than the next best
    assert float(line["total"]) >= float(line["other_total"])
