"""``pumice sim-cluster`` as a subprocess: seeded from a file and generators, used by kubectl,
stopped by its pid; bad input is a one-line error with exit code 2."""

from __future__ import annotations

import asyncio
import signal
import socket
import sys
from pathlib import Path

import pytest

from sim.simkit import run_kubectl

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "conf" / "examples" / "cluster.yaml"
PUMICE = [sys.executable, "-c", "import sys; from pumice.cli import main; sys.exit(main())"]


async def start(*args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        *PUMICE,
        "sim-cluster",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def banner(proc: asyncio.subprocess.Process) -> dict[str, str]:
    """The three lines printed once the server is up."""
    assert proc.stdout is not None
    lines = [
        (await asyncio.wait_for(proc.stdout.readline(), 30)).decode().strip() for _ in range(3)
    ]
    assert lines[0].startswith("pumice sim-cluster: serving http://127.0.0.1:"), lines
    return {
        "serving": lines[0],
        "kubeconfig": lines[1].removeprefix("kubeconfig: "),
        "admin": lines[2].removeprefix("admin: "),
    }


async def stop(proc: asyncio.subprocess.Process) -> tuple[int, str]:
    proc.send_signal(signal.SIGTERM)
    _, err = await asyncio.wait_for(proc.communicate(), 30)
    return proc.returncode if proc.returncode is not None else -1, err.decode()


async def failing(*args: str) -> tuple[int, str]:
    proc = await start(*args)
    _, err = await asyncio.wait_for(proc.communicate(), 30)
    return proc.returncode if proc.returncode is not None else -1, err.decode()


async def test_serves_the_example_cluster_to_kubectl(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "out" / "kubeconfig"
    proc = await start(
        "--cluster",
        str(EXAMPLE),
        "--nodes",
        "3",
        "--node-template",
        "cpu=4,memory=8Gi,pods=20",
        "--kubeconfig-out",
        str(kubeconfig),
    )
    try:
        info = await banner(proc)
        assert info["kubeconfig"] == str(kubeconfig)
        assert "7 Pod" in info["serving"]
        nodes = await run_kubectl(kubeconfig, tmp_path, "get", "nodes", "-o", "name")
        assert nodes.code == 0, nodes.stderr
        names = nodes.stdout.split()
        assert "node/gpu-1" in names
        assert {"node/sim-node-0", "node/sim-node-1", "node/sim-node-2"} <= set(names)
        pods = await run_kubectl(kubeconfig, tmp_path, "get", "pods", "-A")
        assert len(pods.stdout.strip().splitlines()) == 1 + 7
        pgs = await run_kubectl(kubeconfig, tmp_path, "get", "podgroups", "-n", "batch")
        assert "train" in pgs.stdout
    finally:
        code, err = await stop(proc)
    assert code == 0, err
    assert kubeconfig.exists()  # an explicit path is left in place


async def test_default_kubeconfig_is_temporary(tmp_path: Path) -> None:
    proc = await start("--no-defaults")
    try:
        info = await banner(proc)
        kubeconfig = Path(info["kubeconfig"])
        assert kubeconfig.exists()
        version = await run_kubectl(kubeconfig, tmp_path, "version", "-o", "json")
        assert '"gitVersion": "v1.32.0-pumice-sim"' in version.stdout
    finally:
        code, err = await stop(proc)
    assert code == 0, err
    assert not kubeconfig.exists()


async def test_node_template_file(tmp_path: Path) -> None:
    template = tmp_path / "node.yaml"
    template.write_text(
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: big\n  labels: {pool: big}\n"
        "status:\n  capacity: {cpu: '64', memory: 512Gi, pods: '110'}\n"
    )
    proc = await start("--nodes", "12", "--node-template", str(template), "--no-defaults")
    try:
        info = await banner(proc)
        result = await run_kubectl(
            Path(info["kubeconfig"]), tmp_path, "get", "nodes", "-l", "pool=big", "-o", "name"
        )
        assert result.stdout.split()[:2] == ["node/big-00", "node/big-01"]
        assert len(result.stdout.split()) == 12
    finally:
        await stop(proc)


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (
            "apiVersion: v1\nkind: Node\nmetadata: {name: a}\n---\nkind: [\n",
            "document 2: invalid YAML",
        ),
        ("apiVersion: v1\nkind: Node\n", "document 1: Node: missing 'metadata' mapping"),
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: []}\n",
            "Pod default/p: spec.containers: Required value",
        ),
    ],
)
async def test_bad_manifest_is_exit_2_naming_the_file(
    tmp_path: Path, content: str, words: str
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(content)
    code, err = await failing("--cluster", str(bad))
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"pumice sim-cluster: error: {bad}")
    assert words in lines[0]


async def test_other_bad_input_is_exit_2_naming_the_flag(tmp_path: Path) -> None:
    code, err = await failing("--cluster", str(tmp_path / "nope.yaml"))
    missing = tmp_path / "nope.yaml"
    assert code == 2
    assert err.strip() == (
        f"pumice sim-cluster: error: {missing}: cannot read: No such file or directory"
    )
    code, err = await failing("--nodes", "2", "--node-template", "cpu4")
    assert code == 2
    assert err.startswith("pumice sim-cluster: error: --node-template 'cpu4'")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, err = await failing("--port", str(port))
    assert code == 2
    assert err.startswith(f"pumice sim-cluster: error: --port {port}:")
