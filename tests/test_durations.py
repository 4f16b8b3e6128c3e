"""Durations (``pumice.model.quantity.parse_duration``): Go duration strings and bare numbers of
seconds, one rule for the configuration and the simulated server."""

from __future__ import annotations

import pytest

from pumice.framework.configfile import parse_config
from pumice.model.quantity import DurationError, parse_duration
from pumice.plain import PumiceError


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("1h2m3.5s", 3723.5),
        ("500ms", 0.5),
        ("1us", 1e-6),
        ("1µs", 1e-6),
        ("1μs", 1e-6),
        ("250ns", 2.5e-7),
        ("1.5h", 5400.0),
        (".5s", 0.5),
        ("5.s", 5.0),
        ("-2s", -2.0),
        ("+3m", 180.0),
        ("2h45m", 9900.0),
        ("1m0.5s", 60.5),
        ("0", 0.0),
        ("3", 3.0),
        ("0.25", 0.25),
        ("-1", -1.0),
        ("  2s ", 2.0),
        (" 7 ", 7.0),
    ],
)
def test_go_durations_and_bare_seconds(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(
    "text",
    ["", " ", "-", "s", ".", ".s", "1sec", "5d", "1 s", "1s2", "1.2.3s", "inf", "nan", "1e3"],
)
def test_anything_else_is_a_bad_duration(text: str) -> None:
    with pytest.raises(DurationError, match=r"^bad duration "):
        parse_duration(text)


def test_duration_error_is_a_pumice_error_and_a_value_error() -> None:
    with pytest.raises(PumiceError):
        parse_duration("soon")
    with pytest.raises(ValueError, match="soon"):
        parse_duration("soon")


@pytest.mark.parametrize(("value", "seconds"), [('"5"', 5.0), ("5", 5.0), ('"5s"', 5.0)])
def test_the_config_reads_a_bare_number_the_same_quoted_or_not(value: str, seconds: float) -> None:
    config = parse_config(f"actions: a\nscheduler:\n  period: {value}\n")
    assert config.scheduler.period == seconds
