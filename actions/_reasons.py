"""Why no node can take a task: the ``0/N nodes are available: …`` message actions give.

Node reasons come before queue reasons (a pod that fits no node even in an empty queue is told
about the nodes, not about its queue), so every action that holds a task back for its queue
asks this first: ``allocate`` for the tasks an overused queue keeps, ``enqueue`` for the tasks
of a job its queue cannot admit.
"""

from __future__ import annotations

from pumice import FIT_TOLERANCE, ActionContext, Feasibility, TaskInfo


def no_node_message(context: ActionContext, task: TaskInfo) -> str | None:
    """The message when no node passes the predicates with room for ``task`` in its future
    idle resources (idle + releasing - pipelined); None when some node could take it."""
    feasibility = context.predicate(task)
    _, future = context.fit(task)
    if (feasibility.mask & future).any():
        return None
    return why_not(context, task, feasibility)


def why_not(context: ActionContext, task: TaskInfo, feasibility: Feasibility) -> str:
    """The message for a task that found no node: the predicates' reasons per node, and
    ``Insufficient <resource>`` for the nodes that passed them but lack room."""
    table = context.table
    request = table.vector(task.resreq)
    short_future = (request - table.future_idle) > FIT_TOLERANCE
    return feasibility.message(short_future, table.dims)
