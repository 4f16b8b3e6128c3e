"""What plugins contribute to status and metrics at session close, combined by the contract.

Four hooks (see ``pumice.framework.hookspecs``), called once each session after
``session_close``, only when some enabled plugin implements them:

* ``podgroup_conditions(job)``: every plugin's conditions, appended in tier order;
* ``queue_status(queue)``: every plugin's fields, merged; a key set by two plugins, or one the
  framework itself writes (``FRAMEWORK_QUEUE_KEYS``), is a ``PluginContractError``;
* ``queue_events(queue)``: every plugin's ``(reason, message)`` Warning events, appended;
* ``metric_samples()``: every plugin's samples, kept with the plugin's name.

An answer that breaks these rules is left out and its ``PluginContractError`` kept in
``Contributions.errors``; the session logs each once (``Session.close``), and
``pumice simulate`` refuses to report a session whose plugins broke it (exit 2).

The owner of the session (the daemon's status writer and metrics, ``pumice simulate``'s report)
reads the result from ``Session.contributions``; it never asks a plugin by name or type.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pumice.framework.hookcalls import PluginContractError
from pumice.framework.results import MetricSample
from pumice.model.objects import JobInfo, QueueInfo

log = logging.getLogger("pumice.framework")

Hook = Callable[..., Any]
Obj = dict[str, Any]

FRAMEWORK_QUEUE_KEYS = frozenset(
    {"allocated", "pending", "inqueue", "running", "completed", "unknown", "state"}
)
"""Queue status keys the framework writes: no plugin may set them."""


@dataclass
class Contributions:
    """The plugins' share of a session's status and metrics."""

    conditions: dict[str, list[Obj]] = field(default_factory=dict)
    """Job uid -> the conditions plugins add to its PodGroup (jobs with any only)."""
    queue_fields: dict[str, Obj] = field(default_factory=dict)
    """Queue name -> the fields plugins set in its status (queues with any only)."""
    queue_events: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    """Queue name -> the (reason, message) events plugins want on it (queues with any only)."""
    samples: list[tuple[str, MetricSample]] = field(default_factory=list)
    """(plugin name, sample), in tier order."""
    errors: list[PluginContractError] = field(default_factory=list)
    """Answers left out because they broke the contract (each names its plugin)."""


def gather(
    hooks: Mapping[str, list[tuple[str, Hook]]],
    jobs: Mapping[str, JobInfo],
    queues: Mapping[str, QueueInfo],
) -> Contributions:
    """Call the hooks and combine their answers (see the module docstring). An answer that
    breaks the contract is left out and its ``PluginContractError`` kept in ``errors``: one
    plugin's bug must not cost every other plugin's status, nor the framework's own."""
    out = Contributions()
    for name, hook in hooks.get("podgroup_conditions", ()):
        for uid, job in jobs.items():
            if job.podgroup is not None:
                answer = _call(name, "podgroup_conditions", hook, job)
                _keep(out, _conditions, name, answer, out.conditions, uid)
    owners: dict[tuple[str, str], str] = {}
    for name, hook in hooks.get("queue_status", ()):
        for queue_name, queue in queues.items():
            answer = _call(name, "queue_status", hook, queue)
            try:
                fields = _queue_fields(name, answer, queue_name, owners)
            except PluginContractError as error:
                out.errors.append(error)
                continue
            if fields:
                out.queue_fields.setdefault(queue_name, {}).update(fields)
                for key in fields:
                    owners[(queue_name, key)] = name
    for name, hook in hooks.get("queue_events", ()):
        for queue_name, queue in queues.items():
            answer = _call(name, "queue_events", hook, queue)
            _keep(out, _events, name, answer, out.queue_events, queue_name)
    for name, hook in hooks.get("metric_samples", ()):
        answer = _call(name, "metric_samples", hook)
        try:
            samples = _samples(name, answer)
        except PluginContractError as error:
            out.errors.append(error)
            continue
        out.samples.extend((name, sample) for sample in samples)
    return out


def _keep(
    out: Contributions,
    check: Callable[[str, Any], list[Any]],
    name: str,
    answer: Any,
    into: dict[str, list[Any]],
    key: str,
) -> None:
    """Append the checked answer's items to ``into[key]``, or keep the contract error."""
    try:
        items = check(name, answer)
    except PluginContractError as error:
        out.errors.append(error)
        return
    if items:
        into.setdefault(key, []).extend(items)


def _conditions(name: str, answer: Any) -> list[Obj]:
    if answer is None:
        return []
    if not isinstance(answer, list) or not all(isinstance(c, dict) for c in answer):
        raise PluginContractError(
            f"plugin {name} podgroup_conditions returned {answer!r}, not a list of dicts"
        )
    return answer


def _queue_fields(
    name: str, answer: Any, queue_name: str, owners: Mapping[tuple[str, str], str]
) -> Obj:
    if answer is None:
        return {}
    if not isinstance(answer, dict):
        raise PluginContractError(f"plugin {name} queue_status returned {answer!r}, not a dict")
    for key in answer:
        if key in FRAMEWORK_QUEUE_KEYS:
            raise PluginContractError(
                f"plugin {name} queue_status sets {key!r}, which the framework writes"
            )
        other = owners.get((queue_name, key), name)
        if other != name:
            raise PluginContractError(
                f"plugins {other} and {name} both set {key!r} in the status of queue {queue_name}"
            )
    return answer


def _events(name: str, answer: Any) -> list[tuple[str, str]]:
    if not answer:
        return []
    if not isinstance(answer, list) or not all(_is_event(e) for e in answer):
        raise PluginContractError(
            f"plugin {name} queue_events returned {answer!r}, not (reason, message) pairs"
        )
    return [tuple(e) for e in answer]


def _samples(name: str, answer: Any) -> list[MetricSample]:
    samples = list(answer or ())
    for sample in samples:
        if not isinstance(sample, MetricSample):
            raise PluginContractError(
                f"plugin {name} metric_samples gave {sample!r}, not a MetricSample"
            )
    return samples


def _is_event(event: Any) -> bool:
    return (
        isinstance(event, tuple | list)
        and len(event) == 2
        and all(isinstance(part, str) for part in event)
    )


def _call(name: str, hook_name: str, hook: Hook, *args: Any) -> Any:
    """A plugin that fails here loses its contribution, not the session's status."""
    try:
        return hook(*args)
    except PluginContractError:
        raise
    except Exception:
        log.exception("plugin %s failed in %s", name, hook_name)
        return None


def metric_name(plugin: str, sample: str) -> str:
    """``pumice_<plugin>_<sample>``, with every character Prometheus refuses as ``_``."""
    raw = f"pumice_{plugin}_{sample}"
    return "".join(c if c.isalnum() or c == "_" else "_" for c in raw)
