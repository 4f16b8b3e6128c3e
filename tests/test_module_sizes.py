"""Module sizes: every module of pumice (the core, the built-in plugins and actions) other than a
package's ``__init__`` has 100 to 500 lines.

Under 100 lines a module is usually a piece of another one's job, and a newcomer has one more
name to learn; over 500 it holds more than one job. The source tree is read as it is, so a new
module is checked the day it is added.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("scheduler", "plugins", "actions")
FEWEST, MOST = 100, 500

SMALL_BY_DESIGN = {
    "scheduler/volumes.py": "pumice.volumes, the public companion of pumice for volume plugins: a "
    "list of names re-exported from pumice.model.volumes, where the rules live so that the core "
    "never imports the plugin API",
}
"""Modules allowed under ``FEWEST`` lines, each with the reason."""


def module_lines() -> dict[str, int]:
    """Path (relative to the repository) -> line count, for every module but ``__init__``."""
    sizes = {}
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path.name != "__init__.py":
                sizes[str(path.relative_to(ROOT))] = len(path.read_text().splitlines())
    return sizes


def test_every_module_has_100_to_500_lines() -> None:
    sizes = module_lines()
    assert len(sizes) > 100  # the whole tree was read, not an empty folder
    outside = {
        path: lines
        for path, lines in sizes.items()
        if lines > MOST or (lines < FEWEST and path not in SMALL_BY_DESIGN)
    }
    assert outside == {}, f"modules outside {FEWEST}-{MOST} lines: {outside}"


def test_the_small_by_design_modules_exist_and_are_small() -> None:
    sizes = module_lines()
    for path in SMALL_BY_DESIGN:
        assert path in sizes, f"{path} is gone: drop it from SMALL_BY_DESIGN"
        assert sizes[path] < FEWEST, f"{path} has grown: drop it from SMALL_BY_DESIGN"
