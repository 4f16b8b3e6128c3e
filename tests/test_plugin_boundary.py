"""The import contracts of ``pyproject.toml``, run by the test suite: the layers, and the plugin
boundary (plugins and actions import only ``pumice`` and their own private helpers).

import-linter reads the package from a tree laid out as the wheel is (``pumice/`` holding the
core, ``plugins/``, ``actions/`` and ``conf/``), as ``make layers`` does: it cannot follow the
editable install's remapped folders. The contracts name modules one by one, so the lists are
checked against the tree too: a new core module or a new plugin is never left out of them.
"""

from __future__ import annotations

import os
import pkgutil
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
WHEEL_FOLDERS = ("plugins", "actions", "conf")
PUBLIC_COMPANIONS = {"pumice.volumes"}
"""Core modules that are public API beside ``pumice`` itself (docs/plugins.md)."""


def contracts() -> dict[str, dict[str, Any]]:
    with open(ROOT / "pyproject.toml", "rb") as f:
        listed = tomllib.load(f)["tool"]["importlinter"]["contracts"]
    return {c["id"]: c for c in listed if "id" in c}


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``build/pkgtree``'s layout, copied (``.pyc`` caches left out)."""
    root = tmp_path_factory.mktemp("pkgtree")
    skip = shutil.ignore_patterns("__pycache__")
    shutil.copytree(ROOT / "scheduler", root / "pumice", ignore=skip)
    for folder in WHEEL_FOLDERS:
        shutil.copytree(ROOT / folder, root / "pumice" / folder, ignore=skip)
    return root


def lint_imports(tree: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    args = [str(LINT_IMPORTS), "--no-cache", str(ROOT / "pyproject.toml")]
    return subprocess.run(args, cwd=tree, env=env, capture_output=True, text=True, timeout=300)


def modules_under(package: Path, prefix: str) -> set[str]:
    return {prefix + info.name for info in pkgutil.iter_modules([str(package)])}


def test_every_import_contract_is_kept(tree: Path) -> None:
    run = lint_imports(tree)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 broken" in run.stdout


def test_the_public_api_contract_forbids_every_core_module(tree: Path) -> None:
    contract = contracts()["public-api-only"]
    assert contract["source_modules"] == ["pumice.plugins", "pumice.actions"]
    core = modules_under(tree / "pumice", "pumice.") - {"pumice.plugins", "pumice.actions"}
    assert set(contract["forbidden_modules"]) == core - PUBLIC_COMPANIONS


def test_the_independence_contract_lists_every_plugin_and_action_module(tree: Path) -> None:
    public = set()
    for package in ("plugins", "actions"):
        found = modules_under(tree / "pumice" / package, f"pumice.{package}.")
        public |= {m for m in found if not m.rsplit(".", 1)[1].startswith("_")}
    assert set(contracts()["no-plugin-imports-another"]["modules"]) == public


def test_a_plugin_reaching_into_the_core_breaks_the_contract(tmp_path: Path, tree: Path) -> None:
    """The contract can fail: a plugin importing the model directly, and one importing another
    plugin's private helper, are both reported with the line."""
    sneaky = tmp_path / "tree"
    shutil.copytree(tree, sneaky)
    (sneaky / "pumice" / "plugins" / "sneaky.py").write_text(
        "from pumice.model.terms import HostPort\n"
    )
    (sneaky / "pumice" / "actions" / "nosy.py").write_text(
        "from pumice.plugins._k8s_terms import NodeTerms\n"
    )
    run = lint_imports(sneaky)
    assert run.returncode != 0
    out = run.stdout
    assert "Plugins and actions import only the public API of pumice BROKEN" in out
    assert "pumice.plugins.sneaky -> pumice.model.terms (l.1)" in out
    assert "A private helper of plugins or actions is imported only by its own package BROKEN" in (
        out
    )
    assert "pumice.actions.nosy -> pumice.plugins._k8s_terms (l.1)" in out
