"""Config reload: watch the config file, check a new version, hand it to the loop whole.

The file is polled (``os.stat``, which follows symlinks) once per ``interval``: an in-place
overwrite changes its mtime or size, and a ConfigMap update — kubelet swaps a symlink to a new
directory — changes the inode the path leads to; either makes it a candidate, as does SIGHUP
(``request``). Polling needs no inotify and sees through any number of symlinks.

The loop calls ``take`` at each cycle boundary, so a session always runs under one config. A
candidate is loaded and validated exactly as at start-up (the loader is injected: the checks
live in ``pumice.commands``, a layer above). Then:

* invalid → logged with its ``FILE:LINE: KEY: what`` and the running config stays;
* a change to a setting read only at start-up (``RESTART_ONLY``) → refused with "restart
  needed", and nothing else in the file is applied either, so what runs is always one file;
* otherwise → returned to be swapped in, and logged naming the file.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import Callable
from typing import Any

from pumice.framework.config import SchedulerConfig
from pumice.framework.host import PluginHost
from pumice.plain import PumiceError

log = logging.getLogger("pumice.daemon")

Loader = Callable[[str], tuple[SchedulerConfig, PluginHost, list[Any]]]
"""Path -> (config, plugin host, warnings); raises a ``PumiceError`` for a bad file."""

RESTART_ONLY = {
    "schedulerName": "scheduler_name",
    "dryRun": "dry_run",
    "httpAddress": "http_address",
    "kubeconfig": "kubeconfig",
    "qps": "qps",
    "burst": "burst",
    "leaderElection": "leader_election",
    # The cache files queue-less pods under it from the first list on.
    "defaultQueue": "default_queue",
}
"""``scheduler.`` keys read once at start-up -> their ``SchedulerSettings`` field."""

Fingerprint = tuple[int, int, int, int] | None


def fingerprint(path: str) -> Fingerprint:
    try:
        st = os.stat(path)
    except OSError:
        return None  # mid-swap, or gone: the next poll looks again
    return (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)


class ConfigReloader:
    def __init__(
        self, path: str, current: SchedulerConfig, loader: Loader, interval: float = 1.0
    ) -> None:
        self.path = path
        self.current = current
        self.loader = loader
        self.interval = interval
        self.requested = False
        self.results: dict[str, int] = {}
        """How many reloads ended ``applied``, ``invalid``, ``restart_needed``."""
        self._seen = fingerprint(path)

    def request(self) -> None:
        """Reload at the next cycle boundary, changed or not (SIGHUP)."""
        self.requested = True

    async def watch(self) -> None:
        """Poll the file until cancelled."""
        while True:
            await asyncio.sleep(self.interval)
            self.poll()

    def poll(self) -> None:
        now = fingerprint(self.path)
        if now is not None and now != self._seen:
            self._seen = now
            self.requested = True

    def take(self) -> tuple[SchedulerConfig, PluginHost] | None:
        """At a cycle boundary: the new config and host to run with, or None to keep going."""
        if not self.requested:
            return None
        self.requested = False
        try:
            config, host, warnings = self.loader(self.path)
        except PumiceError as exc:
            self._count("invalid")
            log.error("config %s not reloaded: %s; the running config stays", self.path, exc)
            return None
        for warning in warnings:  # plain FILE:LINE: KEY: warning: lines, as at start-up
            print(str(warning), file=sys.stderr, flush=True)
        changed = [
            f"scheduler.{key}"
            for key, attr in RESTART_ONLY.items()
            if getattr(config.scheduler, attr) != getattr(self.current.scheduler, attr)
        ]
        if changed:
            self._count("restart_needed")
            log.error(
                "config %s not reloaded: %s changed: restart needed; the running config stays",
                self.path,
                ", ".join(changed),
            )
            return None
        self._count("applied")
        self.current = config
        log.info("config reloaded from %s", self.path)
        return config, host

    def _count(self, result: str) -> None:
        self.results[result] = self.results.get(result, 0) + 1
