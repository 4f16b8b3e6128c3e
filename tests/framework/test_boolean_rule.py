"""One rule for what a boolean is, wherever a configuration holds one: Volcano's, a YAML boolean
or the string ``true`` / ``false`` (any case). The typed getter, a declared ``bool`` argument, a
plugin's structured flag and the ``enable…`` switches all accept and refuse the same values."""

from __future__ import annotations

import pytest
import yaml

from pumice import Arguments, ArgumentSpec, ConfigError, as_bool, check_flag
from pumice.framework.configfile import parse_config

ACCEPTED = [(True, True), (False, False), ("true", True), ("false", False), ("TRUE", True)]
ACCEPTED += [("False", False)]
REFUSED = ["t", "f", "1", "0", "yes", "no", "on", "", " true", 1, 0, 1.0, None, ["true"]]


def through_getter(value: object) -> bool | None:
    return Arguments({"k": value}).get_bool("k", None)


def through_declaration(value: object) -> bool | None:
    refused = ArgumentSpec("k", "bool", True).problem(value) is not None
    return None if refused else as_bool(value)


def through_plugin_check(value: object) -> bool | None:
    if value is None:  # absent: the plugin's default, not a value to judge
        return None
    try:
        return check_flag("p", "k", value, default=False)
    except ConfigError:
        return None


def through_enable_flag(value: object) -> bool | None:
    text = yaml.safe_dump(
        {"actions": "allocate", "tiers": [{"plugins": [{"name": "gang", "enableJobOrder": value}]}]}
    )
    try:
        config = parse_config(text)
    except ConfigError:
        return None
    return config.tiers[0].plugins[0].enabled("job_order")


READERS = [through_getter, through_declaration, through_plugin_check, through_enable_flag]


@pytest.mark.parametrize("read", READERS)
@pytest.mark.parametrize(("value", "meaning"), ACCEPTED)
def test_every_reader_accepts_yaml_booleans_and_the_words(
    read: object, value: object, meaning: bool
) -> None:
    assert read(value) is meaning  # type: ignore[operator]


@pytest.mark.parametrize("read", READERS)
@pytest.mark.parametrize("value", REFUSED)
def test_every_reader_refuses_everything_else(read: object, value: object) -> None:
    assert read(value) is None  # type: ignore[operator]
