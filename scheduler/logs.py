"""pumice's log lines: their format, and warnings said once.

**Format** (``configure_daemon_logging``): through structlog, JSON when stderr is not a terminal
(journald, kubectl logs, a file), readable ``key=value`` on a terminal — unless the command asks
for one format (``text`` or ``json``): ``pumice run --sim`` (``make run``, a demo read by people)
is always readable, and ``--log-format`` chooses. pumice's modules log through the standard
``logging`` module; structlog's ``ProcessorFormatter`` renders those records, so there is one
format for ours and for the libraries'. Context bound with ``structlog.contextvars`` — the daemon
binds ``cycle`` around each session — is merged into every line logged under it, in the worker
thread too (``asyncio.to_thread`` copies the context). aiohttp's access log is silenced: probes
every few seconds would drown the scheduler's lines. structlog is imported only when a command
asks for this format.

**Warnings logged once per process.** Plugins are built afresh for every session (once a second
in a daemon), so a warning about a configuration the plugin cannot honour (an unsupported
argument, say) would repeat every cycle. ``warn_once(logger, key, message)`` logs ``message`` at
WARNING on ``logger`` the first time ``(logger name, key)`` is seen and never again in this
process. Safe from several threads. ``forget_warnings()`` clears the memory (tests use it to see
a warning again).

A warning about a plugin's own ``arguments`` (set but not implemented, a value dropped) is a
config warning: the plugin calls ``config_warning(logger, plugin, key, message)`` with ``key`` the
path inside its ``arguments``. While ``collect_config_warnings()`` is active (the config loader
builds each configured plugin once inside it) the warning is collected, so the loader can show
it as ``FILE:LINE: KEY: warning: …``, and remembered as said, so the sessions that build the
plugin later do not log it again; outside it, it is ``warn_once``.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import sys
import threading
from collections.abc import Iterator
from typing import TextIO

__all__ = [
    "LOG_FORMATS",
    "collect_config_warnings",
    "config_warning",
    "configure_daemon_logging",
    "forget_warnings",
    "warn_once",
]

LOG_FORMATS = ("auto", "text", "json")
"""``auto``: JSON off a terminal, text on one."""


def configure_daemon_logging(
    level: int, stream: TextIO | None = None, log_format: str = "auto"
) -> None:
    """Route every ``logging`` record of this process through structlog's renderers."""
    import structlog  # only where the structured format is used: not every command pays for it

    out = sys.stderr if stream is None else stream
    renderer: structlog.typing.Processor
    if log_format == "text" or (log_format == "auto" and out.isatty()):
        renderer = structlog.dev.ConsoleRenderer(colors=False)
    else:
        renderer = structlog.processors.JSONRenderer()
    shared: list[structlog.typing.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.stdlib.ExtraAdder(),
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=shared,
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info,
            renderer,
        ],
    )
    handler = logging.StreamHandler(out)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)


# -- warnings logged once ------------------------------------------------------------------

_seen: set[tuple[str, str]] = set()
_lock = threading.Lock()
_collected: contextvars.ContextVar[list[tuple[str, str]] | None] = contextvars.ContextVar(
    "pumice_config_warnings", default=None
)


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


def config_warning(logger: logging.Logger, *, plugin: str, key: str, message: str) -> None:
    """A warning about argument ``key`` of ``plugin``: collected while the config is checked
    (and then never logged), else logged once as ``plugin P: KEY: message`` (see the module
    docstring)."""
    collected = _collected.get()
    if collected is None:
        warn_once(logger, key, "plugin %s: %s: %s", plugin, key, message)
        return
    with _lock:
        _seen.add((logger.name, key))
    collected.append((key, message))


@contextlib.contextmanager
def collect_config_warnings() -> Iterator[list[tuple[str, str]]]:
    """Collect ``(key, message)`` of every ``config_warning`` made inside the block."""
    collected: list[tuple[str, str]] = []
    token = _collected.set(collected)
    try:
        yield collected
    finally:
        _collected.reset(token)
