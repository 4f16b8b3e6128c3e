"""``pumice run``'s operations flags: bad values exit 2 naming them."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--http-address", "nowhere"], "--http-address"),
        (["--http-address", "127.0.0.1:99999"], "--http-address"),
        (["--identity", "two words"], "--identity"),
        (["--leader-elect", "--no-leader-elect"], "--no-leader-elect"),
    ],
)
def test_bad_operations_flags_exit_2_naming_them(args: list[str], words: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pumice.cli", "run", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2, result.stderr
    assert words in result.stderr, result.stderr
