"""systemd's notification protocol (``sd_notify``), in the few lines of stdlib it takes.

Under a ``Type=notify`` unit systemd passes ``$NOTIFY_SOCKET``, the path of a datagram socket
(a leading ``@`` means Linux's abstract namespace), and, when the unit sets ``WatchdogSec=``,
``$WATCHDOG_USEC`` (and ``$WATCHDOG_PID``, the process the watchdog is meant for). The service
sends newline-separated ``KEY=VALUE`` assignments:

* ``READY=1`` once started (pumice: after every informer's initial sync);
* ``WATCHDOG=1`` at least once per ``WATCHDOG_USEC``; we send at half of it, and only while
  cycles complete, so a wedged loop is restarted by systemd;
* ``STOPPING=1`` when shutting down;
* ``STATUS=...`` a one-line text that ``systemctl status`` shows (the last cycle's summary).

Outside systemd (no ``$NOTIFY_SOCKET``) every call does nothing and returns False.

Why not the PyPI ``sdnotify`` package: it is unmaintained since 2017 and handles neither the
abstract namespace nor the watchdog variables; the protocol is a single ``sendto``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import Callable, Mapping

log = logging.getLogger("pumice.daemon.notify")

__all__ = ["Notifier", "run_watchdog"]


class Notifier:
    """Sends state changes to systemd's notification socket (see the module docstring)."""

    def __init__(self, socket_path: str | None, watchdog_usec: int | None = None) -> None:
        self.socket_path = socket_path or None
        self.watchdog_interval: float | None = None
        """Seconds between two WATCHDOG=1 pings: half of WATCHDOG_USEC; None if not asked."""
        if watchdog_usec is not None and watchdog_usec > 0:
            self.watchdog_interval = watchdog_usec / 2 / 1_000_000
        self._address = _address(self.socket_path) if self.socket_path else None
        self._socket: socket.socket | None = None
        self._failed = False

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> Notifier:
        """A notifier for ``$NOTIFY_SOCKET`` / ``$WATCHDOG_USEC``; the watchdog is ignored when
        ``$WATCHDOG_PID`` names another process, or when WATCHDOG_USEC is not a number."""
        env = os.environ if environ is None else environ
        usec: int | None = None
        pid = env.get("WATCHDOG_PID", "")
        if not pid or pid == str(os.getpid()):
            try:
                usec = int(env.get("WATCHDOG_USEC", ""))
            except ValueError:
                usec = None
        return cls(env.get("NOTIFY_SOCKET"), usec)

    @property
    def enabled(self) -> bool:
        """Is there a socket to notify?"""
        return self._address is not None

    def send(self, **assignments: str) -> bool:
        """Send ``KEY=VALUE`` lines in one datagram, e.g. ``send(READY="1", STATUS="ok")``;
        True if sent. Newlines in a value become spaces (they would start a new assignment)."""
        if self._address is None:
            return False
        message = "\n".join(
            f"{key}={' '.join(str(value).splitlines())}" for key, value in assignments.items()
        )
        try:
            if self._socket is None:
                self._socket = socket.socket(
                    socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC
                )
                self._socket.setblocking(False)  # never stall the event loop on a full queue
            self._socket.sendto(message.encode("utf-8"), self._address)
        except OSError as exc:
            if not self._failed:  # once: a missing socket would otherwise log every ping
                log.warning("cannot notify systemd at %s: %s", self.socket_path, exc)
                self._failed = True
            return False
        return True

    def ready(self, status: str | None = None) -> bool:
        """``READY=1`` (with a status line when given)."""
        return self.send(READY="1") if status is None else self.send(READY="1", STATUS=status)

    def watchdog(self) -> bool:
        """``WATCHDOG=1``: the service is alive."""
        return self.send(WATCHDOG="1")

    def stopping(self, status: str | None = None) -> bool:
        """``STOPPING=1``: shutting down."""
        return self.send(STOPPING="1") if status is None else self.send(STOPPING="1", STATUS=status)

    def status(self, text: str) -> bool:
        """``STATUS=text``: what ``systemctl status`` shows."""
        return self.send(STATUS=text)

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self._socket = None


def _address(path: str) -> str | bytes:
    if path.startswith("@"):
        return b"\0" + path[1:].encode("utf-8")  # abstract namespace: no file behind it
    return path


async def run_watchdog(notifier: Notifier, healthy: Callable[[], bool]) -> None:
    """Ping ``WATCHDOG=1`` every ``notifier.watchdog_interval`` while ``healthy()`` (e.g. "a
    cycle completed since the last ping") holds; return at once when no watchdog is asked.
    Runs until cancelled."""
    interval = notifier.watchdog_interval
    if interval is None or not notifier.enabled:
        return
    while True:
        await asyncio.sleep(interval)
        if healthy():
            notifier.watchdog()
