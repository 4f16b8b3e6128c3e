"""The plugin and action contracts as docs/plugins.md and docs/actions.md write them out, against
the code: every hook of the plugin contract is on the plugin page, every member of
``ActionContext`` on the action page, and neither page names one that does not exist."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

from pumice import ActionContext
from pumice.framework.hookspecs import HOOK_FLAGS

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_the_action_page_names_every_member_of_the_context_and_no_other() -> None:
    members = {name for name, _ in inspect.getmembers(ActionContext) if not name.startswith("_")}
    named = set(re.findall(r"`context\.([a-z_]+)", (DOCS / "actions.md").read_text()))
    assert named == members


def test_the_plugin_page_has_a_row_for_every_hook_and_no_other() -> None:
    page = (DOCS / "plugins.md").read_text()
    table = page.split("## The hooks", 1)[1].split("**Row-local answers.**", 1)[0]
    named = set(re.findall(r"`([a-z_]+)\(", table))
    assert named == set(HOOK_FLAGS)


def test_the_readme_links_both_pages() -> None:
    readme = (DOCS.parent / "README.md").read_text()
    assert "docs/plugins.md" in readme and "docs/actions.md" in readme
