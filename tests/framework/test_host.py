"""The plugin host: validation through pluggy, entry points, conflicts, allow/deny, and the
session life cycle of plugin instances."""

from __future__ import annotations

import inspect
from typing import Any

import pytest
import yaml

from pumice import Action, ClusterSnapshot, NodeInfo, Plugin, Resource, hookimpl
from pumice.framework import run_actions
from pumice.framework.config import FLAG_KEYS, PluginPackages
from pumice.framework.configfile import parse_config
from pumice.framework.hookspecs import COMBINATION, HOOK_FLAGS, PluginSpec
from pumice.framework.host import PluginConflictError, PluginHost, PluginLoadError
from pumice.framework.session import RecordingCommitter, Session, SessionError
from support.builders import add_job, cluster, make_config, make_host, make_plugin


def test_a_hook_with_an_unknown_name_is_refused() -> None:
    class Typo(Plugin):
        @hookimpl
        def node_scores(self, task: Any, nodes: Any) -> None:  # the hook is node_score
            return None

    with pytest.raises(PluginLoadError, match=r"unknown hook.*node_scores"):
        PluginHost().register("typo", Typo)


def test_a_hook_asking_for_an_argument_the_spec_lacks_is_refused() -> None:
    class BadArgs(Plugin):
        @hookimpl
        def predicate(self, task: Any, nodes: Any, cluster: Any) -> None:
            return None

    with pytest.raises(PluginLoadError, match="cluster"):
        PluginHost().register("bad-args", BadArgs)


def test_only_plugin_and_action_classes_register() -> None:
    class NotAnAction(Action):
        pass

    with pytest.raises(PluginLoadError, match="neither"):
        PluginHost().register("thing", object)
    with pytest.raises(PluginLoadError, match="does not define execute"):
        PluginHost().register("lazy", NotAnAction)


def test_registering_one_name_twice_is_a_conflict() -> None:
    host = PluginHost()
    host.register("p", make_plugin("P1"), package="one")
    with pytest.raises(PluginConflictError, match="'p' is provided by both one and two"):
        host.register("p", make_plugin("P2"), package="two")


def test_an_implementation_may_take_a_subset_of_the_arguments() -> None:
    seen: list[int] = []

    class NodesOnly(Plugin):
        @hookimpl
        def node_score(self, nodes: Any) -> Any:
            seen.append(len(nodes))
            return [1.0] * len(nodes)

    snap = cluster(node_count=2)
    task = next(iter(add_job(snap, "j").tasks.values()))
    ssn = Session.open(
        snap,
        make_config([["nodes-only"]]),
        make_host({"nodes-only": NodesOnly}),
        committer=RecordingCommitter(),
    )
    assert ssn.node_scores(task).tolist() == [1.0, 1.0]
    assert seen == [2]


def test_each_session_builds_fresh_instances_with_their_arguments() -> None:
    events: list[tuple[str, int, int]] = []

    class Counter(Plugin):
        def __init__(self, arguments: Any) -> None:
            super().__init__(arguments)
            self.opened = 0

        @hookimpl
        def session_open(self, session: Any) -> None:
            self.opened += 1
            events.append(("open", self.arguments.get_int("n", -1), self.opened))

        @hookimpl
        def session_close(self, session: Any) -> None:
            events.append(("close", self.arguments.get_int("n", -1), self.opened))

    host = make_host({"a": Counter, "b": make_plugin("B")})
    config = make_config([[{"name": "a", "arguments": {"n": 7}}], ["b"]])
    for _ in range(2):
        with Session.open(cluster(), config, host, committer=RecordingCommitter()):
            pass
    assert events == [("open", 7, 1), ("close", 7, 1), ("open", 7, 1), ("close", 7, 1)]


def test_open_and_close_reach_every_plugin_in_tier_order() -> None:
    order: list[str] = []

    def opener(name: str) -> Any:
        return make_plugin(
            name,
            session_open=lambda self, session: order.append(f"open {name}"),
            session_close=lambda self, session: order.append(f"close {name}"),
        )

    host = make_host({"x": opener("x"), "y": opener("y"), "z": opener("z")})
    ssn = Session.open(
        cluster(), make_config([["y", "x"], ["z"]]), host, committer=RecordingCommitter()
    )
    ssn.close()
    ssn.close()  # idempotent
    assert order == ["open y", "open x", "open z", "close y", "close x", "close z"]


def test_an_unknown_or_crashing_plugin_stops_the_session_with_its_name() -> None:
    class Crash(Plugin):
        def __init__(self, arguments: Any) -> None:
            raise ValueError("bad weight")

    with pytest.raises(SessionError, match="unknown plugin 'ghost' in tier 1"):
        Session.open(
            cluster(), make_config([["ghost"]]), PluginHost(), committer=RecordingCommitter()
        )
    with pytest.raises(SessionError, match="plugin 'crash' failed to start: bad weight"):
        Session.open(
            cluster(),
            make_config([["crash"]]),
            make_host({"crash": Crash}),
            committer=RecordingCommitter(),
        )


def test_actions_run_in_configured_order_with_their_configuration() -> None:
    ran: list[tuple[str, Any]] = []

    def action(name: str) -> type[Action]:
        def execute(self: Any, session: Any) -> None:
            ran.append((name, self.arguments.get_bool("flag", False)))

        return type(name, (Action,), {"execute": execute})

    host = make_host({"p": make_plugin("P")})
    host.register("first", action("first"))
    host.register("second", action("second"))
    text = yaml.safe_dump(
        {
            "actions": "second, first",
            "tiers": [{"plugins": [{"name": "p"}]}],
            "configurations": [{"name": "first", "arguments": {"flag": True}}],
        }
    )
    run_actions(Session.open(cluster(), parse_config(text), host, committer=RecordingCommitter()))
    assert ran == [("second", False), ("first", True)]


# -- entry points (the packages under tests/fixtures are installed by the Makefile) ------------


def test_builtins_and_third_party_plugins_come_through_the_entry_point_group() -> None:
    host = PluginHost.discover()
    example = host.get("example-zone")
    assert example is not None and example.package == "pumice-example-plugin"
    assert example.version == "1.2.3" and set(example.hooks) == {"node_score"}
    noop = host.get("example-noop")
    assert noop is not None and noop.kind == "action"
    [failure] = [f for f in host.failures if f.package == "pumice-broken-plugin"]
    assert failure.name == "broken-plugin"
    assert "pumice_dependency_that_does_not_exist" in failure.error
    assert host.get("broken-plugin") is None


def test_a_third_party_hook_is_called_in_a_session() -> None:
    from pumice_example_plugin import CountingAction, ZonePreference  # type: ignore[import-not-found]

    zone = "topology.kubernetes.io/zone"
    nodes = [
        NodeInfo("a", Resource({"cpu": 1000}), labels={zone: "east"}),
        NodeInfo("b", Resource({"cpu": 1000}), labels={zone: "west"}),
    ]
    snap = ClusterSnapshot.build(nodes=nodes)
    task = next(iter(add_job(snap, "j", cpu=100).tasks.values()))
    config = parse_config(
        yaml.safe_dump(
            {
                "actions": "example-noop",
                "tiers": [{"plugins": [{"name": "example-zone", "arguments": {"zone": "west"}}]}],
            }
        )
    )
    ZonePreference.calls.clear()
    CountingAction.seen.clear()
    ssn = Session.open(snap, config, PluginHost.discover(), committer=RecordingCommitter())
    assert ssn.node_scores(task).tolist() == [0.0, 10.0]
    assert ssn.best_node(task, ssn.node_scores(task)) == "b"
    run_actions(ssn)
    assert ZonePreference.calls == ["j-0", "j-0"]
    assert CountingAction.seen == [1]


def test_two_packages_offering_one_name_is_an_error_unless_one_is_denied() -> None:
    with pytest.raises(PluginConflictError, match="'duplicate' is provided by both"):
        PluginHost.discover(group="pumice_conflict_test")
    host = PluginHost.discover(
        PluginPackages(deny=("pumice-broken-plugin",)), group="pumice_conflict_test"
    )
    assert host.get("duplicate") is not None
    assert host.denied == ["pumice-broken-plugin"]


def test_allow_list_keeps_the_named_packages_and_the_builtins() -> None:
    host = PluginHost.discover(PluginPackages(allow=("Pumice_Example.Plugin",)))
    assert {p.package for p in host.all()} == {"pumice-example-plugin", "pumice"}
    assert host.failures == []
    assert "pumice-broken-plugin" in host.denied


def test_deny_compares_normalised_package_names() -> None:
    host = PluginHost.discover(PluginPackages(deny=("pumice_example_plugin", "pumice")))
    assert host.get("example-zone") is None and host.get("gang") is None
    assert {"pumice-example-plugin", "pumice"} <= set(host.denied)


def test_every_hook_is_documented_with_its_rule_and_flag() -> None:
    specs = {
        name
        for name, fn in inspect.getmembers(PluginSpec, inspect.isfunction)
        if hasattr(fn, "pumice_spec")
    }
    assert specs == set(HOOK_FLAGS) == set(COMBINATION)
    for name in specs:
        doc = inspect.getdoc(getattr(PluginSpec, name)) or ""
        assert len(doc) > 40, f"hook {name} lacks a docstring"
        flag = HOOK_FLAGS[name]
        if flag is not None:
            yaml_keys = [k for k, v in FLAG_KEYS.items() if v == flag]
            assert yaml_keys, f"hook {name}: flag {flag} has no YAML key"
            assert any(k in doc for k in yaml_keys), f"hook {name} does not name its flag"
