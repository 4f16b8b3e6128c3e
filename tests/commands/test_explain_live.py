"""``pumice explain`` live: the cluster found as kubectl finds it, listed once, nothing written.

Against the simulated API server: ``kubectl pumice explain pod …`` through the installed
``kubectl-pumice`` plugin (kubectl finds it on PATH), and ``pumice explain`` with the
kubeconfig from ``$KUBECONFIG``; the sim's write log must not grow.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from conftest import SimHandle

from pumice.commands.explain_live import context_namespace
from support.manifests import gang_pods, node, pod, podgroup

BIN = Path(sys.executable).parent
KUBECTL = "/usr/bin/kubectl"


async def run(*args: str, kubeconfig: Path, home: Path) -> tuple[int, str, str]:
    env = {
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
        "HOME": str(home),
        "KUBECONFIG": str(kubeconfig),
        "NO_PROXY": "127.0.0.1,localhost",
    }
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    proc = await asyncio.create_subprocess_exec(
        *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env
    )
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    return proc.returncode or 0, out.decode(), err.decode()


def seed(sim: SimHandle) -> None:
    sim.create(node("n1", "4", "8Gi"))
    sim.create(pod("busy", "3", node_name="n1"))
    sim.create(pod("big", "2"))
    sim.create(podgroup("job", 2))
    for member in gang_pods("job", 2, "1"):
        sim.create(member)


async def test_kubectl_pumice_explain_pod_writes_nothing(sim: SimHandle) -> None:
    seed(sim)
    before = len(sim.writes)
    code, out, err = await run(
        KUBECTL,
        "pumice",
        "explain",
        "pod",
        "big",
        "-n",
        "default",
        "-o",
        "json",
        kubeconfig=sim.kubeconfig,
        home=sim.workdir,
    )
    assert code == 0, err
    report = json.loads(out)
    assert report["target"] == "default/big" and report["kind"] == "Pod"
    assert report["status"] == "pending"
    assert report["node_reasons"] == {"Insufficient cpu": 1}
    assert {s["change"]["kind"] for s in report["suggestions"]} >= {"request", "add-node"}
    assert len(sim.writes) == before


async def test_pumice_explain_live_table_and_missing_target(sim: SimHandle) -> None:
    seed(sim)
    before = len(sim.writes)
    pumice = str(BIN / "pumice")
    code, out, err = await run(
        pumice, "explain", "--podgroup", "default/job", kubeconfig=sim.kubeconfig, home=sim.workdir
    )
    assert code == 0, err
    assert out.splitlines()[0] == "PodGroup default/job: pending"
    assert "SUGGESTIONS" in out
    code, _, err = await run(
        KUBECTL,
        "pumice",
        "explain",
        "podgroup",
        "nope",
        kubeconfig=sim.kubeconfig,
        home=sim.workdir,
    )
    assert code == 1 and "PodGroup default/nope does not exist" in err
    assert len(sim.writes) == before


def test_kubectl_namespace_defaults_to_the_contexts(tmp_path: Path) -> None:
    config = tmp_path / "kubeconfig"
    config.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: a\ncontexts:\n"
        "- {name: a, context: {cluster: c, user: u, namespace: batch}}\n"
        "- {name: b, context: {cluster: c, user: u}}\n"
    )
    assert context_namespace(str(config), None) == "batch"
    assert context_namespace(str(config), "b") == "default"
    assert context_namespace(str(tmp_path / "missing"), None) == "default"
