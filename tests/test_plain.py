"""``pumice.plain``: the one definition of ``Obj``, a Kubernetes object as a plain dict."""

from __future__ import annotations

import ast
from pathlib import Path

from pumice.plain import Obj

ROOT = Path(__file__).resolve().parents[1]


def assignments_of(name: str, folder: Path) -> list[str]:
    """Every module-level ``name = ...`` (or annotated) assignment in ``folder``'s modules."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        for node in ast.parse(path.read_text()).body:
            targets = node.targets if isinstance(node, ast.Assign) else []
            if isinstance(node, ast.AnnAssign):
                targets = [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                found.append(str(path.relative_to(ROOT)))
    return found


def test_obj_is_defined_once_in_the_package() -> None:
    places = [
        p for f in ("scheduler", "plugins", "actions") for p in assignments_of("Obj", ROOT / f)
    ]
    assert places == ["scheduler/plain.py"]
    assert Obj == dict[str, object] or Obj.__origin__ is dict
