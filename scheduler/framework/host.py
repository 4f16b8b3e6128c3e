"""The plugin host: finds plugins and actions, validates them, and hands them to sessions.

Built-in and third-party plugins and actions come through one entry-point group, ``pumice``.
A package declares them in its ``pyproject.toml``::

    [project.entry-points.pumice]
    my-plugin = "my_package.module:MyPlugin"     # a pumice.Plugin subclass
    my-action = "my_package.module:MyAction"     # a pumice.Action subclass

Rules:

* a package can be allowed or denied by its distribution name (``scheduler.plugins`` in the
  config, compared as PEP 503 normalises names); a denied package is never imported; pumice's
  own built-ins are always allowed unless ``pumice`` itself is denied;
* two packages offering the same name is an error (``PluginConflictError``), never a silent
  choice — deny one of them;
* an entry point that fails to import, or is not a plugin or action class, or implements a
  hook that does not exist, is reported in ``failures`` and skipped; the others still load.

Errors of this module::

    PluginError               (PumiceError)
     ├── PluginConflictError   two packages, one name
     └── PluginLoadError       one entry point could not be used (kept in ``failures``)
"""

from __future__ import annotations

import importlib.metadata
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

import pluggy
from packaging.utils import canonicalize_name

from pumice.framework.action import Action
from pumice.framework.base import Plugin, Provided
from pumice.framework.config import PluginPackages
from pumice.framework.hookspecs import HOOK_FLAGS, PROJECT, PluginSpec
from pumice.plain import PumiceError

log = logging.getLogger("pumice.plugins")

ENTRY_POINT_GROUP = "pumice"
BUILTIN_PACKAGE = "pumice"
"""pumice's own package: its built-ins load even under an allow list, unless denied by name."""


class PluginError(PumiceError):
    """Base of the plugin host's errors."""


class PluginConflictError(PluginError):
    """Two packages offer a plugin or action of the same name."""


class PluginLoadError(PluginError):
    """An entry point could not be turned into a plugin or action."""


@dataclass(frozen=True, slots=True)
class LoadFailure:
    """An entry point that was reported and skipped."""

    name: str
    package: str
    target: str
    error: str


class PluginHost:
    """Every plugin and action available to sessions, by name."""

    def __init__(self) -> None:
        self._provided: dict[str, Provided] = {}
        self.failures: list[LoadFailure] = []
        self.denied: list[str] = []
        self._pm = pluggy.PluginManager(PROJECT)
        self._pm.add_hookspecs(PluginSpec)

    # -- discovery --------------------------------------------------------------------------

    @classmethod
    def discover(
        cls, packages: PluginPackages | None = None, group: str = ENTRY_POINT_GROUP
    ) -> PluginHost:
        """Load every entry point of ``group`` from the allowed, not denied packages."""
        host = cls()
        host.load_entry_points(importlib.metadata.entry_points(group=group), packages)
        return host

    def load_entry_points(
        self,
        entry_points: Iterable[importlib.metadata.EntryPoint],
        packages: PluginPackages | None = None,
    ) -> None:
        allow = {canonicalize_name(p) for p in packages.allow} if packages else set()
        deny = {canonicalize_name(p) for p in packages.deny} if packages else set()
        chosen: dict[str, importlib.metadata.EntryPoint] = {}
        identities = _Identities()
        for ep in entry_points:
            package = identities.of(ep)[0]
            key = canonicalize_name(package)
            allowed = not allow or key in allow or key == BUILTIN_PACKAGE
            if key in deny or not allowed:
                if package not in self.denied:
                    self.denied.append(package)
                continue
            other = chosen.get(ep.name) or self._provided.get(ep.name)
            if other is not None:
                first = other.package if isinstance(other, Provided) else identities.of(other)[0]
                raise PluginConflictError(
                    f"{ep.name!r} is provided by both {first} and {package}; "
                    f"deny one of them under scheduler.plugins.deny"
                )
            chosen[ep.name] = ep
        for name, ep in chosen.items():
            package, version = identities.of(ep)
            try:
                obj = ep.load()
                self.register(name, obj, package=package, version=version, target=ep.value)
            except PluginConflictError:
                raise
            except Exception as exc:  # a third-party import can raise anything
                error = f"{type(exc).__name__}: {exc}"
                self.failures.append(LoadFailure(name, package, ep.value, error))
                log.warning("%r from package %s skipped: %s", name, package, error)

    # -- registration -----------------------------------------------------------------------

    def register(
        self,
        name: str,
        obj: object,
        *,
        package: str = "<code>",
        version: str = "",
        target: str = "",
    ) -> Provided:
        """Register a plugin or action class under ``name`` (also used by tests and embedders)."""
        if name in self._provided:
            raise PluginConflictError(
                f"{name!r} is provided by both {self._provided[name].package} and {package}"
            )
        if isinstance(obj, type) and issubclass(obj, Plugin):
            provided = Provided(
                name, "plugin", obj, package, version, target, self._validate(name, obj)
            )
        elif isinstance(obj, type) and issubclass(obj, Action):
            if obj.execute is Action.execute:
                raise PluginLoadError(
                    f"action {name!r} ({target or obj!r}) does not define execute()"
                )
            provided = Provided(name, "action", obj, package, version, target)
        else:
            raise PluginLoadError(
                f"{name!r} ({target or obj!r}) is neither a pumice.Plugin nor a pumice.Action class"
            )
        self._provided[name] = provided
        return provided

    def _validate(self, name: str, cls: type[Plugin]) -> Mapping[str, tuple[str, ...]]:
        """Check the class against the contract with pluggy; return hook -> argument names."""
        try:
            self._pm.register(cls, name=name)
        except (pluggy.PluginValidationError, ValueError) as exc:
            raise PluginLoadError(f"plugin {name!r}: {exc}") from exc
        hooks: dict[str, tuple[str, ...]] = {}
        unknown: list[str] = []
        for caller in self._pm.get_hookcallers(cls) or ():
            if caller.name not in HOOK_FLAGS:
                unknown.append(caller.name)
                continue
            for impl in caller.get_hookimpls():
                if impl.plugin is cls:
                    hooks[caller.name] = tuple(impl.argnames)
        if unknown:
            self._pm.unregister(cls)
            raise PluginLoadError(
                f"plugin {name!r} implements unknown hook(s) {', '.join(sorted(unknown))}; "
                f"known hooks: {', '.join(HOOK_FLAGS)}"
            )
        unmarked = [h for h in HOOK_FLAGS if h not in hooks and callable(getattr(cls, h, None))]
        if unmarked:
            log.warning(
                "plugin %r defines %s without @hookimpl; they will not be called",
                name,
                ", ".join(unmarked),
            )
        return MappingProxyType(hooks)

    # -- queries ----------------------------------------------------------------------------

    def get(self, name: str) -> Provided | None:
        return self._provided.get(name)

    @property
    def plugins(self) -> Mapping[str, Provided]:
        return {n: p for n, p in self._provided.items() if p.kind == "plugin"}

    @property
    def actions(self) -> Mapping[str, Provided]:
        return {n: p for n, p in self._provided.items() if p.kind == "action"}

    def all(self) -> list[Provided]:
        """Everything registered, actions first, each group sorted by name."""
        return sorted(self._provided.values(), key=lambda p: (p.kind != "action", p.name))


class _Identities:
    """The name and version of each entry point's distribution, read once per distribution:
    ``Distribution.name`` and ``.version`` parse its METADATA file again at every call (three
    per entry point), which was three quarters of loading the configuration."""

    def __init__(self) -> None:
        self._known: dict[int, tuple[object, str, str]] = {}

    def of(self, ep: importlib.metadata.EntryPoint) -> tuple[str, str]:
        dist = ep.dist
        if dist is None:
            return "<unknown>", ""
        known = self._known.get(id(dist))
        if known is None or known[0] is not dist:
            metadata = dist.metadata
            known = self._known[id(dist)] = (dist, metadata["Name"], metadata["Version"])
        return known[1], known[2]
