"""``scheduler.record``: the flight recorder's settings, and what is wrong with bad ones."""

from __future__ import annotations

import pytest

from pumice.framework.config import ConfigError, RecordSettings
from pumice.framework.configfile import parse_config


def record_of(text: str) -> RecordSettings | None:
    return parse_config(f"actions: allocate\nscheduler:\n  record: {text}\n").scheduler.record


def test_absent_means_no_recorder() -> None:
    assert parse_config("actions: allocate\n").scheduler.record is None
    assert record_of("null") is None


def test_defaults_are_a_thousand_cycles_and_one_gibibyte() -> None:
    assert record_of("{dir: /var/lib/pumice/rec}") == RecordSettings(
        "/var/lib/pumice/rec", keep_cycles=1000, max_bytes=2**30
    )


def test_sizes_read_as_quantities_or_bytes() -> None:
    settings = record_of("{dir: 'a dir', keepCycles: 50, maxBytes: 64Mi}")
    assert settings == RecordSettings("a dir", keep_cycles=50, max_bytes=64 * 2**20)
    assert record_of("{dir: d, maxBytes: 1000}") == RecordSettings("d", max_bytes=1000)


@pytest.mark.parametrize(
    ("value", "key", "words"),
    [
        ("{keepCycles: 3}", "scheduler.record", "missing 'dir'"),
        ("{dir: d, keepCycle: 3}", "scheduler.record.keepCycle", "did you mean 'keepCycles'?"),
        ("{dir: d, keepCycles: 0}", "scheduler.record.keepCycles", "must be positive, got 0"),
        ("{dir: d, keepCycles: 2.5}", "scheduler.record.keepCycles", "expected a whole number"),
        ("{dir: d, maxBytes: lots}", "scheduler.record.maxBytes", "bad size 'lots'"),
        ("{dir: d, maxBytes: -1Ki}", "scheduler.record.maxBytes", "must be positive"),
        ("{dir: d, maxBytes: 1.5}", "scheduler.record.maxBytes", "expected a whole number"),
        ("{dir: ''}", "scheduler.record.dir", "must not be empty"),
        ("/tmp/rec", "scheduler.record", "expected a mapping with dir, keepCycles, maxBytes"),
    ],
)
def test_a_bad_value_names_file_line_and_key(value: str, key: str, words: str) -> None:
    with pytest.raises(ConfigError) as caught:
        record_of(value)
    error = caught.value
    assert (error.source, error.line, error.key) == ("<string>", 3, key)
    assert words in error.message
