"""The wheel holds one import root, ``pumice``, with every module of the mapped folders."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAPPING = {
    "scheduler": "pumice",
    "plugins": "pumice/plugins",
    "actions": "pumice/actions",
    "conf": "pumice/conf",
}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(ROOT / name, src / name)
    for folder in MAPPING:
        shutil.copytree(ROOT / folder, src / folder, ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "build",
            "--wheel",
            "--no-isolation",
            "--outdir",
            str(out),
            str(src),
        ],
        check=True,
        capture_output=True,
    )
    [path] = out.glob("pumice-*.whl")
    return zipfile.ZipFile(path)


def test_every_module_is_inside_pumice_and_nothing_else_is_top_level(
    wheel: zipfile.ZipFile,
) -> None:
    names = set(wheel.namelist())
    tops = {n.split("/")[0] for n in names}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"pumice"}
    expected = set()
    for folder, target in MAPPING.items():
        for path in (ROOT / folder).rglob("*.py"):
            if "__pycache__" not in path.parts:
                expected.add(f"{target}/{path.relative_to(ROOT / folder).as_posix()}")
    missing = expected - names
    assert not missing, f"modules missing from the wheel: {sorted(missing)}"


def test_data_files_and_entry_points_are_shipped(wheel: zipfile.ZipFile) -> None:
    names = set(wheel.namelist())
    assert "pumice/py.typed" in names
    assert "pumice/conf/scheduler.yaml" in names
    for example in (ROOT / "conf" / "examples").glob("*.yaml"):
        assert f"pumice/conf/examples/{example.name}" in names
    [entry_points] = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
    text = wheel.read(entry_points).decode()
    assert "[pumice]" in text and "pumice = pumice.cli:main" in text
    # the kubectl plugin: kubectl finds ``kubectl-pumice`` on PATH
    assert "kubectl-pumice = pumice.cli:kubectl_main" in text
    for name in (
        "priority",
        "gang",
        "conformance",
        "drf",
        "predicates",
        "proportion",
        "nodeorder",
        "binpack",
        "enqueue",
        "allocate",
        "backfill",
    ):
        assert f"\n{name} = pumice." in text


@pytest.mark.parametrize("name", ["scheduler", "plugins", "actions", "conf"])
def test_repository_folders_are_not_importable_top_level_names(name: str) -> None:
    # Guards against running pytest as `python -m pytest`, which puts the repo root on sys.path.
    spec = importlib.util.find_spec(name)
    if spec is None:
        return
    places = [Path(p).resolve() for p in (spec.submodule_search_locations or [])]
    assert ROOT / name not in places, f"{name} resolves to the repository folder"
