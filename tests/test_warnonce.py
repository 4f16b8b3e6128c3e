"""``pumice.logs``: a warning logged once per process per (logger, key)."""

from __future__ import annotations

import logging
import threading

import pytest

from pumice import warn_once
from pumice.logs import collect_config_warnings, config_warning, forget_warnings


def test_each_key_is_logged_once_per_logger(caplog: pytest.LogCaptureFixture) -> None:
    forget_warnings()
    a, b = logging.getLogger("pumice.test.a"), logging.getLogger("pumice.test.b")
    with caplog.at_level(logging.WARNING):
        assert warn_once(a, "k", "first %s", 1)
        assert not warn_once(a, "k", "again %s", 2)
        assert warn_once(a, "other", "other key")
        assert warn_once(b, "k", "same key, other logger")
    assert [(r.name, r.getMessage()) for r in caplog.records] == [
        ("pumice.test.a", "first 1"),
        ("pumice.test.a", "other key"),
        ("pumice.test.b", "same key, other logger"),
    ]


def test_forget_lets_a_warning_through_again(caplog: pytest.LogCaptureFixture) -> None:
    forget_warnings()
    log = logging.getLogger("pumice.test.forget")
    with caplog.at_level(logging.WARNING):
        warn_once(log, "k", "one")
        forget_warnings()
        warn_once(log, "k", "two")
    assert [r.getMessage() for r in caplog.records] == ["one", "two"]


def test_racing_threads_log_once(caplog: pytest.LogCaptureFixture) -> None:
    forget_warnings()
    log = logging.getLogger("pumice.test.threads")
    start = threading.Barrier(8)
    logged: list[bool] = []

    def race() -> None:
        start.wait()
        logged.append(warn_once(log, "k", "raced"))

    with caplog.at_level(logging.WARNING):
        threads = [threading.Thread(target=race) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert sorted(logged) == [False] * 7 + [True]
    assert [r.getMessage() for r in caplog.records] == ["raced"]


def test_a_config_warning_is_collected_while_checking_and_then_never_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    forget_warnings()
    log = logging.getLogger("pumice.test.config")
    with caplog.at_level(logging.WARNING), collect_config_warnings() as collected:
        config_warning(
            log, plugin="demo", key="x.weight", message="set but not implemented; ignored"
        )
    assert collected == [("x.weight", "set but not implemented; ignored")]
    assert caplog.records == []
    with caplog.at_level(logging.WARNING):
        # the sessions that build the plugin afterwards: already said, by the loader
        config_warning(
            log, plugin="demo", key="x.weight", message="set but not implemented; ignored"
        )
        # a warning the loader never saw is logged once, naming the plugin and key
        config_warning(
            log, plugin="demo", key="y.weight", message="set but not implemented; ignored"
        )
        config_warning(
            log, plugin="demo", key="y.weight", message="set but not implemented; ignored"
        )
    assert [r.getMessage() for r in caplog.records] == [
        "plugin demo: y.weight: set but not implemented; ignored"
    ]
