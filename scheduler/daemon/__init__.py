"""The daemon: informers -> cache -> a session per period -> binder and status, plus systemd
notification (``pumice.daemon.notify``).

See ``pumice.daemon.loop`` for the cycle, ``binding`` for what happens after a commit,
``reporting`` for what is written back, ``committers`` for the dry-run log.
"""

from pumice.daemon.loop import Daemon, DaemonOptions

__all__ = ["Daemon", "DaemonOptions"]
