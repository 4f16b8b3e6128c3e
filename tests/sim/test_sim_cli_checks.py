"""``pumice sim-cluster`` checks what it is given: seed manifests are validated like requests
(one line naming file, object and field, exit 2), seeded objects replace built-in defaults of
the same name (with a note), flags are validated, and ``--help`` shows the defaults."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from sim.simkit import run_kubectl
from sim.test_sim_cli import PUMICE, banner, failing, start, stop

QUEUE_DEFAULT = """\
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: default}
spec: {weight: 7, reclaimable: false}
"""


async def test_a_seeded_default_queue_replaces_the_built_in_one(tmp_path: Path) -> None:
    seed = tmp_path / "queues.yaml"
    seed.write_text(QUEUE_DEFAULT)
    proc = await start("--cluster", str(seed))
    try:
        info = await banner(proc)
        assert "(1 Queue)" in info["serving"]
        got = await run_kubectl(
            Path(info["kubeconfig"]), tmp_path, "get", "queue", "default", "-o", "json"
        )
        assert got.code == 0, got.stderr
        spec = json.loads(got.stdout)["spec"]
        assert spec["weight"] == 7
        assert spec["reclaimable"] is False
    finally:
        code, err = await stop(proc)
    assert code == 0
    assert f"pumice sim-cluster: note: {seed}: Queue default replaces the built-in default" in err


@pytest.mark.parametrize(
    ("manifest", "line"),
    [
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers:\n"
            "  - {name: c, image: i, resources: {requests: {cpu: lots}}}\n",
            "Pod default/x: spec.containers[0].resources.requests.cpu: quantities must match the "
            "regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
        ),
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers:\n"
            "  - {name: c, image: i, resources: {requests: {cpu: '-1'}}}\n",
            'Pod default/x: spec.containers[0].resources.requests[cpu]: Invalid value: "-1": '
            "must be greater than or equal to 0",
        ),
        (
            "apiVersion: v1\nkind: Node\nmetadata: {name: n, labels: {'bad key!': x}}\n",
            'Node n: metadata.labels: Invalid value: "bad key!": name part must consist',
        ),
        (
            "apiVersion: v1\nkind: Node\nmetadata: {name: n}\nspec: {unschedulabel: true}\n",
            "Node n: spec.unschedulabel: unknown field",
        ),
        (
            "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: q}\n"
            "spec: {weight: 0}\n",
            "Queue q: spec.weight: Invalid value: 0: spec.weight in body should be greater than "
            "or equal to 1",
        ),
    ],
)
async def test_an_invalid_seed_is_one_line_naming_file_object_and_field(
    tmp_path: Path, manifest: str, line: str
) -> None:
    seed = tmp_path / "bad.yaml"
    seed.write_text(manifest)
    code, err = await failing("--cluster", str(seed))
    assert code == 2
    assert err.strip().splitlines() == [err.strip()]  # one line
    assert err.startswith(f"pumice sim-cluster: error: {seed}: {line}"), err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--bookmark-interval", "0"], "--bookmark-interval 0.0: must be greater than 0"),
        (
            ["--node-template", "cpu=lots"],
            "--node-template 'cpu=lots': cpu=lots: quantities must match the regular expression",
        ),
        (["--node-template", "cpu=-4"], "--node-template 'cpu=-4': cpu=-4: must not be negative"),
        (["--history-size", "0"], "--history-size: must be at least 1"),
    ],
)
async def test_bad_flags_exit_2(args: list[str], message: str) -> None:
    code, err = await failing(*args)
    assert code == 2
    assert err.startswith(f"pumice sim-cluster: error: {message}"), err


async def test_help_shows_the_defaults() -> None:
    proc = await asyncio.create_subprocess_exec(
        *PUMICE,
        "sim-cluster",
        "--help",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 30)
    text = " ".join(out.decode().split())
    assert proc.returncode == 0
    for shown in (
        "(default: 0.2)",
        "(default: 0.5)",
        "> 0 (default: 60.0)",
        "(default: 10000)",
        "'cpu=32,memory=256Gi,pods=110' (the default)",
    ):
        assert shown in text, shown
