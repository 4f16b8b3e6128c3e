"""``pumice check-config`` holds plugin and action arguments to what each one declares: a bad
value of every built-in exits 2 naming file, line and key; an undeclared argument warns and
exits 0; a third-party plugin without declarations is taken at its word; traps are linted."""

from __future__ import annotations

from pathlib import Path

import pytest

from pumice.cli import main
from pumice.framework.configcheck import lint
from pumice.framework.configfile import parse_config

HEAD = 'actions: "enqueue, allocate, backfill"\n'


def plugin_config(name: str, key: str, value: str) -> str:
    # the bad argument is on line 6; the node filters (predicates) after it, unless under test
    filters = "" if name == "predicates" else "- plugins:\n  - name: predicates\n"
    return (
        HEAD
        + "tiers:\n- plugins:\n"
        + f"  - name: {name}\n    arguments:\n      {key}: {value}\n"
        + filters
    )


def action_config(name: str, key: str, value: str) -> str:
    # the bad argument is on line 6
    return (
        HEAD
        + "tiers:\n- plugins: [{name: gang}, {name: predicates}]\nconfigurations:\n"
        + f"- name: {name}\n  arguments: {{{key}: {value}}}\n"
    )


def check(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    path = tmp_path / "scheduler.yaml"
    path.write_text(text)
    code = main(["check-config", str(path)])
    return code, capsys.readouterr().err


BAD_PLUGIN_ARGUMENTS = [
    ("binpack", "binpack.weight", "lots", "expected an integer, got string 'lots'"),
    ("binpack", "binpack.weight", "-1", "must be at least 0, got -1"),
    ("binpack", "binpack.cpu", "-3", "must be at least 0, got -3"),
    ("binpack", "binpack.memory", "1.5", "expected an integer, got number 1.5"),
    ("binpack", "binpack.resources", "[a, b]", "expected a string, got a list"),
    ("binpack", "binpack.resources.nvidia.com/gpu", "-2", "must be at least 0"),
    ("nodeorder", "leastrequested.weight", "-1", "must be at least 0"),
    ("nodeorder", "mostrequested.weight", "heavy", "expected an integer"),
    ("nodeorder", "balancedresource.weight", "true", "expected an integer, got bool true"),
    ("nodeorder", "nodeaffinity.weight", "-2", "must be at least 0"),
    ("nodeorder", "tainttoleration.weight", "2.5", "expected an integer"),
    ("nodeorder", "podaffinity.weight", "-1", "must be at least 0"),
    ("predicates", "predicate.NodeAffinityEnable", "maybe", "expected true or false"),
    ("predicates", "predicate.NodePortsEnable", "2", "expected true or false, got integer 2"),
    ("predicates", "predicate.TaintTolerationEnable", "[x]", "expected true or false"),
    ("predicates", "predicate.VolumeBindingEnable", "yes please", "expected true or false"),
]


@pytest.mark.parametrize(
    ("plugin", "key", "value", "words"),
    BAD_PLUGIN_ARGUMENTS,
    ids=[f"{p}:{k}={v}" for p, k, v, _ in BAD_PLUGIN_ARGUMENTS],
)
def test_a_bad_plugin_argument_exits_2_naming_file_line_and_key(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    plugin: str,
    key: str,
    value: str,
    words: str,
) -> None:
    code, err = check(tmp_path, plugin_config(plugin, key, value), capsys)
    assert code == 2
    path = tmp_path / "scheduler.yaml"
    assert err.strip() == f"{path}:6: tiers[0].plugins[0].arguments.{key}: {words}" or (
        err.startswith(f"{path}:6: tiers[0].plugins[0].arguments.{key}: ") and words in err
    ), err
    assert len(err.strip().splitlines()) == 1


def test_a_bad_action_argument_exits_2_naming_file_line_and_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = check(tmp_path, action_config("allocate", "predicateErrorCacheEnable", "3"), capsys)
    path = tmp_path / "scheduler.yaml"
    assert code == 2
    assert err.strip() == (
        f"{path}:6: configurations[0].arguments.predicateErrorCacheEnable: "
        "expected true or false, got integer 3"
    )


@pytest.mark.parametrize(
    ("plugin", "key", "value"),
    [
        ("binpack", "binpack.weight", "0"),
        ("binpack", "binpack.resources.nvidia.com/gpu", "5"),
        ("nodeorder", "mostrequested.weight", "4"),
        ("predicates", "predicate.NodePortsEnable", '"false"'),
    ],
)
def test_a_good_plugin_argument_passes_without_a_word(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], plugin: str, key: str, value: str
) -> None:
    code, err = check(tmp_path, plugin_config(plugin, key, value), capsys)
    assert (code, err) == (0, "")


@pytest.mark.parametrize(
    ("plugin", "key"),
    [
        ("priority", "level"),
        ("gang", "minMember"),
        ("conformance", "namespaces"),
        ("drf", "hierarchy"),
        ("proportion", "weight"),
        ("binpack", "binpack.weigth"),
        ("nodeorder", "selectorspread.weight"),
        ("predicates", "predicate.GPUSharingEnable"),
    ],
)
def test_an_undeclared_plugin_argument_warns_and_exits_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], plugin: str, key: str
) -> None:
    code, err = check(tmp_path, plugin_config(plugin, key, "1"), capsys)
    path = tmp_path / "scheduler.yaml"
    assert code == 0
    assert err.startswith(f"{path}:6: tiers[0].plugins[0].arguments.{key}: warning: plugin ")
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("action", ["enqueue", "backfill", "allocate"])
def test_an_undeclared_action_argument_warns_and_exits_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], action: str
) -> None:
    code, err = check(tmp_path, action_config(action, "mystery", "1"), capsys)
    path = tmp_path / "scheduler.yaml"
    assert code == 0
    assert err.strip().startswith(
        f"{path}:6: configurations[0].arguments.mystery: warning: action '{action}' "
    )


def test_a_plugin_without_declarations_accepts_every_argument(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the example third-party package declares nothing: its arguments are its own business
    text = (
        HEAD + "tiers:\n- plugins:\n  - name: example-zone\n"
        "    arguments: {zone: a, weight: lots, anything: -1}\n"
        "  - name: predicates\n"
    )
    code, err = check(tmp_path, text, capsys)
    assert (code, err) == (0, "")


def test_the_default_config_has_no_warnings(capsys: pytest.CaptureFixture[str]) -> None:
    conf = Path(__file__).resolve().parents[1] / "conf" / "scheduler.yaml"
    assert main(["check-config", str(conf)]) == 0
    assert capsys.readouterr().err == ""


# -- lint: rules key on names, so they are tested on parsed configs (preempt and overcommit
# -- come from other packages, and check-config refuses names it does not know)


def test_preempt_with_gang_starving_off_is_warned_at_the_flag() -> None:
    config = parse_config(
        'actions: "enqueue, allocate, preempt"\ntiers:\n- plugins:\n'
        "  - name: priority\n  - name: gang\n    enableJobStarving: false\n  - name: predicates\n",
        "c.yaml",
    )
    warnings = lint(config)
    assert [str(w).split(": warning: ")[0] for w in warnings] == [
        "c.yaml:6: tiers[0].plugins[1].enableJobStarving"
    ]
    assert "preempt" in warnings[0].message


def test_preempt_with_gang_starving_on_or_no_preempt_is_quiet() -> None:
    on = 'actions: "allocate, preempt"\ntiers:\n- plugins:\n  - name: gang\n  - name: predicates\n'
    off_no_preempt = (
        'actions: "allocate"\ntiers:\n- plugins:\n  - name: gang\n    enableJobStarving: false\n'
        "  - name: predicates\n"
    )
    assert lint(parse_config(on)) == []
    assert lint(parse_config(off_no_preempt)) == []


@pytest.mark.parametrize(("factor", "warned"), [("0.8", True), ("0", True), ("1", False)])
def test_an_overcommit_factor_below_one_is_warned(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], factor: str, warned: bool
) -> None:
    text = plugin_config("overcommit", "overcommit-factor", factor)
    code, err = check(tmp_path, text, capsys)
    assert code == 0
    # what the plugin does with it: Volcano's default, not the factor
    expected = (
        f"{tmp_path / 'scheduler.yaml'}:6: tiers[0].plugins[0].arguments.overcommit-factor: "
        f"warning: {float(factor):g} is below 1; using 1.2 (as Volcano does)\n"
    )
    assert err == (expected if warned else "")


def test_plugins_lists_what_each_one_declares(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plugins", "--arguments"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert (
        "binpack: binpack.weight (int >= 0, default 1)  the plugin's weight; 0 switches it off"
        in lines
    )
    assert "gang: no arguments" in lines
    assert "example-zone: undeclared (every argument accepted)" in lines
    assert any(
        line.startswith("allocate: predicateErrorCacheEnable (bool, default True)")
        for line in lines
    )


def test_the_declared_defaults_are_the_ones_the_built_ins_use() -> None:
    from pumice import Arguments
    from pumice.actions.allocate import AllocateAction
    from pumice.plugins.binpack import BinpackPlugin
    from pumice.plugins.nodeorder import NodeOrderPlugin
    from pumice.plugins.predicates import PredicatesPlugin

    def defaults(cls: type) -> dict[str, object]:
        return {s.name: s.default for s in cls.declared_arguments}  # type: ignore[attr-defined]

    none = Arguments({})
    binpack = BinpackPlugin(none)
    d = defaults(BinpackPlugin)
    assert binpack.weight == d["binpack.weight"]
    assert binpack.resource_weights == {"cpu": d["binpack.cpu"], "memory": d["binpack.memory"]}
    nodeorder = NodeOrderPlugin(none)
    d = defaults(NodeOrderPlugin)
    assert (
        nodeorder.least_weight,
        nodeorder.most_weight,
        nodeorder.balanced_weight,
        nodeorder.affinity_weight,
        nodeorder.taint_weight,
    ) == (
        d["leastrequested.weight"],
        d["mostrequested.weight"],
        d["balancedresource.weight"],
        d["nodeaffinity.weight"],
        d["tainttoleration.weight"],
    )
    predicates = PredicatesPlugin(none)
    d = defaults(PredicatesPlugin)
    assert (predicates.node_affinity, predicates.node_ports, predicates.taint_toleration) == (
        d["predicate.NodeAffinityEnable"],
        d["predicate.NodePortsEnable"],
        d["predicate.TaintTolerationEnable"],
    )
    assert AllocateAction(none).error_cache == defaults(AllocateAction)["predicateErrorCacheEnable"]


@pytest.mark.parametrize(
    ("key", "fields"),
    [
        ("predicate.PodAffinityEnable", "spec.affinity.podAffinity, spec.affinity.podAntiAffinity"),
        ("predicate.PodTopologySpreadEnable", "spec.topologySpreadConstraints (DoNotSchedule)"),
        ("predicate.NodeAffinityEnable", "spec.nodeSelector, spec.affinity.nodeAffinity"),
        (
            "predicate.VolumeBindingEnable",
            "the binding of their claims (spec.volumes[].persistentVolumeClaim, .ephemeral)",
        ),
        ("predicate.VolumeZoneEnable", "the zone labels of their claims' volumes"),
        ("predicate.NodeVolumeLimitsEnable", "the CSI attach limits of their volumes"),
        ("predicate.SomeFutureFilterEnable", "its fields"),
    ],
)
def test_a_constraint_filter_switched_off_is_warned_at_its_flag(key: str, fields: str) -> None:
    config = parse_config(
        'actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: predicates\n'
        f"    arguments:\n      {key}: false\n      predicate.CacheEnable: false\n",
        "c.yaml",
    )
    warnings = lint(config)
    assert [str(w).split(": warning: ")[0] for w in warnings] == [
        f"c.yaml:6: tiers[0].plugins[0].arguments.{key}"
    ]
    assert warnings[0].message == (
        f"{key} is false: that filter is off, and pods are placed as if they did not carry {fields}"
    )


def test_a_constraint_filter_switched_off_is_warned_by_check_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = plugin_config("predicates", "predicate.PodTopologySpreadEnable", "false")
    code, err = check(tmp_path, text, capsys)
    assert code == 0
    assert err.startswith(
        f"{tmp_path / 'scheduler.yaml'}:6: tiers[0].plugins[0].arguments."
        "predicate.PodTopologySpreadEnable: warning: predicate.PodTopologySpreadEnable is false"
    ), err
    on = plugin_config("predicates", "predicate.PodTopologySpreadEnable", "true")
    assert check(tmp_path, on, capsys) == (0, "")


# -- the node filters as a whole -------------------------------------------------------------

NODE_FILTERS_OFF = (
    "nothing checks nodeSelector and node affinity, taints and cordons, host ports, pod affinity "
    "/ anti-affinity, topology spread constraints or the nodes' pod limits; pods are placed as if "
    "they carried none of them"
)


def test_a_config_without_the_predicates_plugin_is_warned_at_its_tiers() -> None:
    config = parse_config(
        'actions: "enqueue, allocate, backfill"\ntiers:\n- plugins:\n  - name: gang\n'
        "- plugins:\n  - name: proportion\n  - name: nodeorder\n",
        "c.yaml",
    )
    (warning,) = lint(config)
    assert str(warning) == (
        f"c.yaml:2: tiers: warning: no predicates plugin in the tiers: {NODE_FILTERS_OFF}"
    )


def test_predicates_with_enable_predicate_false_is_warned_at_the_flag() -> None:
    config = parse_config(
        'actions: "allocate"\ntiers:\n- plugins:\n  - name: gang\n  - name: predicates\n'
        "    enablePredicate: false\n",
        "c.yaml",
    )
    (warning,) = lint(config)
    assert str(warning) == (
        "c.yaml:6: tiers[0].plugins[1].enablePredicate: warning: predicates has "
        f"enablePredicate: false: {NODE_FILTERS_OFF}"
    )


@pytest.mark.parametrize(
    "text",
    [
        # the filters are on (the flag's default)
        'actions: "allocate"\ntiers:\n- plugins:\n  - name: predicates\n',
        'actions: "allocate"\ntiers:\n- plugins:\n  - name: predicates\n'
        "    enablePredicate: true\n",
        # no action places a pod: nothing to constrain
        'actions: "enqueue"\ntiers:\n- plugins:\n  - name: gang\n',
    ],
)
def test_predicates_on_or_nothing_placed_is_quiet(text: str) -> None:
    assert lint(parse_config(text)) == []


def test_check_config_prints_the_missing_predicates_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = 'actions: "enqueue, allocate, preempt"\ntiers:\n- plugins:\n  - name: priority\n'
    code, err = check(tmp_path, text, capsys)
    assert code == 0
    assert err == (
        f"{tmp_path / 'scheduler.yaml'}:2: tiers: warning: no predicates plugin in the tiers: "
        f"{NODE_FILTERS_OFF}\n"
    )
