"""The scheduler configuration: Volcano's file format plus a ``scheduler:`` section.

The file is Volcano's ``volcano-scheduler.conf`` unchanged — ``actions`` (one comma-separated
string), ``tiers`` of ``plugins`` with ``arguments`` and ``enable…`` flags, ``configurations``
(per-action arguments) and ``metrics`` — plus an optional ``scheduler:`` section for the daemon::

    actions: "enqueue, allocate, backfill"
    tiers:
    - plugins:
      - name: gang
        enablePreemptable: false
    configurations:
    - name: allocate
      arguments: {predicateErrorCacheEnable: true}
    scheduler:
      schedulerName: pumice
      period: 1s

It is parsed once into frozen dataclasses and validated; every problem is a ``ConfigError``
naming the file, the line and the key path (``tiers[1].plugins[2].name``; indices are 0-based).
This module holds the dataclasses; ``pumice.framework.configparse`` validates a document into
them and ``pumice.framework.configfile`` reads a file (``load_config``, ``parse_config``) and
checks plugin and action names separately (``check_names``), because which names exist depends
on the plugin packages that the ``scheduler.plugins`` section allows.

Errors::

    AddressError     (PumiceError, ValueError) not a host:port to listen on
    ConfigError      (PumiceError) anything wrong with a configuration: unreadable file, bad YAML,
                     unknown key, wrong type, bad value, unknown plugin or action
"""

from __future__ import annotations

import difflib
import types
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pumice.framework.arguments import Arguments
from pumice.plain import PumiceError

__all__ = [
    "DEFAULT_FLAGS",
    "FLAGS",
    "FLAG_KEYS",
    "AddressError",
    "ConfigError",
    "LeaderElection",
    "PluginOption",
    "PluginPackages",
    "SchedulerConfig",
    "SchedulerSettings",
    "Tier",
    "closest_name",
]

FLAG_KEYS: Mapping[str, str] = types.MappingProxyType(
    {
        "enableJobOrder": "job_order",
        "enableQueueOrder": "queue_order",
        "enableTaskOrder": "task_order",
        "enablePredicate": "predicate",
        "enableNodeOrder": "node_order",
        "enableBestNode": "best_node",
        "enableJobReady": "job_ready",
        "enableJobPipelined": "job_pipelined",
        "enableJobEnqueued": "job_enqueueable",
        "enableJobStarving": "job_starving",
        "enablePreemptable": "preemptable",
        "enableReclaimable": "reclaimable",
        "enablePreemptive": "preemptive",
        "enabledOverused": "overused",
        "enabledAllocatable": "allocatable",
        "enableTargetJob": "target_job",
        "enableReservedNodes": "reserved_nodes",
        "enabledVictim": "victim",
        "enabledClusterOrder": "cluster_order",
        "enabledHyperNodeOrder": "hyper_node_order",
        "enabledSubJobReady": "sub_job_ready",
        "enabledSubJobPipelined": "sub_job_pipelined",
        "enabledSubJobOrder": "sub_job_order",
        "enabledHyperNodeGradient": "hyper_node_gradient",
    }
)
"""Volcano's YAML spelling of each enable flag (``enable…`` or ``enabled…``, as Volcano has
them) -> pumice's canonical flag name."""

FLAG_ALIASES: Mapping[str, str] = types.MappingProxyType(
    {"EnabledClusterOrder": "enabledClusterOrder"}  # Volcano v1.9's spelling
)

FLAGS: tuple[str, ...] = tuple(FLAG_KEYS.values())
"""Every canonical flag name, one per extension point that can be switched off."""

DEFAULT_FLAGS: Mapping[str, bool] = types.MappingProxyType(
    {flag: flag != "cluster_order" for flag in FLAGS}
)
"""An absent flag is on, except ``cluster_order`` (Volcano never defaults it)."""

TIE_BREAKS = ("deterministic", "random")


class ConfigError(PumiceError):
    """A configuration problem, located by file (``source``), 1-based ``line`` and dotted
    ``key`` path; either may be None when unknown. ``str()`` is one line:
    ``{source}:{line}: {key}: {message}``."""

    def __init__(
        self,
        message: str,
        *,
        source: str = "<string>",
        line: int | None = None,
        key: str | None = None,
    ) -> None:
        self.message = _one_line(message)
        self.source = source
        self.line = line
        self.key = _one_line(key) if key is not None else None
        super().__init__(self.message)

    def __str__(self) -> str:
        where = self.source if self.line is None else f"{self.source}:{self.line}"
        if self.key:
            return f"{where}: {self.key}: {self.message}"
        return f"{where}: {self.message}"

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild_error, (self.message, self.source, self.line, self.key))


def _one_line(text: str) -> str:
    return " ".join(part.strip() for part in text.splitlines()) if text else text


def _rebuild_error(message: str, source: str, line: int | None, key: str | None) -> ConfigError:
    return ConfigError(message, source=source, line=line, key=key)


def _empty_mapping() -> Mapping[str, Any]:
    return types.MappingProxyType({})


def _default_flags() -> Mapping[str, bool]:
    return DEFAULT_FLAGS


class FlagError(PumiceError, ValueError):
    """A plugin option names an extension-point flag there is none of."""


@dataclass(frozen=True, slots=True)
class PluginOption:
    """One plugin in a tier: its name, arguments and per-extension-point flags.

    ``flags`` always holds every name of ``FLAGS``; flags not given take ``DEFAULT_FLAGS``.
    """

    name: str
    arguments: Arguments = field(default_factory=Arguments)
    flags: Mapping[str, bool] = field(default_factory=_default_flags)
    hierarchy: bool = False

    def __post_init__(self) -> None:
        unknown = sorted(set(self.flags) - set(FLAGS))
        if unknown:
            raise FlagError(f"unknown flags {unknown}; known: {', '.join(FLAGS)}")
        object.__setattr__(self, "flags", types.MappingProxyType({**DEFAULT_FLAGS, **self.flags}))
        arguments: Mapping[str, Any] = self.arguments
        if not isinstance(arguments, Arguments):
            object.__setattr__(self, "arguments", Arguments(arguments))

    def __repr__(self) -> str:
        changed = {k: v for k, v in self.flags.items() if v != DEFAULT_FLAGS[k]}
        parts = [repr(self.name)]
        if self.arguments:
            parts.append(f"arguments={dict(self.arguments)!r}")
        if changed:
            parts.append(f"flags={changed!r}")
        if self.hierarchy:
            parts.append("hierarchy=True")
        return f"PluginOption({', '.join(parts)})"

    def enabled(self, flag: str) -> bool:
        """Is this plugin's ``flag`` extension point switched on? (``FlagError``, a
        ValueError, if there is no such flag.)"""
        try:
            return self.flags[flag]
        except KeyError:
            raise FlagError(f"unknown flag {flag!r}; known: {', '.join(FLAGS)}") from None


@dataclass(frozen=True, slots=True)
class Tier:
    """An ordered group of plugins; see ARCHITECTURE.md for how tiers combine answers."""

    plugins: tuple[PluginOption, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "plugins", tuple(self.plugins))


@dataclass(frozen=True, slots=True)
class LeaderElection:
    """Leader election through a ``coordination.k8s.io/v1`` Lease; durations in seconds."""

    enabled: bool = False
    lease_name: str | None = None
    """None: the scheduler's name (``scheduler.schedulerName``), whatever the namespace."""
    lease_namespace: str = "kube-system"
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0


@dataclass(frozen=True, slots=True)
class PluginPackages:
    """Which distribution packages may provide plugins and actions: ``allow`` empty means
    all; a package in ``deny`` is never imported."""

    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "allow", tuple(self.allow))
        object.__setattr__(self, "deny", tuple(self.deny))


@dataclass(frozen=True, slots=True)
class RecordSettings:
    """The flight recorder (``scheduler.record``, or ``pumice run --record DIR``)."""

    dir: str
    keep_cycles: int = 1000
    """The most recorded cycles the ring keeps."""
    max_bytes: int = 1 << 30
    """The most bytes the ring's files take together (default 1 GiB)."""


@dataclass(frozen=True, slots=True)
class SchedulerSettings:
    """The daemon's own settings (the ``scheduler:`` section); durations in seconds."""

    scheduler_name: str = "pumice"
    period: float = 1.0
    default_queue: str = "default"
    leader_election: LeaderElection = field(default_factory=LeaderElection)
    http_address: str = "127.0.0.1:11251"
    dry_run: bool = False
    kubeconfig: str | None = None
    qps: float | None = None
    """Client-side requests/s (None: no limit when the API server shows API Priority and
    Fairness, else 2,000/s; 0: no limit)."""
    burst: int | None = None
    """Requests at once above ``qps`` (None: as ``qps``; 0: no limit)."""
    plugin_packages: PluginPackages = field(default_factory=PluginPackages)
    tie_break: Literal["deterministic", "random"] = "deterministic"
    record: RecordSettings | None = None
    """None: no flight recorder."""
    volume_bind_timeout: float = 600.0
    """Seconds a placed pod waits for its volumes to be bound before it is given up
    (kube-scheduler's VolumeBinding ``bindTimeoutSeconds``)."""
    suggestions: bool = True
    """Search, outside the cycles, what would admit an unschedulable PodGroup and append it
    to its condition (``pumice.daemon.advice``)."""


@dataclass(frozen=True, slots=True)
class SchedulerConfig:
    """A whole, validated configuration. ``source`` names the file it came from."""

    actions: tuple[str, ...] = ()
    tiers: tuple[Tier, ...] = ()
    configurations: Mapping[str, Arguments] = field(default_factory=_empty_mapping)
    metrics: Mapping[str, str] = field(default_factory=_empty_mapping)
    scheduler: SchedulerSettings = field(default_factory=SchedulerSettings)
    source: str = "<code>"
    _lines: Mapping[str, int] = field(default_factory=_empty_mapping, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "actions", tuple(self.actions))
        object.__setattr__(self, "tiers", tuple(self.tiers))
        for name in ("configurations", "metrics", "_lines"):
            object.__setattr__(self, name, types.MappingProxyType(dict(getattr(self, name))))

    def plugin_names(self) -> tuple[str, ...]:
        """Every configured plugin, in tier order."""
        return tuple(option.name for tier in self.tiers for option in tier.plugins)

    def line_of(self, key: str) -> int | None:
        """The line of ``key`` (a path such as ``tiers[1].plugins[0].name``), or of its nearest
        enclosing key when ``key`` itself is not in the file; None if nothing encloses it."""
        return line_of_key(self._lines, key)


def line_of_key(lines: Mapping[str, int], key: str) -> int | None:
    while True:
        if key in lines:
            return lines[key]
        if not key:
            return None
        cut = max(key.rfind("."), key.rfind("["))
        key = key[:cut] if cut > 0 else ""


def closest_name(name: str, known: Collection[str]) -> str | None:
    by_case = {k.lower(): k for k in known}
    if name.lower() in by_case:
        return by_case[name.lower()]
    matches = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return matches[0] if matches else None


class AddressError(PumiceError, ValueError):
    """Not a ``host:port`` that pumice can listen on (``httpAddress``, ``--http-address``)."""
