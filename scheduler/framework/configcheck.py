"""Checks of a parsed configuration that need the plugins: declared arguments and known traps.

``check_arguments`` holds every plugin's ``arguments`` and every action's ``configurations``
entry to what its class declares (``declared_arguments``, see ``pumice.framework.argspec``): a
bad value raises ``ConfigError`` naming the file, line and key; an argument nobody declared is
a ``ConfigWarning``. ``lint`` finds configurations that are valid but almost surely not what
was meant; it keys on plugin, action and argument names only, so its rules hold for plugins
and actions that other packages provide. Warnings never stop pumice; ``check-config`` prints
them as ``FILE:LINE: KEY: warning: ...`` and still exits 0.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pumice.framework.argspec import ArgumentSpec
from pumice.framework.argspec import check_arguments as check_values
from pumice.framework.config import ConfigError, PluginOption, SchedulerConfig
from pumice.framework.host import PluginHost

__all__ = ["ConfigWarning", "check_arguments", "lint", "validate"]

Declarations = Callable[[str], tuple[ArgumentSpec, ...] | None]
"""Plugin or action name -> what it declares (None: undeclared, or not known)."""

FILTER_FLAG = re.compile(r"^predicate\.(\w+)Enable$")
"""Volcano's switch of one predicate filter: ``predicate.<Filter>Enable``."""
NOT_FILTERS = frozenset({"predicate.CacheEnable"})
"""``predicate.*Enable`` flags that switch no constraint off."""
FILTERED_FIELDS = {
    "predicate.NodeAffinityEnable": "spec.nodeSelector, spec.affinity.nodeAffinity",
    "predicate.TaintTolerationEnable": "node taints (spec.tolerations)",
    "predicate.NodePortsEnable": "containers' ports[].hostPort",
    "predicate.PodAffinityEnable": "spec.affinity.podAffinity, spec.affinity.podAntiAffinity",
    "predicate.PodTopologySpreadEnable": "spec.topologySpreadConstraints (DoNotSchedule)",
    "predicate.VolumeBindingEnable": (
        "the binding of their claims (spec.volumes[].persistentVolumeClaim, .ephemeral)"
    ),
    "predicate.VolumeZoneEnable": "the zone labels of their claims' volumes",
    "predicate.NodeVolumeLimitsEnable": "the CSI attach limits of their volumes",
}
"""The pod fields a filter's flag switches off, for the warning (others: "its fields")."""
PREEMPT = "preempt"
GANG = "gang"
PREDICATES = "predicates"
PLACING_ACTIONS = frozenset({"allocate", "backfill", "preempt", "reclaim"})
"""The actions that put pods on nodes (what the node filters are there to constrain)."""
NODE_FILTERS = (
    "nothing checks nodeSelector and node affinity, taints and cordons, host ports, pod "
    "affinity / anti-affinity, topology spread constraints or the nodes' pod limits; pods are "
    "placed as if they carried none of them"
)
"""What the ``predicates`` plugin evaluates, for the warning when it is left out or off."""


@dataclass(frozen=True, slots=True)
class ConfigWarning:
    """Something in a valid configuration that is ignored or probably wrong."""

    message: str
    source: str
    line: int | None
    key: str

    def __str__(self) -> str:
        where = self.source if self.line is None else f"{self.source}:{self.line}"
        return f"{where}: {self.key}: warning: {self.message}"


def validate(config: SchedulerConfig, host: PluginHost) -> list[ConfigWarning]:
    """``check_arguments`` with the classes the host provides, then ``lint``: raises
    ConfigError at the first bad argument, else returns every warning."""

    def declared(name: str) -> tuple[ArgumentSpec, ...] | None:
        provided = host.get(name)
        if provided is None:
            return None
        specs: tuple[ArgumentSpec, ...] | None = getattr(provided.cls, "declared_arguments", None)
        return specs

    return check_arguments(config, declared) + lint(config)


def check_arguments(config: SchedulerConfig, declared: Declarations) -> list[ConfigWarning]:
    """Raise ConfigError for the first argument whose value its owner's declaration refuses;
    return a warning for every argument no declaration covers."""
    warnings = []
    for path, owner, values, specs in _argument_maps(config, declared):
        for problem in check_values(values, specs, owner):
            key = f"{path}.{problem.key}"
            line = config.line_of(key)
            if not problem.warning:
                raise ConfigError(problem.message, source=config.source, line=line, key=key)
            warnings.append(ConfigWarning(problem.message, config.source, line, key))
    return warnings


def _argument_maps(
    config: SchedulerConfig, declared: Declarations
) -> Iterator[tuple[str, str, Mapping[str, Any], tuple[ArgumentSpec, ...] | None]]:
    """(key path of the arguments map, owner, values, declarations) for every map in ``config``."""
    for t, tier in enumerate(config.tiers):
        for p, option in enumerate(tier.plugins):
            path = f"tiers[{t}].plugins[{p}].arguments"
            yield path, f"plugin {option.name!r}", option.arguments, declared(option.name)
    for index, (name, values) in enumerate(config.configurations.items()):
        path = f"configurations[{index}].arguments"
        yield path, f"action {name!r}", values, declared(name)


# -- lint ----------------------------------------------------------------------------------


def lint(config: SchedulerConfig) -> list[ConfigWarning]:
    """Warnings for known traps in a valid configuration (see each rule's docstring)."""
    return [
        *_preempt_without_gang_starving(config),
        *_hierarchy(config),
        *_constraint_filters_off(config),
        *_node_filters_off(config),
    ]


def _options(config: SchedulerConfig, name: str) -> Iterator[tuple[str, PluginOption]]:
    for t, tier in enumerate(config.tiers):
        for p, option in enumerate(tier.plugins):
            if option.name == name:
                yield f"tiers[{t}].plugins[{p}]", option


def _warning(config: SchedulerConfig, key: str, message: str) -> ConfigWarning:
    return ConfigWarning(message, config.source, config.line_of(key), key)


def _preempt_without_gang_starving(config: SchedulerConfig) -> Iterator[ConfigWarning]:
    """``preempt`` acts only for jobs that the plugins call starving; with gang's job
    starving switched off, a gang short of its minAvailable is no reason to preempt, and the
    decision falls to other plugins (priority: any job with a pending task) or to nobody."""
    if PREEMPT not in config.actions:
        return
    for path, option in _options(config, GANG):
        if not option.enabled("job_starving"):
            yield _warning(
                config,
                f"{path}.enableJobStarving",
                "preempt is configured but gang's job starving is off: gangs below "
                "minAvailable will not be preempted for; other plugins (or none) decide",
            )


def _hierarchy(config: SchedulerConfig) -> Iterator[ConfigWarning]:
    """``enableHierarchy`` (Volcano's hierarchical queues for drf and proportion) is parsed but
    no pumice plugin shares hierarchically: the plugin behaves as if it were off."""
    for t, tier in enumerate(config.tiers):
        for p, option in enumerate(tier.plugins):
            if option.hierarchy:
                yield _warning(
                    config,
                    f"tiers[{t}].plugins[{p}].enableHierarchy",
                    f"hierarchical sharing is not supported by pumice; {option.name} shares "
                    "as if it were off",
                )


def _constraint_filters_off(config: SchedulerConfig) -> Iterator[ConfigWarning]:
    """A ``predicate.<Filter>Enable: false`` flag switches a filter off, and, as in Volcano,
    pods are then placed as if they did not carry its fields: the promise those fields make is
    not kept. Keyed on the argument's name, whichever plugin takes it."""
    for t, tier in enumerate(config.tiers):
        for p, option in enumerate(tier.plugins):
            for key, value in option.arguments.items():
                if value is not False or key in NOT_FILTERS or not FILTER_FLAG.match(key):
                    continue
                fields = FILTERED_FIELDS.get(key, "its fields")
                yield _warning(
                    config,
                    f"tiers[{t}].plugins[{p}].arguments.{key}",
                    f"{key} is false: that filter is off, and pods are placed as if they did "
                    f"not carry {fields}",
                )


def _node_filters_off(config: SchedulerConfig) -> Iterator[ConfigWarning]:
    """Every node filter a pod's fields ask for (node affinity, taints, host ports, the
    pod-to-pod constraints, the pod limit) is the ``predicates`` plugin's. Left out of the
    tiers, or with its ``enablePredicate: false``, nothing checks them: pods are placed as if
    they did not carry those fields, and every ``predicate.*Enable`` flag is moot. Only said
    when an action places pods."""
    if not PLACING_ACTIONS.intersection(config.actions):
        return
    found = next(_options(config, PREDICATES), None)  # a plugin is configured at most once
    if found is None:
        yield _warning(config, "tiers", f"no {PREDICATES} plugin in the tiers: {NODE_FILTERS}")
    elif not found[1].enabled("predicate"):
        yield _warning(
            config,
            f"{found[0]}.enablePredicate",
            f"{PREDICATES} has enablePredicate: false: {NODE_FILTERS}",
        )
