"""The ``pumice`` command: check-config's exit codes and messages, and the plugin list."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PUMICE = [sys.executable, "-c", "import sys; from pumice.cli import main; sys.exit(main())"]


def pumice(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*PUMICE, *args], capture_output=True, text=True, timeout=60)


def test_the_default_config_passes() -> None:
    result = pumice("check-config", str(ROOT / "conf" / "scheduler.yaml"))
    assert result.returncode == 0, result.stderr
    assert "ok: 3 actions (enqueue, allocate, backfill), 8 plugins in 2 tiers" in result.stdout


@pytest.mark.parametrize(
    ("text", "line", "key", "words"),
    [
        (
            "actions: enqueue, allocat\ntiers:\n- plugins:\n  - name: gang\n",
            1,
            "actions",
            "unknown action 'allocat'",
        ),
        (
            "actions: allocate\ntiers:\n- plugins:\n  - name: gang\n  - name: gangg\n",
            5,
            "tiers[0].plugins[1].name",
            "unknown plugin 'gangg'",
        ),
        (
            "actions: allocate\ntiers:\n- plugins:\n  - name: gang\n    enablePredicat: true\n",
            5,
            "tiers[0].plugins[0].enablePredicat",
            "unknown key",
        ),
        (
            "actions: allocate\ntiers:\n- plugins:\n  - name: gang\n    enablePredicate: maybe\n",
            5,
            "tiers[0].plugins[0].enablePredicate",
            "",
        ),
        (
            "actions: allocate\ntiers:\n- plugins:\n  - name: gang\nscheduler:\n  period: -1s\n",
            6,
            "scheduler.period",
            "",
        ),
        ("actions: allocate\ntiers:\n- plugins:\n  - name: gang\n   - oops: [\n", None, None, ""),
    ],
    ids=["unknown-action", "unknown-plugin", "unknown-key", "wrong-type", "bad-value", "bad-yaml"],
)
def test_each_config_error_exits_2_with_file_line_and_key(
    tmp_path: Path, text: str, line: int | None, key: str | None, words: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    result = pumice("check-config", str(path))
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    message = lines[0]
    assert message.startswith(f"{path}:")
    if line is not None:
        assert message.startswith(f"{path}:{line}: {key}: ")
    else:
        assert message.split(":")[1].isdigit()  # bad YAML still names a line
    assert words in message


def test_a_missing_file_exits_2(tmp_path: Path) -> None:
    result = pumice("check-config", str(tmp_path / "nope.yaml"))
    assert result.returncode == 2 and "nope.yaml" in result.stderr


def test_plugins_lists_builtins_and_third_party_packages_and_reports_failures() -> None:
    result = pumice("plugins")
    assert result.returncode == 0, result.stderr
    rows = {line.split()[0]: line.split() for line in result.stdout.splitlines() if line}
    assert rows["example-zone"][1:4] == ["plugin", "pumice-example-plugin", "1.2.3"]
    assert rows["example-noop"][1] == "action"
    assert rows["gang"][1:3] == ["plugin", "pumice"]
    assert rows["allocate"][1:3] == ["action", "pumice"]
    assert "skipped: broken-plugin from pumice-broken-plugin" in result.stdout
    assert "pumice_dependency_that_does_not_exist" in result.stdout


def test_plugins_honours_a_config_deny_list(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(
        "actions: allocate\ntiers:\n- plugins:\n  - name: gang\n"
        "scheduler:\n  plugins:\n    deny: [pumice-broken-plugin, pumice-example-plugin]\n"
    )
    result = pumice("plugins", "--config", str(config))
    assert result.returncode == 0, result.stderr
    assert "example-zone" not in result.stdout and "skipped:" not in result.stdout
    assert "denied: package pumice-broken-plugin" in result.stdout


def test_a_command_imports_only_its_own_module() -> None:
    code = (
        "import sys; from pumice.cli import main; "
        f"rc = main(['check-config', {str(ROOT / 'conf' / 'scheduler.yaml')!r}]); "
        "print(rc, 'pumice.sim' in sys.modules, 'pumice.commands.explain' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.strip().splitlines()[-1] == "0 False False"


def test_run_loads_the_sim_only_for_sim_and_cryptography_only_for_tls() -> None:
    # `pumice run` against a cluster never loads the simulated API server; the sim loads
    # cryptography only to serve TLS (RBAC), not for a plain `--sim` demo.
    code = (
        "import sys; from pumice.cli import build_parser; build_parser(['run']); "
        "import pumice.commands.run; "
        "sim = any(m.startswith('pumice.sim') for m in sys.modules); "
        "print(sim, 'cryptography' in sys.modules); "
        "from pumice.sim import SimConfig, SimServer; SimServer(SimConfig()); "
        "print('cryptography' in sys.modules); "
        "SimServer(SimConfig(authorization='rbac')); print('cryptography' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.split() == ["False", "False", "False", "True"], result.stderr


def test_help_lists_every_command_and_each_command_has_its_flags() -> None:
    top = pumice("--help")
    assert top.returncode == 0
    for name in ("check-config", "plugins", "run-example", "sim-cluster"):
        assert name in top.stdout
    assert "--cluster" in pumice("sim-cluster", "--help").stdout
    assert "--config" in pumice("plugins", "--help").stdout


def test_plugins_with_a_config_shows_its_warnings(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(
        "actions: allocate\ntiers:\n- plugins:\n  - name: gang\n  - name: nodeorder\n"
        "    arguments:\n      imagelocality.weight: 2\n"
    )
    result = pumice("plugins", "--config", str(config))
    assert result.returncode == 0, result.stderr
    assert (
        f"{config}:7: tiers[0].plugins[1].arguments.imagelocality.weight: warning: set but not "
        "implemented in pumice; ignored"
    ) in result.stderr.splitlines()
    assert "nodeorder" in result.stdout
