"""``pumice run``'s log lines: JSON when stderr is not a terminal, key=value on one or with
``--sim`` (``make run``), as ``--log-format`` chooses, and the ``cycle`` id on every line a
cycle logs."""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog

from pumice.logs import configure_daemon_logging
from support.daemonrun import run_demo


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for handler in list(root.handlers):
        root.removeHandler(handler)
    for handler in handlers:
        root.addHandler(handler)
    root.setLevel(level)
    structlog.contextvars.clear_contextvars()


def test_json_lines_off_a_terminal_carry_the_bound_cycle(restore_logging: None) -> None:
    out = io.StringIO()
    configure_daemon_logging(logging.INFO, out)
    structlog.contextvars.bind_contextvars(cycle=7)
    logging.getLogger("pumice.daemon").info("bound %s to %s", "batch/p", "n1")
    structlog.contextvars.clear_contextvars()
    logging.getLogger("pumice.daemon").debug("not shown at info")
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert len(lines) == 1
    assert lines[0]["event"] == "bound batch/p to n1"
    assert lines[0]["cycle"] == 7
    assert lines[0]["level"] == "info" and lines[0]["logger"] == "pumice.daemon"


def test_key_value_on_a_terminal(restore_logging: None) -> None:
    out = Terminal()
    configure_daemon_logging(logging.INFO, out)
    structlog.contextvars.bind_contextvars(cycle=3)
    logging.getLogger("pumice.daemon").warning("bind failed")
    text = out.getvalue()
    assert "bind failed" in text and "cycle=3" in text
    with pytest.raises(json.JSONDecodeError):
        json.loads(text.splitlines()[0])


def json_records(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@pytest.mark.slow
async def test_pumice_run_logs_json_with_cycle_ids(tmp_path: Path) -> None:
    # -vv: a line per bind is a debug line outside dry-run
    result = await run_demo(tmp_path, "-vv", run_flags=("--log-format", "json"))
    assert result.returncode == 0, result.stderr[-3000:]
    records = json_records(result.stderr)
    binds = [r for r in records if str(r["event"]).startswith("bound ")]
    assert binds and all(isinstance(r.get("cycle"), int) for r in binds)
    assert {r["level"] for r in binds} == {"debug"}
    assert any(str(r["event"]).startswith("cycle ") and "cycle" in r for r in records)


@pytest.mark.slow
async def test_at_info_a_cycle_says_how_many_it_bound_not_which(tmp_path: Path) -> None:
    result = await run_demo(tmp_path, run_flags=("--log-format", "json"))
    assert result.returncode == 0, result.stderr[-3000:]
    records = json_records(result.stderr)
    assert records and {r["level"] for r in records} <= {"info", "warning"}
    assert not [r for r in records if str(r["event"]).startswith("bound ")]
    summaries = [r for r in records if re.match(r"cycle \d+: [1-9]\d* binds", str(r["event"]))]
    bound = [line for line in result.stdout.splitlines() if line.startswith("bound ")]
    assert bound and summaries
    assert sum(int(str(r["event"]).split()[2]) for r in summaries) == len(bound)


TEXT_LINE = re.compile(r"\S+Z \[(info|warning|error) *\] \S")
"""structlog's key=value line: ``2026-…Z [info     ] cycle 1: … [pumice.daemon] cycle=1``."""


@pytest.mark.slow
async def test_make_run_is_readable_when_stderr_is_not_a_terminal(tmp_path: Path) -> None:
    # what `make run` shows when piped or redirected: its log lines are text, like on a
    # terminal, between the `bound` lines of stdout; no JSON
    result = await run_demo(tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines and all(TEXT_LINE.match(line) for line in lines), lines
    assert any(re.search(r"\] cycle 1: \d+ binds", line) for line in lines)
    assert not any(line.lstrip().startswith("{") for line in lines)


def test_a_chosen_format_wins_over_the_terminal(restore_logging: None) -> None:
    out = Terminal()
    configure_daemon_logging(logging.INFO, out, log_format="json")
    logging.getLogger("pumice.daemon").info("as json")
    assert json.loads(out.getvalue().splitlines()[0])["event"] == "as json"
    piped = io.StringIO()
    configure_daemon_logging(logging.INFO, piped, log_format="text")
    logging.getLogger("pumice.daemon").info("as text")
    assert TEXT_LINE.match(piped.getvalue().splitlines()[0])
