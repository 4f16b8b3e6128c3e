"""The scheduling daemon: informers -> cache -> a session per period -> binder and status.

See ``pumice.daemon.loop`` for the cycle, ``binding`` for what happens after a commit,
``reporting`` for what is written back, ``committers`` for the dry-run log, ``notify`` for
systemd notification.
"""

from pumice.daemon.loop import Daemon, DaemonOptions
from pumice.daemon.notify import Notifier, run_watchdog

__all__ = ["Daemon", "DaemonOptions", "Notifier", "run_watchdog"]
