"""Calling plugin hook implementations on the hot path, and checking what they answer.

The session calls implementations directly (not through pluggy's dispatch): an implementation
may take a subset of a hook's arguments (pluggy's rule), so each is wrapped once, when the
session opens, into a callable taking the hook's full argument list.

Errors::

    SessionError              a configured plugin or action is unknown or fails to start
    PluginContractError       a plugin answered with the wrong shape or type
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from pumice.framework.base import Plugin
from pumice.framework.results import Vote
from pumice.model.objects import TaskInfo
from pumice.plain import PumiceError

Hook = Callable[..., Any]


class SessionError(PumiceError):
    """A configured plugin or action is unknown or could not be started."""


class PluginContractError(SessionError):
    """A plugin's answer does not have the shape the contract asks for."""


def adapt(method: Hook, argnames: Sequence[str], spec_args: Sequence[str]) -> Hook:
    """Call an implementation that takes a subset of the hook's arguments positionally."""
    if tuple(argnames) == tuple(spec_args):
        return method
    picks = [spec_args.index(a) for a in argnames]

    def call(*args: Any) -> Any:
        return method(*(args[i] for i in picks))

    return call


@dataclass(slots=True)
class HookTime:
    """What one plugin's implementation of one hook cost in a session."""

    seconds: float = 0.0
    calls: int = 0


def timed(call: Hook, into: HookTime) -> Hook:
    """``call``, adding the wall-clock time of each call to ``into`` (a nested call into the
    session from inside the hook is part of it). Two clock reads and two additions per call:
    accumulated here and observed once per session by whoever reads ``into``."""
    clock = time.perf_counter

    def timed_call(*args: Any) -> Any:
        started = clock()
        try:
            return call(*args)
        finally:
            into.seconds += clock() - started
            into.calls += 1

    return timed_call


def row_maker(plugin: object, hook: str, clock: HookTime | None) -> Hook | None:
    """The plugin's row function maker for a row-local ``hook`` (``Plugin.predicate_row`` /
    ``node_score_row``), if its class provides one; with ``clock``, the functions it makes
    are clocked into the hook's time (they answer for it)."""
    name = ROW_MAKERS[hook]
    method = getattr(type(plugin), name, None)
    if method is None or method is getattr(Plugin, name):  # the base class's: none
        return None
    make: Hook = getattr(plugin, name)
    if clock is None:
        return make

    def timed_make(*args: Any) -> Any:
        function = make(*args)
        return None if function is None else timed(function, clock)

    return timed_make


ROW_MAKERS = {"predicate": "predicate_row", "node_score": "node_score_row"}
"""Row-local hook -> the plugin method that makes its row functions."""


def is_row_local(hook: str, method: Hook) -> bool:
    """Does this implementation of ``predicate`` / ``node_score`` accept ``rows``? (With or
    without a default: pluggy leaves defaulted arguments out of its argument names.)"""
    return hook in ("predicate", "node_score") and "rows" in inspect.signature(method).parameters


def adapt_by_name(method: Hook, spec_args: Sequence[str]) -> Hook:
    """Call an implementation with every hook argument it names, by keyword (positionally
    when it names them all, in order)."""
    names = list(inspect.signature(method).parameters)
    if names == list(spec_args):
        return method
    picks = [(name, spec_args.index(name)) for name in names]

    def call(*args: Any) -> Any:
        return method(**{name: args[i] for name, i in picks})

    return call


def read_only(arr: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """A read-only view: callers may keep it, never change the cache behind it."""
    view = arr.view()
    view.flags.writeable = False
    return view


def vector_answer(plugin: str, what: str, value: Any, n: int, dtype: Any) -> npt.NDArray[Any]:
    """``value`` as a vector of ``n`` entries, or ``PluginContractError`` naming the plugin."""
    arr = np.asarray(value, dtype=dtype)
    if arr.shape == () and n == 1:  # one row asked for, a plain number answered
        arr = arr.reshape(1)
    if arr.shape != (n,):
        raise PluginContractError(
            f"plugin {plugin} returned {what} of shape {arr.shape}; expected ({n},) over the nodes"
        )
    return arr


def first_message(hooks: list[tuple[str, Hook]], *args: Any) -> str | None:
    """The first non-empty message a plugin answers (a ``…_reason`` hook)."""
    for name, hook in hooks:
        message = hook(*args)
        if message is None or message == "":
            continue
        if not isinstance(message, str):
            raise PluginContractError(f"plugin {name} returned {message!r}, not a message")
        return message
    return None


def tier_vote(hook_name: str, tiers: Sequence[list[tuple[str, Hook]]], job: Any) -> bool:
    """Volcano's vote over tiers (``job_pipelined``, ``job_enqueueable``): any REJECT says no;
    a PERMIT ends the walk at the end of its tier; all abstaining says yes."""
    for tier in tiers:
        permitted = False
        for name, hook in tier:
            vote = hook(job)
            if vote not in (Vote.REJECT, Vote.ABSTAIN, Vote.PERMIT):
                raise PluginContractError(f"plugin {name} {hook_name} returned {vote!r}")
            if vote == Vote.REJECT:
                return False
            permitted = permitted or vote == Vote.PERMIT
        if permitted:
            return True
    return True


def tier_victims(
    guards: Sequence[tuple[str, Hook]],
    tiers: Sequence[list[tuple[str, Hook]]],
    initiator: TaskInfo,
    candidates: Sequence[TaskInfo],
) -> list[TaskInfo]:
    """Victims among ``candidates`` (``preemptable`` / ``reclaimable``): the protecting plugins
    (``guards``) remove what they leave out first; then the first tier with a non-empty
    answer wins, its plugins' answers intersected."""
    for _, guard in guards:
        kept = guard(initiator, candidates)
        if kept is None:
            continue
        keep = {t.uid for t in kept}
        candidates = [t for t in candidates if t.uid in keep]
        if not candidates:
            return []
    for tier in tiers:
        victims: list[TaskInfo] | None = None
        for _, hook in tier:
            answer = hook(initiator, candidates)
            if answer is None:
                continue
            if not answer:
                victims = None
                break
            if victims is None:
                victims = list(answer)
            else:
                keep = {t.uid for t in answer}
                victims = [t for t in victims if t.uid in keep]
                if not victims:
                    victims = None
                    break
        if victims:
            return victims
    return []
