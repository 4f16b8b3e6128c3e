"""The output excerpts of the README and of its reference pages in docs/ are what the commands
print now.

Each command below is shown on its page (README.md, or the docs/ page the README links for that
subject) as ``$ COMMAND`` followed by its output; the test runs the command and requires every
line shown to be a line the command printed. An excerpt may leave lines out (``…`` marks
where); times, ports and durations differ from run to run and are compared in a normalised
form. A command removed from its page fails the test: when an excerpt moves to another page,
move the check with it (its page below), never drop it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PENDING = ROOT / "docs" / "pending.md"
EXPLAIN = ROOT / "docs" / "explain.md"
SIMULATE = ROOT / "docs" / "simulate.md"
RESERVATION = ROOT / "docs" / "node-reservation.md"
PUMICE = [sys.executable, "-c", "import sys; from pumice.cli import main; sys.exit(main())"]

PREEMPTION = "conf/examples/preemption.yaml --config conf/examples/volcano-scheduler.conf"

# (the page, the command as it shows it after "$ ", the pumice arguments to run, exit code)
OFFLINE = [
    (
        PENDING,
        "pumice simulate conf/examples/pending.yaml",
        "simulate conf/examples/pending.yaml",
        0,
    ),
    (
        EXPLAIN,
        "pumice explain conf/examples/pending.yaml --podgroup research/train",
        "explain conf/examples/pending.yaml --podgroup research/train",
        0,
    ),
    (
        EXPLAIN,
        "kubectl pumice explain pod cuda -o json",  # the excerpt's offline twin is run
        "explain conf/examples/pending.yaml --pod default/cuda -o json",
        0,
    ),
    (SIMULATE, f"pumice simulate {PREEMPTION}", f"simulate {PREEMPTION}", 0),
    (
        SIMULATE,
        f"pumice simulate {PREEMPTION} --output json",
        f"simulate {PREEMPTION} --output json",
        0,
    ),
    (SIMULATE, f"pumice simulate {PREEMPTION} --explain", f"simulate {PREEMPTION} --explain", 0),
    (
        RESERVATION,
        "pumice simulate conf/examples/reservation.yaml --config conf/examples/reservation.conf",
        "simulate conf/examples/reservation.yaml --config conf/examples/reservation.conf",
        0,
    ),
    (
        README,
        "pumice run --kubeconfig /etc/pumice/kubeconfig",
        "run --kubeconfig /nonexistent/pumice/kubeconfig",
        2,
    ),
]

VARYING = [
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z"), "TIME"),
    (re.compile(r"127\.0\.0\.1:\d+"), "127.0.0.1:PORT"),
    (re.compile(r"\b\d+\.\d+s\b"), "Ns"),
    (re.compile(r"/nonexistent/pumice/kubeconfig"), "/etc/pumice/kubeconfig"),
]


def normal(line: str) -> str:
    for pattern, replacement in VARYING:
        line = pattern.sub(replacement, line)
    return line.rstrip()


def excerpt(command: str, page: Path = README) -> list[str]:
    """The output lines ``page`` shows under ``$ COMMAND`` (up to the next ``$`` line or the
    end of the block), without the lines an excerpt leaves out."""
    lines = page.read_text().splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("$ " + command)]
    assert starts, f"{page.relative_to(ROOT)} no longer shows `$ {command}`"
    shown: list[str] = []
    for line in lines[starts[0] + 1 :]:
        if line.startswith(("$ ", "```")):
            break
        if "…" not in line and line.strip():
            shown.append(line)
    assert shown, f"`$ {command}` has no output in {page.relative_to(ROOT)}"
    return shown


def run(arguments: list[str], cwd: Path) -> tuple[int, list[str]]:
    result = subprocess.run(
        [*PUMICE, *arguments], cwd=cwd, capture_output=True, text=True, timeout=120
    )
    printed = (result.stderr + result.stdout).splitlines()
    return result.returncode, [normal(line) for line in printed]


def missing(shown: list[str], printed: list[str]) -> list[str]:
    have = set(printed)
    return [line for line in shown if normal(line) not in have]


@pytest.mark.parametrize(
    ("page", "command", "arguments", "code"), OFFLINE, ids=[c[1] for c in OFFLINE]
)
def test_an_offline_excerpt_is_what_the_command_prints(
    page: Path, command: str, arguments: str, code: int
) -> None:
    exit_code, printed = run(arguments.split(), ROOT)
    assert exit_code == code, printed
    assert missing(excerpt(command, page), printed) == []


def test_the_check_config_excerpt_is_what_it_prints_for_the_config_shown(tmp_path: Path) -> None:
    section = PENDING.read_text().split("# Why is my pod pending?", 1)[1]
    config = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    (tmp_path / "scheduler.yaml").write_text(config)
    exit_code, printed = run(["check-config", "scheduler.yaml"], tmp_path)
    assert exit_code == 0
    shown = [
        line for line in excerpt("pumice check-config scheduler.yaml", PENDING) if "$" not in line
    ]
    shown = [line for line in shown if line != "0"]  # `echo $?`'s answer, checked above
    assert len(shown) == 5  # four warnings and the ok line
    assert missing(shown, printed) == []


def test_the_daemons_pending_log_is_what_it_logs() -> None:
    command = "pumice run --sim conf/examples/pending.yaml --until-idle"
    exit_code, printed = run(command.split()[1:], ROOT)
    assert exit_code == 0, printed
    shown = excerpt(command, PENDING)
    assert any("pending: research/train-1" in line for line in shown)
    assert missing(shown, printed) == []


def test_make_runs_excerpt_is_what_pumice_run_sim_prints() -> None:
    exit_code, printed = run(["run", "--sim", "--until-idle"], ROOT)
    assert exit_code == 0, printed
    shown = excerpt("make run")[1:]  # the first line is make's echo of the command
    assert any(line.startswith("bound ") for line in shown)
    assert missing(shown, printed) == []
