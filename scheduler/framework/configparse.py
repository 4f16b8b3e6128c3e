"""Validation of a configuration document into ``pumice.framework.config``'s dataclasses.

``parse_document`` walks the plain values that ``yamlsource`` produced, checks every key, type
and value, and raises ``ConfigError`` at the first problem with the line of the offending key.
Also here: the value syntaxes of the ``scheduler:`` section (``split_host_port``; durations
follow ``pumice.model.quantity``). Use ``pumice.framework.configfile.parse_config`` rather than this
module.
"""

from __future__ import annotations

import ipaddress
import math
import re
from collections.abc import Collection, Mapping
from typing import Any

from packaging.utils import canonicalize_name

from pumice.framework.argspec import describe as _describe
from pumice.framework.arguments import Arguments, as_bool
from pumice.framework.config import (
    FLAG_ALIASES,
    FLAG_KEYS,
    TIE_BREAKS,
    AddressError,
    ConfigError,
    LeaderElection,
    PluginOption,
    PluginPackages,
    RecordSettings,
    SchedulerConfig,
    SchedulerSettings,
    Tier,
    closest_name,
    line_of_key,
)
from pumice.framework.yamlsource import Document, child_path
from pumice.model.quantity import parse_duration, parse_quantity


def parse_document(document: Document, source: str) -> SchedulerConfig:
    """Validate a loaded document; ``source`` names it in errors."""
    return _Parser(source, document.lines).config(document.value)


# -- values ----------------------------------------------------------------------------------

_HOST_LABEL = re.compile(r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?")


def split_host_port(address: str) -> tuple[str, int]:
    """``"127.0.0.1:11251"`` -> ``("127.0.0.1", 11251)``; an IPv6 host is bracketed
    (``"[::1]:80"``); an empty host (``":11251"``) means every interface. ``AddressError`` if
    bad."""
    host, sep, port = address.rpartition(":")
    if not sep:
        raise AddressError("expected host:port")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise AddressError(f"bad IPv6 address {host!r}") from None
    elif ":" in host:
        raise AddressError("an IPv6 host must be in brackets, e.g. [::1]:11251")
    elif host:
        labels = host.split(".")
        if not all(_HOST_LABEL.fullmatch(label) for label in labels):
            raise AddressError(f"bad host {host!r}")
        if all(label.isdigit() for label in labels):
            try:
                ipaddress.IPv4Address(host)
            except ValueError:
                raise AddressError(f"bad IPv4 address {host!r}") from None
    if not re.fullmatch(r"[0-9]{1,5}", port) or int(port) > 65535:
        raise AddressError(f"bad port {port!r} (expected 0-65535)")
    return host, int(port)


def _seconds(value: float) -> str:
    return f"{value:g}s"


# -- parsing ---------------------------------------------------------------------------------

TOP_KEYS = ("actions", "tiers", "configurations", "metrics", "scheduler")
PLUGIN_KEYS = ("name", "arguments", "enableHierarchy", *FLAG_KEYS, *FLAG_ALIASES)
SCHEDULER_KEYS = (
    "schedulerName",
    "period",
    "defaultQueue",
    "leaderElection",
    "httpAddress",
    "dryRun",
    "kubeconfig",
    "qps",
    "burst",
    "plugins",
    "tieBreak",
    "record",
    "volumeBindTimeout",
    "suggestions",
)
RECORD_KEYS = ("dir", "keepCycles", "maxBytes")
LEADER_KEYS = (
    "enabled",
    "leaseName",
    "leaseNamespace",
    "leaseDuration",
    "renewDeadline",
    "retryPeriod",
)
PACKAGE_KEYS = ("allow", "deny")
_DURATION = "a number of seconds or a duration such as '1s', '500ms', '1m30s'"
_ACTIONS = "a comma-separated string such as 'enqueue, allocate, backfill'"
_PLUGIN_KEY_HINT = (
    "unknown key; a plugin entry takes name, arguments, enableHierarchy and the enable... "
    "flags (plugin arguments go under 'arguments')"
)


class _Parser:
    """Validates the plain value tree of one document, raising ConfigError at the first
    problem with the line of the offending key."""

    def __init__(self, source: str, lines: Mapping[str, int]) -> None:
        self.source = source
        self.lines = lines

    def error(self, key: str | None, message: str) -> ConfigError:
        line = line_of_key(self.lines, key or "")
        return ConfigError(message, source=self.source, line=line, key=key)

    def wrong_type(self, key: str, expected: str, value: object) -> ConfigError:
        return self.error(key, f"expected {expected}, got {_describe(value)}")

    def mapping(
        self,
        value: object,
        key: str,
        expected: str,
        known: Collection[str] | None,
        hint: str | None = None,
    ) -> dict[str, Any]:
        """``value`` as a mapping (null is empty) whose keys are all ``known``."""
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.wrong_type(key, expected, value)
        for name in value:
            if known is not None and name not in known:
                raise self.error(child_path(key, name), _unknown_key(name, known, hint))
        return value

    def sequence(self, value: object, key: str, expected: str) -> list[Any]:
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.wrong_type(key, expected, value)
        return value

    def boolean(self, value: object, key: str) -> bool:
        flag = as_bool(value)  # the one rule for a boolean: the arguments' too
        if flag is None:
            raise self.wrong_type(key, "true or false", value)
        return flag

    # -- top level and Volcano's part ----------------------------------------------------

    def config(self, root: object) -> SchedulerConfig:
        if root is None:
            raise self.error(None, "the configuration is empty; expected 'actions' and 'tiers'")
        if not isinstance(root, dict):
            raise self.error(None, f"expected a mapping at the top level, got {_describe(root)}")
        for name in root:
            if name not in TOP_KEYS:
                fallback = None
                if name in SCHEDULER_KEYS:
                    fallback = f"unknown key; {name!r} belongs under 'scheduler:'"
                raise self.error(name, _unknown_key(name, TOP_KEYS, fallback))
        actions = self.actions(root)
        return SchedulerConfig(
            actions=actions,
            tiers=self.tiers(root.get("tiers")),
            configurations=self.configurations(root.get("configurations"), actions),
            metrics=self.metrics(root.get("metrics")),
            scheduler=self.scheduler(root.get("scheduler")),
            source=self.source,
            _lines=self.lines,
        )

    def actions(self, root: dict[str, Any]) -> tuple[str, ...]:
        if "actions" not in root:
            raise self.error("actions", f"missing; expected {_ACTIONS}")
        value = root["actions"]
        if not isinstance(value, str):
            raise self.wrong_type("actions", _ACTIONS, value)
        names = [name.strip() for name in value.split(",")]
        if names == [""]:
            raise self.error("actions", f"no actions given; expected {_ACTIONS}")
        for position, name in enumerate(names, 1):
            if not name:
                raise self.error("actions", f"empty action name at position {position}")
            if any(c.isspace() for c in name):
                raise self.error("actions", f"bad action name {name!r}; separate actions by commas")
            if name in names[: position - 1]:
                raise self.error("actions", f"action {name!r} is listed twice")
        return tuple(names)

    def tiers(self, value: object) -> tuple[Tier, ...]:
        items = self.sequence(value, "tiers", "a list of tiers, each a mapping with 'plugins'")
        seen: dict[str, str] = {}
        tiers = []
        for index, item in enumerate(items):
            key = f"tiers[{index}]"
            tier = self.mapping(item, key, "a tier (a mapping with 'plugins')", ("plugins",))
            plugins_key = f"{key}.plugins"
            entries = self.sequence(tier.get("plugins"), plugins_key, "a list of plugins")
            if not entries:
                where = plugins_key if "plugins" in tier else key
                raise self.error(where, "a tier needs at least one plugin")
            options = tuple(
                self.plugin(entry, f"{plugins_key}[{p}]", seen) for p, entry in enumerate(entries)
            )
            self.check_hierarchy(options, plugins_key)
            tiers.append(Tier(options))
        return tuple(tiers)

    def plugin(self, value: object, key: str, seen: dict[str, str]) -> PluginOption:
        expected = "a plugin entry (a mapping with 'name', e.g. {name: gang})"
        entry = self.mapping(value, key, expected, PLUGIN_KEYS, _PLUGIN_KEY_HINT)
        name_key = f"{key}.name"
        if "name" not in entry:
            raise self.error(name_key, "missing; every plugin entry needs a name")
        name = entry["name"]
        if not isinstance(name, str):
            raise self.wrong_type(name_key, "a plugin name", name)
        if not name or any(c.isspace() for c in name):
            raise self.error(name_key, f"bad plugin name {name!r}")
        if name in seen:
            first = seen[name]
            raise self.error(
                name_key,
                f"plugin {name!r} is configured twice (first at {first}, "
                f"line {line_of_key(self.lines, first)})",
            )
        seen[name] = key
        flags: dict[str, bool] = {}
        given: dict[str, str] = {}
        for yaml_key, raw in entry.items():
            spelling = FLAG_ALIASES.get(yaml_key, yaml_key)
            if spelling not in FLAG_KEYS:
                continue
            flag = FLAG_KEYS[spelling]
            if flag in given:
                raise self.error(
                    child_path(key, yaml_key), f"given twice, as {given[flag]!r} and {yaml_key!r}"
                )
            given[flag] = yaml_key
            flags[flag] = self.boolean(raw, child_path(key, yaml_key))
        hierarchy = False
        if "enableHierarchy" in entry:
            hierarchy = self.boolean(entry["enableHierarchy"], f"{key}.enableHierarchy")
        arguments = self.arguments(entry.get("arguments"), f"{key}.arguments", f"plugin {name!r}")
        return PluginOption(name, arguments, flags, hierarchy)

    def arguments(self, value: object, key: str, owner: str) -> Arguments:
        raw = self.mapping(value, key, "a mapping of arguments", None)
        return Arguments(raw, context=owner)

    def check_hierarchy(self, options: tuple[PluginOption, ...], key: str) -> None:
        position = {option.name: p for p, option in enumerate(options)}
        drf, proportion = position.get("drf"), position.get("proportion")
        if drf is not None and proportion is not None and options[drf].hierarchy:
            raise self.error(
                f"{key}[{drf}].enableHierarchy",
                f"drf with enableHierarchy: true cannot share a tier with proportion "
                f"({key}[{proportion}])",
            )

    def configurations(self, value: object, actions: tuple[str, ...]) -> dict[str, Arguments]:
        expected = "a list of action configurations, each with 'name' and 'arguments'"
        result: dict[str, Arguments] = {}
        for index, item in enumerate(self.sequence(value, "configurations", expected)):
            key = f"configurations[{index}]"
            entry = self.mapping(
                item, key, "a mapping with 'name' and 'arguments'", ("name", "arguments")
            )
            name_key = f"{key}.name"
            if "name" not in entry:
                raise self.error(name_key, "missing; name the action these arguments are for")
            name = entry["name"]
            if not isinstance(name, str):
                raise self.wrong_type(name_key, "an action name", name)
            if name not in actions:
                raise self.error(
                    name_key, f"action {name!r} is not in actions ({', '.join(actions)})"
                )
            if name in result:
                raise self.error(name_key, f"action {name!r} is configured twice")
            result[name] = self.arguments(entry.get("arguments"), f"{key}.arguments", name)
        return result

    def metrics(self, value: object) -> dict[str, str]:
        raw = self.mapping(value, "metrics", "a mapping of strings", None)
        result: dict[str, str] = {}
        for name, item in raw.items():
            if isinstance(item, bool) or not isinstance(item, str | int | float):
                raise self.wrong_type(child_path("metrics", name), "a string", item)
            result[name] = str(item)
        return result

    # -- the scheduler: section ----------------------------------------------------------

    def scheduler(self, value: object) -> SchedulerSettings:
        path = "scheduler"
        section = self.mapping(value, path, "a mapping of daemon settings", SCHEDULER_KEYS)
        default = SchedulerSettings()
        address = self.text(section, path, "httpAddress", default.http_address)
        try:
            split_host_port(address)
        except AddressError as exc:
            raise self.error(f"{path}.httpAddress", f"bad address {address!r}: {exc}") from None
        tie_break = self.text(section, path, "tieBreak", default.tie_break)
        if tie_break not in TIE_BREAKS:
            raise self.error(
                f"{path}.tieBreak", f"expected 'deterministic' or 'random', got {tie_break!r}"
            )
        kubeconfig = default.kubeconfig
        if section.get("kubeconfig") is not None:
            kubeconfig = self.text(section, path, "kubeconfig", "", spaces=True)
        return SchedulerSettings(
            scheduler_name=self.text(section, path, "schedulerName", default.scheduler_name),
            period=self.seconds(section, path, "period", default.period),
            default_queue=self.text(section, path, "defaultQueue", default.default_queue),
            leader_election=self.leader_election(section.get("leaderElection")),
            http_address=address,
            dry_run=self.flag(section, path, "dryRun", default.dry_run),
            kubeconfig=kubeconfig,
            qps=self.rate(section, path, "qps"),
            burst=self.count(section, path, "burst"),
            plugin_packages=self.plugin_packages(section.get("plugins")),
            tie_break="random" if tie_break == "random" else "deterministic",
            record=self.record(section.get("record")),
            volume_bind_timeout=self.seconds(
                section, path, "volumeBindTimeout", default.volume_bind_timeout
            ),
            suggestions=self.flag(section, path, "suggestions", default.suggestions),
        )

    def record(self, value: object) -> RecordSettings | None:
        """The flight recorder; None when the section is absent or null."""
        path = "scheduler.record"
        if value is None:
            return None
        section = self.mapping(value, path, "a mapping with dir, keepCycles, maxBytes", RECORD_KEYS)
        if "dir" not in section:
            raise self.error(path, "missing 'dir': the directory to record into")
        default = RecordSettings(dir=".")
        size = section.get("maxBytes", default.max_bytes)
        if isinstance(size, str):
            try:
                size = parse_quantity(size)
            except ValueError:
                raise self.error(f"{path}.maxBytes", f"bad size {size!r}") from None
            size = int(size) if size == int(size) else size
        keep = section.get("keepCycles", default.keep_cycles)
        for name, number, expected in (
            ("keepCycles", keep, "a whole number of cycles"),
            ("maxBytes", size, "a whole number of bytes, or a size such as '1Gi'"),
        ):
            if isinstance(number, bool) or not isinstance(number, int):
                raise self.wrong_type(f"{path}.{name}", expected, section[name])
            if number <= 0:
                raise self.error(f"{path}.{name}", f"must be positive, got {section[name]!r}")
        return RecordSettings(
            dir=self.text(section, path, "dir", "", spaces=True),
            keep_cycles=keep,
            max_bytes=size,
        )

    def leader_election(self, value: object) -> LeaderElection:
        path = "scheduler.leaderElection"
        section = self.mapping(value, path, "a mapping of leader election settings", LEADER_KEYS)
        default = LeaderElection()
        result = LeaderElection(
            enabled=self.flag(section, path, "enabled", default.enabled),
            lease_name=self.text(section, path, "leaseName", "") or default.lease_name,
            lease_namespace=self.text(section, path, "leaseNamespace", default.lease_namespace),
            lease_duration=self.seconds(section, path, "leaseDuration", default.lease_duration),
            renew_deadline=self.seconds(section, path, "renewDeadline", default.renew_deadline),
            retry_period=self.seconds(section, path, "retryPeriod", default.retry_period),
        )
        lease, renew, retry = result.lease_duration, result.renew_deadline, result.retry_period
        if renew >= lease:
            key = "renewDeadline" if "renewDeadline" in section else "leaseDuration"
            raise self.error(
                f"{path}.{key}",
                f"renewDeadline ({_seconds(renew)}) must be shorter than "
                f"leaseDuration ({_seconds(lease)})",
            )
        if renew <= 1.2 * retry:
            key = "retryPeriod" if "retryPeriod" in section else "renewDeadline"
            raise self.error(
                f"{path}.{key}",
                f"renewDeadline ({_seconds(renew)}) must be longer than 1.2 x "
                f"retryPeriod ({_seconds(retry)})",
            )
        return result

    def plugin_packages(self, value: object) -> PluginPackages:
        path = "scheduler.plugins"
        expected = "a mapping with 'allow' and 'deny' lists of package names"
        section = self.mapping(value, path, expected, PACKAGE_KEYS)
        allow = self.package_names(section.get("allow"), f"{path}.allow")
        deny = self.package_names(section.get("deny"), f"{path}.deny")
        allowed = {canonicalize_name(name) for name in allow}
        for index, name in enumerate(deny):
            if canonicalize_name(name) in allowed:
                raise self.error(f"{path}.deny[{index}]", f"package {name!r} is allowed and denied")
        return PluginPackages(allow, deny)

    def package_names(self, value: object, key: str) -> tuple[str, ...]:
        names = self.sequence(value, key, "a list of package names")
        for index, name in enumerate(names):
            if not isinstance(name, str):
                raise self.wrong_type(f"{key}[{index}]", "a package name", name)
            if not name or any(c.isspace() for c in name):
                raise self.error(f"{key}[{index}]", f"bad package name {name!r}")
        return tuple(names)

    def text(
        self, section: dict[str, Any], path: str, name: str, default: str, *, spaces: bool = False
    ) -> str:
        if name not in section:
            return default
        key, value = f"{path}.{name}", section[name]
        if not isinstance(value, str):
            raise self.wrong_type(key, "a string", value)
        if not value.strip():
            raise self.error(key, "must not be empty")
        if not spaces and any(c.isspace() for c in value):
            raise self.error(key, f"must not contain spaces, got {value!r}")
        return value

    def flag(self, section: dict[str, Any], path: str, name: str, default: bool) -> bool:
        return self.boolean(section[name], f"{path}.{name}") if name in section else default

    def rate(self, section: dict[str, Any], path: str, name: str) -> float | None:
        """A non-negative number of requests per second; None when absent."""
        if section.get(name) is None:
            return None
        key, value = f"{path}.{name}", section[name]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.wrong_type(key, "a number of requests per second (0: no limit)", value)
        if not math.isfinite(value) or value < 0:
            raise self.error(key, f"must be 0 (no limit) or a positive number, got {value!r}")
        return float(value)

    def count(self, section: dict[str, Any], path: str, name: str) -> int | None:
        """A non-negative whole number; None when absent."""
        if section.get(name) is None:
            return None
        key, value = f"{path}.{name}", section[name]
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.wrong_type(key, "a whole number of requests (0: no limit)", value)
        if value < 0:
            raise self.error(key, f"must be 0 (no limit) or positive, got {value!r}")
        return value

    def seconds(self, section: dict[str, Any], path: str, name: str, default: float) -> float:
        if name not in section:
            return default
        key, value = f"{path}.{name}", section[name]
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise self.wrong_type(key, _DURATION, value)
        if isinstance(value, str):
            try:
                seconds = parse_duration(value)
            except ValueError:
                raise self.error(key, f"bad duration {value!r}; expected {_DURATION}") from None
        else:
            seconds = float(value)
        if not math.isfinite(seconds) or seconds <= 0:
            raise self.error(key, f"must be a positive duration, got {value!r}")
        return seconds


def _unknown_key(name: str, known: Collection[str], fallback: str | None = None) -> str:
    match = closest_name(name, known)
    if match is not None:
        return f"unknown key; did you mean {match!r}?"
    return fallback or f"unknown key; expected one of: {', '.join(known)}"
