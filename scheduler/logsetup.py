"""The daemon's log lines, through structlog: JSON when stderr is not a terminal (journald,
kubectl logs, a file), readable ``key=value`` on a terminal — unless the command asks for one
format (``text`` or ``json``): ``pumice run --sim`` (``make run``, a demo read by people) is
always readable, and ``--log-format`` chooses.

pumice's modules log through the standard ``logging`` module; structlog's ``ProcessorFormatter``
renders those records, so there is one format for ours and for the libraries'. Context bound
with ``structlog.contextvars`` — the daemon binds ``cycle`` around each session — is merged into
every line logged under it, in the worker thread too (``asyncio.to_thread`` copies the context).
aiohttp's access log is silenced: probes every few seconds would drown the scheduler's lines.
"""

from __future__ import annotations

import logging
import sys
from typing import TextIO

import structlog

__all__ = ["LOG_FORMATS", "configure_daemon_logging"]

LOG_FORMATS = ("auto", "text", "json")
"""``auto``: JSON off a terminal, text on one."""


def configure_daemon_logging(
    level: int, stream: TextIO | None = None, log_format: str = "auto"
) -> None:
    """Route every ``logging`` record of this process through structlog's renderers."""
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
