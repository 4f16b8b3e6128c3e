"""Running the daemon against a simulated API server, and checking what the server saw.

``Ledger`` listens to every change the simulated server commits to pods (the source every watch
is fed from) and reads its write log, so the invariants are checked over everything the API
server saw: each pod bound once and never moved, no node's bound requests over allocatable.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import AsyncIterator
from importlib import resources
from pathlib import Path
from typing import Any

from pumice.commands.config_commands import load_checked
from pumice.daemon import Daemon, DaemonOptions
from pumice.framework.configfile import load_config
from pumice.framework.host import PluginHost
from pumice.kube import KubeSettings
from pumice.model import Resource, pod_requests

Obj = dict[str, Any]
PODS = "/pods"
NODES = "/nodes"


def write_config(directory: Path, actions: str | None = None, **scheduler: str) -> Path:
    """The bundled config with a short period (and any other ``scheduler:`` keys)."""
    text = (resources.files("pumice.conf") / "scheduler.yaml").read_text()
    if actions is not None:
        text = text.replace('actions: "enqueue, allocate, backfill"', f'actions: "{actions}"')
    # port 0: tests (and other checkouts on this machine) never collide on the health port
    settings = {"period": "100ms", "httpAddress": "127.0.0.1:0", **scheduler}
    text += "\nscheduler:\n" + "".join(f"  {k}: {v}\n" for k, v in settings.items())
    path = directory / "scheduler.yaml"
    path.write_text(text)
    return path


@contextlib.asynccontextmanager
async def running_daemon(
    kubeconfig: Path, config: Path, *, dry_run: bool = False, extra: dict[str, type] | None = None
) -> AsyncIterator[Daemon]:
    """The daemon in this process's event loop (its sessions in a worker thread); ``extra``
    plugins and actions are registered besides the installed ones."""
    if extra:
        cfg = load_config(config)
        host = PluginHost.discover(cfg.scheduler.plugin_packages)
        for name, cls in extra.items():
            host.register(name, cls)
    else:
        cfg, host = load_checked(str(config))
    stop = asyncio.Event()
    daemon = Daemon(
        DaemonOptions(
            config=cfg,
            host=host,
            kube=KubeSettings(kubeconfig=str(kubeconfig)),
            dry_run=dry_run,
            stop=stop,
        )
    )
    task = asyncio.get_running_loop().create_task(daemon.run())
    try:
        yield daemon
    finally:
        stop.set()
        await asyncio.wait_for(task, 60)


def start_process(
    kubeconfig: Path, config: Path, *extra: str, log: Path
) -> subprocess.Popen[bytes]:
    """``pumice run`` as a child process (stdout and stderr to ``log``)."""
    out = log.open("ab")
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pumice.cli",
            "run",
            "--kubeconfig",
            str(kubeconfig),
            "--config",
            str(config),
            *extra,
        ],
        stdout=out,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def kill_hard(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait(30)


async def wait_for(check: Any, timeout: float = 120.0, interval: float = 0.1) -> None:
    """Poll ``check()`` until it is true; fail with its last value after ``timeout``."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        value = check()
        if value:
            return
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"condition not met within {timeout}s: {check.__doc__ or check}")
        await asyncio.sleep(interval)


class Ledger:
    """Every pod change the server committed, and the binds it accepted."""

    def __init__(self, sim: Any) -> None:
        self.sim = sim
        self.placements: dict[tuple[str, str], list[str]] = {}
        """pod -> each node it was seen on, in order (a re-bind shows as a second entry)."""
        self.deleted: set[tuple[str, str]] = set()
        sim.store.subscribe(self._on_change)

    def close(self) -> None:
        self.sim.store.unsubscribe(self._on_change)

    def _on_change(self, change: Any) -> None:
        if change.table != PODS:
            return
        before = ((change.prev or {}).get("spec") or {}).get("nodeName")
        after = None if change.type == "DELETED" else (change.obj.get("spec") or {}).get("nodeName")
        if change.type == "DELETED":
            self.deleted.add(change.key)
        if after and after != before:
            self.placements.setdefault(change.key, []).append(after)

    def pods(self, scheduler: str | None = None) -> list[Obj]:
        table = self.sim.store.table(PODS)
        return [
            p
            for p in table.values()
            if scheduler is None or p["spec"].get("schedulerName") == scheduler
        ]

    def bound(self, scheduler: str = "pumice") -> list[Obj]:
        return [p for p in self.pods(scheduler) if p["spec"].get("nodeName")]

    def accepted_binds(self) -> Counter[tuple[str, str]]:
        """Binding requests the server accepted, per pod."""
        return Counter(
            (w.namespace, w.name) for w in self.sim.writes.select(resource="pods/binding", code=201)
        )

    def rebinds(self) -> dict[tuple[str, str], list[str]]:
        """Pods the server saw on more than one node, or bound more than once."""
        return {k: v for k, v in self.placements.items() if len(v) > 1}

    def overcommitted(self) -> dict[str, str]:
        """Nodes whose bound, non-terminal pods request more than allocatable."""
        used: dict[str, Resource] = {}
        count: Counter[str] = Counter()
        for p in self.pods():
            node = p["spec"].get("nodeName")
            if not node or (p.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue
            used[node] = used.get(node, Resource.zero()) + pod_requests(p)
            count[node] += 1
        out: dict[str, str] = {}
        for (_, name), n in self.sim.store.table(NODES).items():
            alloc = dict(n["status"]["allocatable"])
            pods = int(alloc.pop("pods", 110))
            limit = Resource.from_k8s(alloc)
            have = used.get(name, Resource.zero())
            short = have.insufficient(limit) if hasattr(have, "insufficient") else []
            if not have.less_equal(limit) or count[name] > pods:
                out[name] = f"{have} > {limit} ({count[name]} pods) {short}"
        return out

    def mutating(self, user_agent: str = "pumice") -> list[Any]:
        return self.sim.writes.select(user_agent=user_agent)


async def run_demo(
    directory: Path, *flags: str, run_flags: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    """``pumice [FLAGS] run --sim --until-idle [RUN_FLAGS]`` (what ``make run`` runs) as a
    subprocess (stderr a pipe, not a terminal), in the environment ``make run`` has: without
    the test-only plugin packages conftest adds."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "pumice.cli", *flags, "run", "--sim", "--until-idle", *run_flags],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=directory,
        env=env,
    )
