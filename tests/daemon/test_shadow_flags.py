"""``pumice run --shadow``'s flags: bad ones exit 2 naming them; a shadow can only read."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pumice.commands.config_commands import load_checked
from pumice.daemon import DaemonOptions
from pumice.daemon.shadow import ShadowDaemon, ShadowOptions
from pumice.kube import KubeSettings


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--shadow-of", "kube-scheduler"], "--shadow-of needs --shadow"),
        (["--report", "r.jsonl"], "--report needs --shadow"),
        (["--shadow", "--shadow-grace", "5s"], "unrecognized arguments: --shadow-grace"),
        (["--shadow", "--shadow-of", " "], "--shadow-of"),
        (["--shadow", "--report", "/nonexistent/dir/r.jsonl"], "--report"),
    ],
)
def test_bad_shadow_flags_exit_2_naming_them(args: list[str], words: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pumice.cli", "run", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2, result.stderr
    assert words in result.stderr, result.stderr


def test_a_shadow_is_a_dry_run_with_a_read_only_client_watching_the_named_scheduler(
    tmp_path: Path,
) -> None:
    config, host = load_checked(None)
    options = DaemonOptions(config=config, host=host, kube=KubeSettings(kubeconfig="none"))
    shadow = ShadowDaemon(options, ShadowOptions(of="kube-scheduler", report=tmp_path / "r"))
    assert shadow.dry_run and not shadow.leading
    assert shadow.options.kube.read_only
    assert not options.kube.read_only and not options.dry_run  # the caller's are untouched
    assert shadow.scheduler_name == "kube-scheduler"
    plain = ShadowDaemon(options, ShadowOptions())
    assert plain.scheduler_name == config.scheduler.scheduler_name
    shadow.report.close()
