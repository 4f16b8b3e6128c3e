"""``pumice check-config`` on the resource-scoring plugins: their arguments are checked when
the configuration loads, located by file, line and key, and dropped patterns are warned."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PUMICE = [sys.executable, "-c", "import sys; from pumice.cli import main; sys.exit(main())"]


def pumice(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*PUMICE, *args], capture_output=True, text=True, timeout=60)


def test_the_shipped_ai_cluster_config_passes() -> None:
    result = pumice("check-config", str(ROOT / "conf" / "examples" / "ai-scheduler.conf"))
    assert result.returncode == 0, result.stderr
    assert "ok: 3 actions (enqueue, allocate, backfill), 6 plugins in 2 tiers" in result.stdout


def test_a_bad_shape_exits_2_naming_file_line_and_key(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(
        "actions: allocate\n"
        "tiers:\n"
        "- plugins:\n"
        "  - name: binpack\n"
        "    arguments:\n"
        "      shape:\n"
        "      - {utilization: 50, score: 2}\n"
        "      - {utilization: 20, score: 8}\n"
    )
    result = pumice("check-config", str(path))
    assert result.returncode == 2
    assert result.stderr.strip() == (
        f"{path}:8: tiers[0].plugins[0].arguments.shape[1].utilization: "
        "must be greater than the previous point's (50), got 20"
    )


def test_dropped_patterns_are_warned_by_name_and_the_config_still_passes(tmp_path: Path) -> None:
    path = tmp_path / "patterns.yaml"
    path.write_text(
        "actions: allocate\n"
        "tiers:\n"
        "- plugins:\n"
        "  - name: resource-strategy-fit\n"
        "    arguments:\n"
        "      resources:\n"
        "        nvidia.com/*: {type: MostAllocated}\n"
        "        vendor.*/gpu: {type: MostAllocated}\n"
        "        '*': {type: LeastAllocated}\n"
        "  - name: predicates\n"
    )
    result = pumice("-v", "check-config", str(path))
    assert result.returncode == 0, result.stderr
    warned = [line for line in result.stderr.splitlines() if "dropped" in line]
    assert len(warned) == 2
    assert "pattern 'vendor.*/gpu' dropped" in warned[0]
    assert "pattern '*' dropped" in warned[1]


def readme_plugin_examples() -> list[str]:
    """The YAML examples of one plugin on the page about these plugins (the README links it)."""
    text = (ROOT / "docs" / "resource-plugins.md").read_text()
    section = text.split("# Packing and spreading by resource", 1)[1]
    blocks = [b.split("```", 1)[0] for b in section.split("```yaml\n")[1:]]
    return [b for b in blocks if b.startswith("- name:")]


def test_the_readme_examples_pass_check_config(tmp_path: Path) -> None:
    examples = readme_plugin_examples()
    assert len(examples) == 4  # binpack, resource-strategy-fit, sra, proportional
    plugins = "".join("  " + line + "\n" for b in examples for line in b.splitlines())
    path = tmp_path / "readme.yaml"
    path.write_text(f"actions: allocate\ntiers:\n- plugins:\n{plugins}")
    result = pumice("-v", "check-config", str(path))
    assert result.returncode == 0, result.stderr
    assert "ok: 1 actions (allocate), 4 plugins in 1 tiers" in result.stdout
    assert "resource-strategy-fit" not in result.stderr  # nothing dropped or refused
