"""Helpers shared by subcommands: loading a config with the plugins it allows."""

from __future__ import annotations

import sys

from pumice.framework.config import SchedulerConfig, check_names, load_config, load_default_config
from pumice.framework.host import PluginHost


def load_checked(path: str | None) -> tuple[SchedulerConfig, PluginHost]:
    """Load a config (the default when ``path`` is None), discover the plugin packages it
    allows, and check every plugin and action name against them.

    Raises ConfigError or PluginConflictError; load failures of plugin packages are printed
    to stderr as warnings.
    """
    config = load_config(path) if path is not None else load_default_config()
    host = PluginHost.discover(config.scheduler.plugin_packages)
    for failure in host.failures:
        print(
            f"warning: {failure.name!r} from package {failure.package} skipped: {failure.error}",
            file=sys.stderr,
        )
    check_names(config, plugins=host.plugins, actions=host.actions)
    return config, host
