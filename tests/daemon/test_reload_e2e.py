"""Config reload in a running daemon: an edit of a plugin weight changes where the next pods go;
an invalid edit or one that needs a restart is logged and scheduling goes on as before."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from daemon.workload import node, pod, seed
from pumice.commands.config_commands import load_validated
from pumice.daemon import Daemon, DaemonOptions
from pumice.kube import KubeSettings
from support.daemonrun import Ledger, wait_for

# Two scorers, one weighted up: binpack packs pods on one node, leastrequested spreads them.
CONFIG = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: predicates
  - name: proportion
  - name: nodeorder
    arguments: {{leastrequested.weight: {spread}, balancedresource.weight: 0}}
  - name: binpack
    arguments: {{binpack.weight: {pack}}}
scheduler:
  period: 100ms
  {extra}
"""

PACK = CONFIG.format(spread=0, pack=10, extra="")
SPREAD = CONFIG.format(spread=10, pack=0, extra="")


def write(path: Path, text: str) -> None:
    """Overwrite in place (same inode), as an editor saving over the file may."""
    with path.open("r+") as f:
        f.truncate(0)
        f.write(text)


@contextlib.asynccontextmanager
async def reloading_daemon(kubeconfig: Path, config: Path) -> AsyncIterator[Daemon]:
    cfg, host, _ = load_validated(str(config))
    stop = asyncio.Event()
    daemon = Daemon(
        DaemonOptions(
            config=cfg,
            host=host,
            kube=KubeSettings(kubeconfig=str(kubeconfig)),
            stop=stop,
            config_path=str(config),
            config_loader=load_validated,
        )
    )
    assert daemon.reloader is not None
    daemon.reloader.interval = 0.1
    task = asyncio.get_running_loop().create_task(daemon.run())
    try:
        yield daemon
    finally:
        stop.set()
        assert await asyncio.wait_for(task, 60) == 0


def nodes_of(ledger: Ledger, prefix: str) -> set[str]:
    return {
        p["spec"]["nodeName"] for p in ledger.bound() if p["metadata"]["name"].startswith(prefix)
    }


def results(daemon: Daemon) -> dict[str, int]:
    assert daemon.reloader is not None
    return daemon.reloader.results


async def test_a_weight_edit_changes_where_the_next_pods_go(sim: Any, tmp_path: Path) -> None:
    seed(sim, [node(f"n{i}", cpu="8") for i in range(4)])
    config = tmp_path / "scheduler.yaml"
    config.write_text(PACK)
    ledger = Ledger(sim)
    async with reloading_daemon(sim.kubeconfig, config) as daemon:
        seed(sim, [pod(f"packed-{i}", cpu="1") for i in range(4)])
        await wait_for(lambda: len(ledger.bound()) == 4)
        write(config, SPREAD)
        await wait_for(lambda: results(daemon).get("applied") == 1)
        seed(sim, [pod(f"spread-{i}", cpu="1") for i in range(3)])
        await wait_for(lambda: len(ledger.bound()) == 7)
        daemon.request_reload()  # SIGHUP's handler: reload, changed or not
        await wait_for(lambda: results(daemon).get("applied") == 2)
    assert len(nodes_of(ledger, "packed-")) == 1
    # Spread: each lands on a node of its own, none on the packed one.
    assert len(nodes_of(ledger, "spread-")) == 3
    assert not nodes_of(ledger, "spread-") & nodes_of(ledger, "packed-")
    ledger.close()


async def test_invalid_and_restart_only_edits_keep_the_running_config(
    sim: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="pumice.daemon")
    seed(sim, [node(f"n{i}", cpu="8") for i in range(4)])
    # A ConfigMap mount: the path is a symlink into a directory that is swapped whole.
    versions = {
        "v1": PACK,
        "v2": PACK.replace("binpack.weight: 10", "binpack.weight: lots"),
        "v3": CONFIG.format(spread=10, pack=0, extra="schedulerName: other"),
    }
    for version, text in versions.items():
        (tmp_path / version).mkdir()
        (tmp_path / version / "scheduler.yaml").write_text(text)
    (tmp_path / "data").symlink_to("v1")
    config = tmp_path / "scheduler.yaml"
    config.symlink_to("data/scheduler.yaml")
    ledger = Ledger(sim)

    def swap(version: str) -> None:
        (tmp_path / "next").symlink_to(version)
        os.replace(tmp_path / "next", tmp_path / "data")

    async with reloading_daemon(sim.kubeconfig, config) as daemon:
        swap("v2")
        await wait_for(lambda: results(daemon).get("invalid") == 1)
        swap("v3")
        await wait_for(lambda: results(daemon).get("restart_needed") == 1)
        # Still packing, under the first file.
        seed(sim, [pod(f"packed-{i}", cpu="1") for i in range(4)])
        await wait_for(lambda: len(ledger.bound()) == 4)
    assert len(nodes_of(ledger, "packed-")) == 1
    assert results(daemon) == {"invalid": 1, "restart_needed": 1}
    messages = [r.getMessage() for r in caplog.records]
    invalid = [m for m in messages if "binpack.weight" in m and "not reloaded" in m]
    assert invalid and f"{config}:" in invalid[0], messages
    assert any("scheduler.schedulerName" in m and "restart needed" in m for m in messages)
    ledger.close()
