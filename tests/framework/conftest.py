"""Fixtures for framework tests (builders live in ``support.builders``)."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture
def calls() -> list[Any]:
    """A shared log that test plugins append to."""
    return []
