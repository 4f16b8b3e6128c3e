"""What a plugin sees of its session, and what every narrow view of a session shares.

A plugin is handed a ``SessionView`` in ``session_open`` and ``session_close``, not the session:
the cluster snapshot it schedules over and the reasons it may record for tasks and jobs. It does
not reach the plugin host, the configuration or the other plugins (a plugin's own entry in the
configuration is ``self.option``), so plugins stay independent of each other and of how the
session is run. An action's ``ActionContext`` (``pumice.framework.action``) starts from the same
``SessionPart``: the jobs, queues and node table, and the two reason books.

Both read the session through ``Viewed``, the shape of a session rather than its module, so this
module sits below the session's.
"""

from __future__ import annotations

from typing import Protocol

from pumice.model.node import NodeInfo, NodeTable
from pumice.model.objects import JobInfo, QueueInfo
from pumice.model.snapshot import ClusterSnapshot


class Viewed(Protocol):
    """What the views read of their session."""

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


class SessionPart:
    """What every narrow view of a session shows: its jobs, queues and node table (read them;
    never change them), and the books of reasons for what stays pending."""

    __slots__ = ("_session",)

    def __init__(self, session: Viewed) -> None:
        self._session = session

    @property
    def jobs(self) -> dict[str, JobInfo]:
        """Job uid -> job, as the session has them now."""
        return self._session.jobs

    @property
    def queues(self) -> dict[str, QueueInfo]:
        """Queue name -> queue."""
        return self._session.queues

    @property
    def table(self) -> NodeTable:
        """Every node, row by row: resources as columns, ``table.nodes[row]`` the ``NodeInfo``."""
        return self._session.table

    @property
    def task_reasons(self) -> dict[str, str]:
        """Task uid -> why it stays pending this session (the pod's condition and event)."""
        return self._session.task_reasons

    @property
    def job_reasons(self) -> dict[str, str]:
        """Job uid -> why it is not (fully) scheduled this session (the PodGroup's condition)."""
        return self._session.job_reasons

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._session.uid})"


class SessionView(SessionPart):
    """A plugin's narrow view of one session (see the module docstring)."""

    __slots__ = ()

    @property
    def uid(self) -> str:
        """This session's id (new every cycle)."""
        return self._session.uid

    @property
    def snapshot(self) -> ClusterSnapshot:
        return self._session.snapshot

    @property
    def nodes(self) -> dict[str, NodeInfo]:
        return self._session.nodes
