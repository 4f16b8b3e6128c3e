"""``pumice explain`` live: the cluster found as kubectl finds it, listed once, nothing written.

Against the simulated API server: ``kubectl pumice explain pod …`` through the installed
``kubectl-pumice`` plugin (kubectl finds it on PATH), and ``pumice explain`` with the
kubeconfig from ``$KUBECONFIG``; the sim's write log must not grow.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import sys
from pathlib import Path

import yaml
from conftest import SimHandle
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pumice.cli import context_namespace, main
from support.manifests import gang_pods, node, pod, podgroup, write_yaml

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


@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
async def test_live_explain_of_random_jobs_writes_nothing_and_agrees_offline(
    sim: SimHandle, tmp_path: Path, data: st.DataObject
) -> None:
    """Random gangs, each in a namespace of its own, added to one sim: the live answer is the
    offline answer for the same objects, and the sim's write log does not grow."""
    index = len(list(tmp_path.glob("seeded-*.yaml")))
    namespace = f"ex{index}"
    cpu = data.draw(st.sampled_from(["1", "3", "5"]))
    size = data.draw(st.integers(1, 3))
    objects = [node(f"{namespace}-n", data.draw(st.sampled_from(["2", "4"])))]
    objects.append(podgroup("job", size, namespace=namespace))
    objects += gang_pods("job", size, cpu, namespace=namespace)
    for obj in objects:
        sim.create(obj)
    write_yaml(tmp_path / f"seeded-{index}.yaml", objects)
    seeded = [o for f in sorted(tmp_path.glob("seeded-*.yaml")) for o in read_all(f)]
    before = len(sim.writes)
    target = ["--podgroup", f"{namespace}/job", "-o", "json"]
    code, out, err = await asyncio.to_thread(
        capture, ["explain", "--kubeconfig", str(sim.kubeconfig), *target]
    )
    assert code == 0, err
    assert len(sim.writes) == before
    offline = tmp_path / "offline.yaml"
    write_yaml(offline, seeded)
    code, expected, err = await asyncio.to_thread(capture, ["explain", str(offline), *target])
    assert code == 0, err
    live, wanted = json.loads(out), json.loads(expected)
    assert (live["status"], live["node_reasons"]) == (wanted["status"], wanted["node_reasons"])
    assert [s["change"] for s in live["suggestions"]] == [
        s["change"] for s in wanted["suggestions"]
    ]


def read_all(path: Path) -> list[dict[str, object]]:
    return [o for o in yaml.safe_load_all(path.read_text()) if o]


def capture(args: list[str]) -> tuple[int, str, str]:
    """``pumice ARGS`` in this process (a worker thread), its stdout and stderr captured."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return code, out.getvalue(), err.getvalue()
