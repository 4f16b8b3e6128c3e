"""A pytest plugin that records every session's decisions, for before/after comparisons.

Refactors of decision code must leave the decisions of the action tests unchanged (or explain
each difference). Run the suite with this plugin before and after, then compare the files::

    PUMICE_RECORD_DECISIONS=/tmp/before.json .venv/bin/pytest -p support.decisions tests -q
    PUMICE_RECORD_DECISIONS=/tmp/after.json  .venv/bin/pytest -p support.decisions tests -q
    diff <(python -m json.tool /tmp/before.json) <(python -m json.tool /tmp/after.json)

For each test, each session opened during it is recorded at close: the committer's decisions,
where every task ended up (status and node), and the reasons given for tasks and jobs left
pending. Nothing is recorded unless the environment variable is set.

While recording, hypothesis draws its examples from a seed derived from each test (its
``derandomize`` setting): property tests otherwise try new examples on every run, and their
sessions would differ between the before and the after file for no fault of the change.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import settings

from pumice.framework import Session

if os.environ.get("PUMICE_RECORD_DECISIONS"):
    settings.register_profile("recording-decisions", derandomize=True, database=None)
    settings.load_profile("recording-decisions")

_RECORD: dict[str, list[dict[str, Any]]] = {}
_current: list[Session] = []


def session_record(session: Session) -> dict[str, Any]:
    """Everything a session decided, keyed by task and job names (never by object identity)."""
    committer = session.committer
    decisions = [list(d) for d in getattr(committer, "decisions", [])]
    keys: dict[str, str] = {}
    placement: dict[str, list[Any]] = {}
    for job in session.jobs.values():
        for task in job.tasks.values():
            keys[task.uid] = task.key
            placement[task.key] = [task.status.name, task.node_name]
    return {
        "decisions": decisions,
        "placement": dict(sorted(placement.items())),
        "task_reasons": dict(
            sorted((keys.get(uid, uid), why) for uid, why in session.task_reasons.items())
        ),
        "job_reasons": dict(sorted(session.job_reasons.items())),
        "phases": {uid: job.phase for uid, job in sorted(session.jobs.items())},
    }


@pytest.fixture(autouse=True)
def _record_sessions(request: pytest.FixtureRequest) -> Iterator[None]:
    if not os.environ.get("PUMICE_RECORD_DECISIONS"):
        yield
        return
    original = Session.open.__func__  # type: ignore[attr-defined]

    def recording_open(cls: type[Session], *args: Any, **kwargs: Any) -> Session:
        session: Session = original(cls, *args, **kwargs)
        _current.append(session)
        return session

    records: list[dict[str, Any]] = []
    original_dispose = Session.dispose

    def recording_dispose(session: Session) -> None:
        # a disposed session is empty afterwards: record it now, and let it go
        if session in _current:
            _current.remove(session)
            session.close()
            records.append(session_record(session))
        original_dispose(session)

    Session.open = classmethod(recording_open)  # type: ignore[method-assign,assignment]
    Session.dispose = recording_dispose  # type: ignore[method-assign]
    try:
        yield
    finally:
        Session.open = classmethod(original)  # type: ignore[method-assign,assignment]
        Session.dispose = original_dispose  # type: ignore[method-assign]
        records.extend(session_record(s) for s in _current)
        if records:
            _RECORD[request.node.nodeid] = records
        _current.clear()


def pytest_sessionfinish(session: pytest.Session) -> None:
    path = os.environ.get("PUMICE_RECORD_DECISIONS")
    if path:
        with open(path, "w", encoding="utf-8") as out:
            json.dump(_RECORD, out, indent=1, sort_keys=True, default=str)
