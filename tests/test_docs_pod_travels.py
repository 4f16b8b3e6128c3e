"""``docs/how-a-pod-travels.md`` names modules that exist, and the README links to it."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "how-a-pod-travels.md"


def test_every_module_the_page_names_exists() -> None:
    named = sorted(set(re.findall(r"`(pumice(?:\.\w+)+)", PAGE.read_text())))
    assert len(named) > 30  # the page names the whole way, not a few stops
    missing = []
    for name in named:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError:
            missing.append(name)
    assert missing == []


def test_the_readme_links_the_page() -> None:
    assert "(docs/how-a-pod-travels.md)" in (ROOT / "README.md").read_text()
