"""What a plugin sees of its session.

A plugin is handed this view in ``session_open`` and ``session_close``, not the session: the
cluster snapshot it schedules over and the reasons it may record for tasks and jobs. It does
not reach the plugin host, the configuration or the other plugins (a plugin's own entry in the
configuration is ``self.option``), so plugins stay independent of each other and of how the
session is run.
"""

from __future__ import annotations

from typing import Protocol

from pumice.model.node import NodeInfo, NodeTable
from pumice.model.objects import JobInfo, QueueInfo
from pumice.model.snapshot import ClusterSnapshot


class Viewed(Protocol):
    """What the view reads of its session (the session's shape, not the session's module)."""

    @property
    def uid(self) -> str: ...

    @property
    def snapshot(self) -> ClusterSnapshot: ...

    @property
    def jobs(self) -> dict[str, JobInfo]: ...

    @property
    def nodes(self) -> dict[str, NodeInfo]: ...

    @property
    def queues(self) -> dict[str, QueueInfo]: ...

    @property
    def table(self) -> NodeTable: ...

    @property
    def task_reasons(self) -> dict[str, str]: ...

    @property
    def job_reasons(self) -> dict[str, str]: ...


class SessionView:
    """A plugin's narrow view of one session (see the module docstring)."""

    __slots__ = ("_session",)

    def __init__(self, session: Viewed) -> None:
        self._session = session

    @property
    def uid(self) -> str:
        """This session's id (new every cycle)."""
        return self._session.uid

    @property
    def snapshot(self) -> ClusterSnapshot:
        return self._session.snapshot

    @property
    def jobs(self) -> dict[str, JobInfo]:
        """Job uid -> job, as the session currently has them (read; never change them)."""
        return self._session.jobs

    @property
    def nodes(self) -> dict[str, NodeInfo]:
        return self._session.nodes

    @property
    def queues(self) -> dict[str, QueueInfo]:
        return self._session.queues

    @property
    def table(self) -> NodeTable:
        return self._session.table

    @property
    def task_reasons(self) -> dict[str, str]:
        """Task uid -> why it stays pending this session (plugins may add to it)."""
        return self._session.task_reasons

    @property
    def job_reasons(self) -> dict[str, str]:
        """Job uid -> why it is not (fully) scheduled this session (plugins may add to it)."""
        return self._session.job_reasons

    def __repr__(self) -> str:
        return f"SessionView({self._session.uid})"
