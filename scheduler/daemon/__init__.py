"""The scheduling daemon: informers -> cache -> a session per period -> binder and status.

See ``pumice.daemon.loop`` for the cycle, ``binding`` for what happens after a commit,
``reporting`` for what is written back, ``committers`` for the dry-run log, ``notify`` for
systemd notification.

The names below are loaded when first asked for: ``pumice simulate`` and ``pumice explain``
use ``pumice.daemon.outcome`` (what a session leaves for the API server), and importing the
package must not pull in the daemon's Kubernetes client, HTTP server, logging and metrics
(half a second of start-up).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pumice.daemon.loop import Daemon, DaemonOptions
    from pumice.daemon.notify import Notifier, run_watchdog

__all__ = ["Daemon", "DaemonOptions", "Notifier", "run_watchdog"]

_HOMES = {
    "Daemon": "pumice.daemon.loop",
    "DaemonOptions": "pumice.daemon.loop",
    "Notifier": "pumice.daemon.notify",
    "run_watchdog": "pumice.daemon.notify",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)
