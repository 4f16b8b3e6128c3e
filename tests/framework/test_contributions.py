"""The status and metric hooks at session close, through a real Session with test plugins:
conditions appended, Queue fields merged (a key set twice is a contract error), samples kept
with their plugin's name, and the daemon's status and /metrics built from them alone."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.registry import Collector

from pumice import MetricSample
from pumice.daemon.metrics import plugin_metrics
from pumice.daemon.outcome import collect
from pumice.framework.session import PluginContractError
from support.builders import add_job, cluster, make_plugin, open_session


def condition(kind: str) -> dict[str, str]:
    return {"type": kind, "status": "True", "reason": kind, "message": ""}


def fields(**answer: Any) -> Any:
    return lambda self, queue: dict(answer)


def closed(plugins: dict[str, Any], tiers: list[list[str]]) -> Any:
    snap = cluster()
    job = add_job(snap, "g", min_available=1)
    job.podgroup = {"metadata": {"name": "g"}}
    session = open_session(plugins, tiers, snap)
    session.close()
    return session


def test_conditions_of_every_plugin_are_appended_in_tier_order() -> None:
    plugins = {
        "a": make_plugin("A", podgroup_conditions=lambda self, job: [condition("A")]),
        "b": make_plugin(
            "B", podgroup_conditions=lambda self, job: [condition("B1"), condition("B2")]
        ),
    }
    session = closed(plugins, [["b"], ["a"]])
    assert [c["type"] for c in session.contributions.conditions["default/g"]] == ["B1", "B2", "A"]
    status = collect(session).podgroups["default/g"]
    # the framework's own condition first (the gang is not placed: no reason, none), then theirs
    assert [c["type"] for c in status["conditions"]] == ["B1", "B2", "A"]


def test_queue_fields_of_several_plugins_are_merged_into_the_queue_status() -> None:
    plugins = {
        "a": make_plugin("A", queue_status=fields(alpha=1)),
        "b": make_plugin("B", queue_status=fields(beta={"x": "y"})),
    }
    status = collect(closed(plugins, [["a", "b"]])).queues["default"]
    assert status["alpha"] == 1 and status["beta"] == {"x": "y"}
    assert status["allocated"] == {} and status["pending"] == 1


def test_a_queue_key_set_by_two_plugins_is_a_contract_error() -> None:
    plugins = {
        "a": make_plugin("A", queue_status=fields(same=1)),
        "b": make_plugin("B", queue_status=fields(same=2)),
    }
    session = closed(plugins, [["a"], ["b"]])
    (error,) = session.contributions.errors
    assert isinstance(error, PluginContractError)
    assert str(error) == "plugins a and b both set 'same' in the status of queue default"
    # the first plugin's field stands; the framework's own status is still written
    status = collect(session).queues["default"]
    assert status["same"] == 1 and status["pending"] == 1


def test_a_queue_key_the_framework_writes_is_a_contract_error() -> None:
    plugins = {"a": make_plugin("A", queue_status=fields(allocated={"cpu": "1"}))}
    (error,) = closed(plugins, [["a"]]).contributions.errors
    assert "plugin a queue_status sets 'allocated', which the framework writes" in str(error)


def test_metric_samples_are_exposed_under_their_plugins_name() -> None:
    def samples(self: Any) -> Any:
        yield MetricSample("widgets", 3.0, {"queue": "default"}, "Widgets")
        yield MetricSample("spins", 7.0, kind="counter")

    session = closed({"my-plugin": make_plugin("Mine", metric_samples=samples)}, [["my-plugin"]])
    kept = collect(session).samples
    assert [(name, s.name) for name, s in kept] == [
        ("my-plugin", "widgets"),
        ("my-plugin", "spins"),
    ]

    class Samples(Collector):
        def collect(self) -> Any:
            return plugin_metrics(kept)

    registry = CollectorRegistry()
    registry.register(Samples())
    text = generate_latest(registry).decode()
    assert 'pumice_my_plugin_widgets{queue="default"} 3.0' in text
    assert "pumice_my_plugin_spins_total 7.0" in text


def test_a_sample_that_is_not_a_metric_sample_is_a_contract_error() -> None:
    plugins = {"a": make_plugin("A", metric_samples=lambda self: [("widgets", 1.0)])}
    session = closed(plugins, [["a"]])
    (error,) = session.contributions.errors
    assert str(error) == "plugin a metric_samples gave ('widgets', 1.0), not a MetricSample"
    assert session.contributions.samples == []
