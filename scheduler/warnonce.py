"""Warnings logged once per process.

Plugins are built afresh for every session (once a second in a daemon), so a warning about a
configuration the plugin cannot honour (an unsupported argument, say) would repeat every cycle.
``warn_once(logger, key, message)`` logs ``message`` at WARNING on ``logger`` the first time
``(logger name, key)`` is seen and never again in this process. Safe from several threads.

``forget_warnings()`` clears the memory (tests use it to see a warning again).
"""

from __future__ import annotations

import logging
import threading

__all__ = ["forget_warnings", "warn_once"]

_seen: set[tuple[str, str]] = set()
_lock = threading.Lock()


def warn_once(logger: logging.Logger, key: str, message: str, *args: object) -> bool:
    """Log ``message % args`` as a warning unless ``key`` was warned about on ``logger``
    already; True when it was logged now."""
    ident = (logger.name, key)
    with _lock:
        if ident in _seen:
            return False
        _seen.add(ident)
    logger.warning(message, *args)
    return True


def forget_warnings() -> None:
    """Let every warning be logged once more."""
    with _lock:
        _seen.clear()
