"""Configuration: Volcano's file format plus ``scheduler:``, every error class with its file,
line and key, defaults, durations, frozen results, and name checks."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import pytest

from pumice.framework.arguments import Arguments
from pumice.framework.config import (
    DEFAULT_FLAGS,
    FLAGS,
    ConfigError,
    LeaderElection,
    PluginOption,
    PluginPackages,
    SchedulerConfig,
    SchedulerSettings,
    Tier,
)
from pumice.framework.configfile import (
    check_names,
    default_config_text,
    load_config,
    load_default_config,
    parse_config,
)
from pumice.framework.configparse import split_host_port
from pumice.model.quantity import parse_duration

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "tests" / "fixtures" / "configs"
BAD = CONFIGS / "bad"

PUMICE_PLUGINS = (
    "priority",
    "gang",
    "conformance",
    "drf",
    "predicates",
    "proportion",
    "nodeorder",
    "binpack",
)
PUMICE_ACTIONS = ("enqueue", "allocate", "backfill")


def error_of(text: str, source: str = "conf.yaml") -> ConfigError:
    with pytest.raises(ConfigError) as info:
        parse_config(text, source)
    return info.value


# -- every error class, from a file: file, line, key, one line -----------------------------

BAD_FILES = [
    # bad YAML: the line of the YAML problem; no key
    ("bad-yaml.yaml", 5, None, "invalid YAML: expected <block end>"),
    # the top level
    ("top-level-list.yaml", 2, None, "expected a mapping at the top level, got a list"),
    ("missing-actions.yaml", 1, "actions", "missing; expected a comma-separated string"),
    # unknown keys at every level, with the closest known key
    ("unknown-top-key.yaml", 2, "tier", "unknown key; did you mean 'tiers'?"),
    ("unknown-tier-key.yaml", 5, "tiers[0].plugin", "unknown key; did you mean 'plugins'?"),
    (
        "unknown-plugin-key.yaml",
        5,
        "tiers[0].plugins[0].enablePreemtable",
        "unknown key; did you mean 'enablePreemptable'?",
    ),
    (
        "argument-outside-arguments.yaml",
        5,
        "tiers[0].plugins[0].binpack.weight",
        "plugin arguments go under 'arguments'",
    ),
    (
        "unknown-configurations-key.yaml",
        4,
        "configurations[0].argument",
        "unknown key; did you mean 'arguments'?",
    ),
    ("unknown-scheduler-key.yaml", 4, "scheduler.dryrun", "unknown key; did you mean 'dryRun'?"),
    (
        "unknown-leader-election-key.yaml",
        5,
        "scheduler.leaderElection.leaseDurationSeconds",
        "unknown key; did you mean 'leaseDuration'?",
    ),
    (
        "unknown-packages-key.yaml",
        5,
        "scheduler.plugins.block",
        "unknown key; expected one of: allow, deny",
    ),
    ("duplicate-key.yaml", 6, "tiers[0].plugins[0].enablePreemptable", "duplicate key"),
    # wrong types
    ("actions-not-a-string.yaml", 2, "actions", "got integer 5"),
    ("tiers-not-a-list.yaml", 2, "tiers", "expected a list of tiers"),
    (
        "flag-not-a-bool.yaml",
        5,
        "tiers[0].plugins[0].enablePredicate",
        "expected true or false, got string 'maybe'",
    ),
    ("period-not-a-duration.yaml", 3, "scheduler.period", "got a list"),
    ("dry-run-string.yaml", 3, "scheduler.dryRun", "expected true or false, got string 'yes'"),
    (
        "arguments-not-a-mapping.yaml",
        5,
        "tiers[0].plugins[0].arguments",
        "expected a mapping of arguments, got a list",
    ),
    # bad values
    ("empty-action-name.yaml", 1, "actions", "empty action name at position 2"),
    ("duplicate-action.yaml", 2, "actions", "action 'allocate' is listed twice"),
    (
        "duplicate-plugin.yaml",
        8,
        "tiers[1].plugins[1].name",
        "plugin 'gang' is configured twice (first at tiers[0].plugins[1], line 5)",
    ),
    ("zero-period.yaml", 3, "scheduler.period", "must be a positive duration, got 0"),
    ("negative-period.yaml", 4, "scheduler.period", "must be a positive duration, got '-1s'"),
    ("bad-duration.yaml", 5, "scheduler.leaderElection.leaseDuration", "bad duration '15sec'"),
    (
        "bad-http-address.yaml",
        3,
        "scheduler.httpAddress",
        "bad address 'localhost:99999': bad port '99999'",
    ),
    ("bad-tie-break.yaml", 3, "scheduler.tieBreak", "'deterministic' or 'random', got 'first'"),
    ("empty-tier.yaml", 5, "tiers[1].plugins", "a tier needs at least one plugin"),
    ("missing-plugin-name.yaml", 5, "tiers[0].plugins[1].name", "missing"),
    (
        "configuration-for-unlisted-action.yaml",
        9,
        "configurations[1].name",
        "action 'preempt' is not in actions (enqueue, allocate)",
    ),
    (
        "drf-hierarchy-with-proportion.yaml",
        8,
        "tiers[1].plugins[1].enableHierarchy",
        "cannot share a tier with proportion (tiers[1].plugins[0])",
    ),
    (
        "renew-deadline-too-long.yaml",
        5,
        "scheduler.leaderElection.renewDeadline",
        "renewDeadline (12s) must be shorter than leaseDuration (10s)",
    ),
    (
        "allowed-and-denied.yaml",
        5,
        "scheduler.plugins.deny[0]",
        "package 'pumice_example_plugin' is allowed and denied",
    ),
]


@pytest.mark.parametrize(
    ("name", "line", "key", "words"), BAD_FILES, ids=[row[0] for row in BAD_FILES]
)
def test_each_bad_file_names_file_line_and_key_on_one_line(
    name: str, line: int, key: str | None, words: str
) -> None:
    path = BAD / name
    with pytest.raises(ConfigError) as info:
        load_config(path)
    err = info.value
    assert (err.source, err.line, err.key) == (str(path), line, key)
    text = str(err)
    prefix = f"{path}:{line}: {key}: " if key else f"{path}:{line}: "
    assert text.startswith(prefix), text
    assert words in err.message
    assert "\n" not in text


def test_every_bad_fixture_is_covered() -> None:
    on_disk = {p.name for p in BAD.iterdir()}
    covered = {row[0] for row in BAD_FILES} | {
        "empty.yaml",
        "unknown-plugin.yaml",
        "unknown-action.yaml",
    }
    assert on_disk == covered


def test_an_empty_file_is_an_error_without_a_line() -> None:
    path = BAD / "empty.yaml"
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value) == f"{path}: the configuration is empty; expected 'actions' and 'tiers'"


def test_an_unreadable_file_is_named() -> None:
    missing = BAD / "does-not-exist.yaml"
    with pytest.raises(ConfigError) as info:
        load_config(missing)
    assert str(info.value) == f"{missing}: cannot read: No such file or directory"
    assert (info.value.line, info.value.key) == (None, None)


def test_a_file_that_is_not_utf8_is_an_error_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"actions: allocate\n# caf\xe9\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.line == 2
    assert str(info.value).startswith(f"{path}:2: not UTF-8 text")


# -- unknown plugin and action names --------------------------------------------------------


def test_unknown_plugin_is_reported_at_its_name() -> None:
    config = load_config(BAD / "unknown-plugin.yaml")
    with pytest.raises(ConfigError) as info:
        check_names(config, plugins=PUMICE_PLUGINS, actions=PUMICE_ACTIONS)
    err = info.value
    assert (err.line, err.key) == (8, "tiers[1].plugins[1].name")
    assert str(err) == (
        f"{BAD / 'unknown-plugin.yaml'}:8: tiers[1].plugins[1].name: unknown plugin 'gangg' "
        "(did you mean 'gang'?); known: binpack, conformance, drf, gang, nodeorder, "
        "predicates, priority, proportion"
    )


def test_unknown_action_is_reported_at_actions() -> None:
    config = load_config(BAD / "unknown-action.yaml")
    assert config.actions == ("enqueue", "allocat")  # a folded string is still one string
    with pytest.raises(ConfigError) as info:
        check_names(config, plugins=PUMICE_PLUGINS, actions=PUMICE_ACTIONS)
    assert (info.value.line, info.value.key) == (1, "actions")
    assert info.value.message == (
        "unknown action 'allocat' (did you mean 'allocate'?); known: allocate, backfill, enqueue"
    )


def test_a_plugin_listed_as_an_action_says_so() -> None:
    config = parse_config("actions: allocate, gang\ntiers:\n- plugins:\n  - name: drf\n")
    with pytest.raises(ConfigError, match=r"unknown action 'gang' \(that is a plugin"):
        check_names(config, plugins=PUMICE_PLUGINS, actions=PUMICE_ACTIONS)


def test_names_known_to_the_host_pass() -> None:
    check_names(load_default_config(), plugins=PUMICE_PLUGINS, actions=PUMICE_ACTIONS)


def test_with_no_plugins_installed_the_known_list_says_none() -> None:
    with pytest.raises(ConfigError, match=r"known: \(none\)$"):
        check_names(load_default_config(), plugins=(), actions=PUMICE_ACTIONS)


# -- the default configuration --------------------------------------------------------------


def test_the_default_config_has_the_expected_actions_and_tiers() -> None:
    config = load_default_config()
    assert config.actions == ("enqueue", "allocate", "backfill")
    assert [[p.name for p in tier.plugins] for tier in config.tiers] == [
        ["priority", "gang", "conformance"],
        ["drf", "predicates", "proportion", "nodeorder", "binpack"],
    ]
    assert config.plugin_names() == PUMICE_PLUGINS
    assert config.scheduler == SchedulerSettings()
    assert config.configurations == {}
    assert Path(config.source) == ROOT / "conf" / "scheduler.yaml"


def test_the_default_config_keeps_volcanos_shipped_flags() -> None:
    gang = load_default_config().tiers[0].plugins[1]
    drf = load_default_config().tiers[1].plugins[0]
    assert not gang.enabled("preemptable")
    assert not drf.enabled("preemptable")
    assert gang.enabled("job_ready")
    assert drf.enabled("job_order")


def test_default_config_text_is_the_shipped_file() -> None:
    text = default_config_text()
    assert text == (ROOT / "conf" / "scheduler.yaml").read_text(encoding="utf-8")
    assert parse_config(text) == parse_config(text)


def test_the_commented_scheduler_section_shows_the_defaults() -> None:
    """Uncommenting the example ``scheduler:`` block changes nothing."""
    lines = default_config_text().splitlines()
    start = lines.index("# scheduler:")
    block = "\n".join(line[2:] for line in lines[start:] if line.startswith("# "))
    base = "\n".join(lines[:start])
    uncommented = parse_config(f"{base}\n{block}\n")
    assert uncommented.scheduler == SchedulerSettings()
    assert uncommented.line_of("scheduler.leaderElection.retryPeriod") is not None


# -- Volcano's own format -------------------------------------------------------------------


@pytest.fixture
def volcano() -> SchedulerConfig:
    return load_config(CONFIGS / "volcano-scheduler.conf")


def test_a_volcano_file_loads_unchanged(volcano: SchedulerConfig) -> None:
    assert volcano.actions == ("enqueue", "allocate", "backfill")
    assert volcano.plugin_names() == (
        "priority",
        "gang",
        "conformance",
        "overcommit",
        "drf",
        "predicates",
        "proportion",
        "nodeorder",
        "binpack",
    )
    assert volcano.scheduler == SchedulerSettings()


def test_volcano_flags_come_through(volcano: SchedulerConfig) -> None:
    gang = volcano.tiers[0].plugins[1]
    overcommit, drf, _, proportion, _, binpack = volcano.tiers[1].plugins
    assert gang.flags["preemptable"] is False
    assert drf.flags["preemptable"] is False
    assert drf.flags["job_order"] is True
    assert proportion.flags["overused"] is False
    assert proportion.flags["cluster_order"] is True  # v1.9's EnabledClusterOrder
    assert binpack.flags["victim"] is False
    assert binpack.flags["node_order"] is True
    assert overcommit.flags == DEFAULT_FLAGS


def test_volcano_arguments_come_through_raw(volcano: SchedulerConfig) -> None:
    tier = volcano.tiers[1].plugins
    assert tier[0].arguments == {"overcommit-factor": 1.2}
    assert tier[5].arguments.get_int("binpack.weight", 1) == 10
    assert tier[5].arguments["binpack.resources"] == "nvidia.com/gpu"
    assert tier[5].arguments.get_int("binpack.resources.nvidia.com/gpu", 0) == 5
    assert tier[2].arguments.get_bool("predicate.GPUSharingEnable", False) is True
    assert tier[2].arguments["predicate.CacheEnable"] is True
    assert tier[4].arguments.get_int("mostrequested.weight", 9) == 0


def test_volcano_action_configurations_and_metrics(volcano: SchedulerConfig) -> None:
    assert set(volcano.configurations) == {"allocate", "backfill"}
    allocate = volcano.configurations["allocate"]
    assert isinstance(allocate, Arguments)
    assert allocate.get_bool("predicateErrorCacheEnable", True) is False
    assert volcano.configurations["backfill"] == {}
    assert volcano.metrics == {
        "type": "prometheus",
        "address": "http://prometheus.monitoring:9090",
        "interval": "30s",
    }


def test_the_volcano_file_passes_names_except_the_plugin_pumice_lacks(
    volcano: SchedulerConfig,
) -> None:
    check_names(volcano, plugins=(*PUMICE_PLUGINS, "overcommit"), actions=PUMICE_ACTIONS)
    with pytest.raises(ConfigError) as info:
        check_names(volcano, plugins=PUMICE_PLUGINS, actions=PUMICE_ACTIONS)
    assert (info.value.line, info.value.key) == (11, "tiers[1].plugins[0].name")


def test_line_of_gives_keys_items_and_the_nearest_enclosing_key(volcano: SchedulerConfig) -> None:
    assert volcano.line_of("actions") == 3
    assert volcano.line_of("tiers[1]") == 10
    assert volcano.line_of("tiers[1].plugins[5].arguments.binpack.weight") == 33
    assert volcano.line_of("tiers[0].plugins[1].enablePreemptable") == 8
    assert volcano.line_of("tiers[0].plugins[1].arguments") == 7  # absent: falls back to gang
    assert volcano.line_of("configurations[0].arguments.predicateErrorCacheEnable") == 41
    assert volcano.line_of("metrics.interval") == 47


def test_flag_spelled_twice_through_the_alias_is_an_error() -> None:
    err = error_of(
        "actions: a\ntiers:\n- plugins:\n  - name: p\n"
        "    enabledClusterOrder: true\n    EnabledClusterOrder: false\n"
    )
    assert (err.line, err.key) == (6, "tiers[0].plugins[0].EnabledClusterOrder")
    assert "given twice" in err.message


# -- flags ----------------------------------------------------------------------------------


def test_absent_flags_default_to_on_except_cluster_order() -> None:
    option = parse_config("actions: a\ntiers:\n- plugins:\n  - name: p\n").tiers[0].plugins[0]
    assert len(option.flags) == 24 == len(FLAGS)
    assert {flag for flag, on in option.flags.items() if not on} == {"cluster_order"}
    assert option.hierarchy is False


@pytest.mark.parametrize(
    ("yaml_key", "flag"),
    [
        ("enableJobOrder", "job_order"),
        ("enableQueueOrder", "queue_order"),
        ("enableTaskOrder", "task_order"),
        ("enablePredicate", "predicate"),
        ("enableNodeOrder", "node_order"),
        ("enableBestNode", "best_node"),
        ("enableJobReady", "job_ready"),
        ("enableJobPipelined", "job_pipelined"),
        ("enableJobEnqueued", "job_enqueueable"),
        ("enableJobStarving", "job_starving"),
        ("enablePreemptable", "preemptable"),
        ("enableReclaimable", "reclaimable"),
        ("enablePreemptive", "preemptive"),
        ("enabledOverused", "overused"),
        ("enabledAllocatable", "allocatable"),
        ("enableTargetJob", "target_job"),
        ("enableReservedNodes", "reserved_nodes"),
        ("enabledVictim", "victim"),
        ("enabledHyperNodeOrder", "hyper_node_order"),
        ("enabledSubJobReady", "sub_job_ready"),
        ("enabledSubJobPipelined", "sub_job_pipelined"),
        ("enabledSubJobOrder", "sub_job_order"),
        ("enabledHyperNodeGradient", "hyper_node_gradient"),
    ],
)
def test_each_volcano_flag_switches_exactly_its_extension_point(yaml_key: str, flag: str) -> None:
    text = f"actions: a\ntiers:\n- plugins:\n  - name: p\n    {yaml_key}: false\n"
    option = parse_config(text).tiers[0].plugins[0]
    assert {name for name, on in option.flags.items() if not on} == {flag, "cluster_order"}
    assert option.enabled(flag) is False


@pytest.mark.parametrize("spelling", ["enabledClusterOrder", "EnabledClusterOrder"])
def test_cluster_order_is_switched_on_by_either_spelling(spelling: str) -> None:
    text = f"actions: a\ntiers:\n- plugins:\n  - name: p\n    {spelling}: true\n"
    assert parse_config(text).tiers[0].plugins[0].enabled("cluster_order") is True


def test_enable_hierarchy_is_read() -> None:
    text = "actions: a\ntiers:\n- plugins:\n  - name: drf\n    enableHierarchy: true\n"
    assert parse_config(text).tiers[0].plugins[0].hierarchy is True


def test_drf_hierarchy_with_proportion_in_another_tier_is_fine() -> None:
    text = (
        "actions: a\ntiers:\n- plugins:\n  - name: drf\n    enableHierarchy: true\n"
        "- plugins:\n  - name: proportion\n"
    )
    assert parse_config(text).plugin_names() == ("drf", "proportion")


def test_enabled_rejects_a_flag_that_does_not_exist() -> None:
    with pytest.raises(ValueError, match="unknown flag 'predicates'"):
        PluginOption("p").enabled("predicates")


def test_plugin_option_built_in_code_fills_default_flags() -> None:
    option = PluginOption("p", {"binpack.weight": 3}, {"predicate": False})  # type: ignore[arg-type]
    assert option.arguments == Arguments({"binpack.weight": 3})
    assert option.enabled("predicate") is False
    assert option.enabled("node_order") is True
    assert option.flags["cluster_order"] is False
    with pytest.raises(ValueError, match="unknown flags"):
        PluginOption("p", flags={"predicates": False})


# -- durations and the scheduler section ----------------------------------------------------


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("1s", 1.0),
        ("500ms", 0.5),
        ("2m", 120.0),
        ("1m30s", 90.0),
        ("1.5h", 5400.0),
        ("250us", 0.00025),
        ("1h2m3s4ms", 3723.004),
        ("3", 3.0),
        ("0.25", 0.25),
        ('"  2s "', 2.0),
        ('"1"', 1.0),  # a bare number in a string is seconds too: one rule everywhere
        ('"1.5"', 1.5),
    ],
)
def test_period_accepts_seconds_and_duration_strings(value: str, seconds: float) -> None:
    config = parse_config(f"actions: a\nscheduler:\n  period: {value}\n")
    assert config.scheduler.period == pytest.approx(seconds)


@pytest.mark.parametrize("value", ["1sec", "s", "1s2", '"1 s"', "1.2.3s", '""', "5d"])
def test_malformed_durations_are_rejected(value: str) -> None:
    err = error_of(f"actions: a\nscheduler:\n  period: {value}\n")
    assert (err.line, err.key) == (3, "scheduler.period")
    assert err.message.startswith("bad duration")


@pytest.mark.parametrize("value", ["0", "-1", "0s", "-500ms", ".inf", "-.inf", ".nan"])
def test_periods_must_be_positive_and_finite(value: str) -> None:
    err = error_of(f"actions: a\nscheduler:\n  period: {value}\n")
    assert err.key == "scheduler.period"
    assert err.message.startswith("must be a positive duration")


@pytest.mark.parametrize("value", ["true", "null", "{}"])
def test_period_of_the_wrong_type(value: str) -> None:
    err = error_of(f"actions: a\nscheduler:\n  period: {value}\n")
    assert err.message.startswith("expected a number of seconds or a duration")


def test_parse_duration_directly() -> None:
    assert parse_duration("0") == 0.0
    assert parse_duration("-2s") == -2.0
    assert parse_duration("1m0.5s") == pytest.approx(60.5)
    with pytest.raises(ValueError, match="bad duration"):
        parse_duration("")


def test_every_scheduler_key_is_read() -> None:
    settings = load_config(CONFIGS / "pumice-full.yaml").scheduler
    assert settings == SchedulerSettings(
        scheduler_name="batch",
        period=90.0,
        default_queue="research",
        leader_election=LeaderElection(
            enabled=True,
            lease_name="pumice-lock",
            lease_namespace="pumice-system",
            lease_duration=30.0,
            renew_deadline=20.0,
            retry_period=2.5,
        ),
        http_address="[::1]:8080",
        dry_run=True,
        kubeconfig="/etc/pumice/kubeconfig",
        plugin_packages=PluginPackages(
            allow=("pumice", "pumice-example-plugin"), deny=("pumice-broken-plugin",)
        ),
        tie_break="random",
    )


def test_null_sections_mean_defaults() -> None:
    text = (
        "actions: a\ntiers:\nconfigurations:\nmetrics:\nscheduler:\n"
        "  kubeconfig:\n  leaderElection:\n  plugins:\n"
    )
    config = parse_config(text)
    assert config.tiers == ()
    assert config.configurations == {}
    assert config.metrics == {}
    assert config.scheduler == SchedulerSettings()


def test_retry_period_must_leave_room_in_the_renew_deadline() -> None:
    err = error_of("actions: a\nscheduler:\n  leaderElection:\n    retryPeriod: 9s\n")
    assert (err.line, err.key) == (4, "scheduler.leaderElection.retryPeriod")
    assert err.message == "renewDeadline (10s) must be longer than 1.2 x retryPeriod (9s)"


def test_a_short_lease_is_blamed_when_the_deadline_is_the_default() -> None:
    err = error_of("actions: a\nscheduler:\n  leaderElection:\n    leaseDuration: 5\n")
    assert (err.line, err.key) == (4, "scheduler.leaderElection.leaseDuration")


@pytest.mark.parametrize(
    ("address", "parts"),
    [
        ("127.0.0.1:11251", ("127.0.0.1", 11251)),
        (":8080", ("", 8080)),
        ("localhost:0", ("localhost", 0)),
        ("pumice.kube-system.svc:65535", ("pumice.kube-system.svc", 65535)),
        ("[::1]:11251", ("::1", 11251)),
        ("[2001:db8::7]:80", ("2001:db8::7", 80)),
    ],
)
def test_good_http_addresses(address: str, parts: tuple[str, int]) -> None:
    assert split_host_port(address) == parts
    config = parse_config(f'actions: a\nscheduler:\n  httpAddress: "{address}"\n')
    assert config.scheduler.http_address == address


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("11251", "expected host:port"),
        ("localhost:", "bad port ''"),
        ("localhost:http", "bad port 'http'"),
        ("localhost:65536", "bad port '65536'"),
        ("::1:80", "must be in brackets"),
        ("[::g]:80", "bad IPv6 address"),
        ("300.1.1.1:80", "bad IPv4 address"),
        ("bad_host:80", "bad host"),
        ("-x.example:80", "bad host"),
    ],
)
def test_bad_http_addresses(address: str, reason: str) -> None:
    err = error_of(f'actions: a\nscheduler:\n  httpAddress: "{address}"\n')
    assert err.key == "scheduler.httpAddress"
    assert reason in err.message


@pytest.mark.parametrize(
    ("line", "key", "words"),
    [
        ("schedulerName: 7", "scheduler.schedulerName", "expected a string, got integer 7"),
        ('schedulerName: ""', "scheduler.schedulerName", "must not be empty"),
        ('defaultQueue: "a b"', "scheduler.defaultQueue", "must not contain spaces"),
        ("kubeconfig: [x]", "scheduler.kubeconfig", "expected a string, got a list"),
        ("tieBreak: 1", "scheduler.tieBreak", "expected a string"),
        ("plugins: [pumice]", "scheduler.plugins", "expected a mapping with 'allow' and 'deny'"),
        ("leaderElection: true", "scheduler.leaderElection", "got bool true"),
        ("qps: fast", "scheduler.qps", "expected a number of requests per second"),
        ("qps: -1", "scheduler.qps", "must be 0 (no limit) or a positive number, got -1"),
        ("burst: 2.5", "scheduler.burst", "expected a whole number of requests"),
        ("burst: -3", "scheduler.burst", "must be 0 (no limit) or positive, got -3"),
    ],
)
def test_scheduler_section_types(line: str, key: str, words: str) -> None:
    err = error_of(f"actions: a\nscheduler:\n  {line}\n")
    assert (err.line, err.key) == (3, key)
    assert words in err.message


def test_client_rate_settings_are_read_and_left_unset_by_default() -> None:
    assert (
        parse_config("actions: a\n").scheduler.qps,
        parse_config("actions: a\n").scheduler.burst,
    ) == (None, None)
    settings = parse_config("actions: a\nscheduler:\n  qps: 50\n  burst: 100\n").scheduler
    assert (settings.qps, settings.burst) == (50.0, 100)
    unlimited = parse_config("actions: a\nscheduler:\n  qps: 0\n").scheduler
    assert unlimited.qps == 0.0


def test_package_lists_hold_names() -> None:
    err = error_of("actions: a\nscheduler:\n  plugins:\n    deny:\n    - ok\n    - 3\n")
    assert (err.line, err.key) == (6, "scheduler.plugins.deny[1]")
    assert err.message == "expected a package name, got integer 3"


def test_a_scheduler_key_at_the_top_level_is_pointed_to_its_section() -> None:
    err = error_of("actions: a\ndryRun: true\n")
    assert (err.line, err.key) == (2, "dryRun")
    assert err.message == "unknown key; 'dryRun' belongs under 'scheduler:'"


# -- other parse rules ----------------------------------------------------------------------


def test_actions_are_split_on_commas_and_trimmed() -> None:
    config = parse_config("actions: ' enqueue,allocate ,  backfill'\n")
    assert config.actions == ("enqueue", "allocate", "backfill")


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ('""', "no actions given"),
        ('"allocate,"', "empty action name at position 2"),
        ('"enqueue allocate"', "separate actions by commas"),
        ("[enqueue, allocate]", "got a list"),
        ("null", "got null"),
    ],
)
def test_bad_actions(value: str, words: str) -> None:
    err = error_of(f"# x\nactions: {value}\n")
    assert (err.line, err.key) == (2, "actions")
    assert words in err.message


@pytest.mark.parametrize(
    ("entry", "line", "key", "words"),
    [
        ("- gang", 4, "tiers[0].plugins[0]", "expected a plugin entry"),
        ("- name: 5", 4, "tiers[0].plugins[0].name", "expected a plugin name, got integer 5"),
        ('- name: ""', 4, "tiers[0].plugins[0].name", "bad plugin name ''"),
        ("- name: my plugin", 4, "tiers[0].plugins[0].name", "bad plugin name 'my plugin'"),
        ("- name: g\n    enableHierarchy: 1", 5, "tiers[0].plugins[0].enableHierarchy", "integer"),
    ],
)
def test_bad_plugin_entries(entry: str, line: int, key: str, words: str) -> None:
    err = error_of(f"actions: a\ntiers:\n- plugins:\n  {entry}\n")
    assert (err.line, err.key) == (line, key)
    assert words in err.message


def test_a_tier_without_plugins_key_is_reported_at_the_tier() -> None:
    err = error_of("actions: a\ntiers:\n- plugins:\n  - name: g\n- {}\n")
    assert (err.line, err.key) == (5, "tiers[1]")
    assert err.message == "a tier needs at least one plugin"


def test_configurations_entries() -> None:
    err = error_of("actions: a\nconfigurations:\n- arguments: {x: 1}\n")
    assert (err.line, err.key) == (3, "configurations[0].name")
    err = error_of("actions: a\nconfigurations:\n- name: a\n- name: a\n")
    assert (err.line, err.key, err.message) == (
        4,
        "configurations[1].name",
        "action 'a' is configured twice",
    )
    err = error_of("actions: a\nconfigurations: {a: {}}\n")
    assert err.key == "configurations"
    assert "expected a list" in err.message


def test_metrics_are_strings() -> None:
    assert parse_config("actions: a\nmetrics:\n  interval: 30\n").metrics == {"interval": "30"}
    err = error_of("actions: a\nmetrics:\n  enabled: true\n")
    assert (err.line, err.key, err.message) == (
        3,
        "metrics.enabled",
        "expected a string, got bool true",
    )


def test_yaml_bools_and_dates() -> None:
    text = (
        "actions: a\ntiers:\n- plugins:\n  - name: p\n    enablePredicate: no\n"
        "    arguments: {since: 2024-01-31, at: 12:30}\n"
    )
    option = parse_config(text).tiers[0].plugins[0]
    assert option.enabled("predicate") is False  # YAML 1.1, as in Go's yaml.v2
    assert option.arguments["since"] == "2024-01-31"  # dates stay strings


@pytest.mark.parametrize(
    ("text", "line", "key", "words"),
    [
        ("actions: a\ntiers: !!set {a: null}\n", 2, "tiers", "unsupported YAML tag"),
        ("actions: a\nmetrics:\n  ? [a]\n  : b\n", 3, "metrics", "keys must be plain scalars"),
        ("actions: a\n---\nactions: b\n", 2, None, "expected a single document"),
        ("actions: a\nmetrics: {a: !foo x}\n", 2, "metrics.a", "could not determine a constructor"),
        ("actions: a\n\tx: 1\n", 2, None, "found character '\\t'"),
        ("actions: a\nz: \x07\n", 2, None, "special characters are not allowed"),
    ],
)
def test_unusual_yaml(text: str, line: int, key: str | None, words: str) -> None:
    err = error_of(text)
    assert (err.line, err.key) == (line, key)
    assert words in err.message
    assert "\n" not in str(err)


def test_recursive_alias_is_an_error() -> None:
    err = error_of("actions: a\nmetrics: &m {x: *m}\n")
    assert err.message == "invalid YAML: recursive alias"
    assert err.key == "metrics.x"


def test_merge_keys_are_resolved() -> None:
    text = (
        "actions: a\ntiers:\n- plugins:\n  - &base {name: p, enablePredicate: false}\n"
        "  - <<: *base\n    name: q\n"
    )
    q = parse_config(text).tiers[0].plugins[1]
    assert (q.name, q.enabled("predicate")) == ("q", False)


# -- the error type -------------------------------------------------------------------------


def test_config_error_formats_the_parts_it_has() -> None:
    assert str(ConfigError("m", source="f", line=3, key="k")) == "f:3: k: m"
    assert str(ConfigError("m", source="f", key="k")) == "f: k: m"
    assert str(ConfigError("m", source="f", line=3)) == "f:3: m"
    assert str(ConfigError("two\nlines")) == "<string>: two lines"
    assert str(ConfigError("keeps  'a  b'\r\n  spacing", key="k\u2028x")) == (
        "<string>: k x: keeps  'a  b' spacing"
    )


def test_config_error_survives_pickling() -> None:
    import pickle

    err = pickle.loads(pickle.dumps(ConfigError("m", source="f", line=3, key="k")))
    assert (err.message, err.source, err.line, err.key) == ("m", "f", 3, "k")


def test_parse_config_names_its_source_in_errors() -> None:
    err = error_of("actions: 1\n", source="<inline>")
    assert str(err).startswith("<inline>:1: actions: ")
    with pytest.raises(ConfigError) as info:
        parse_config("actions: 1\n")
    assert info.value.source == "<string>"


# -- immutability and equality ---------------------------------------------------------------


def test_the_config_is_frozen(volcano: SchedulerConfig) -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        volcano.actions = ("allocate",)  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        volcano.scheduler.period = 5.0  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        volcano.scheduler.leader_election.enabled = True  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        volcano.tiers[0].plugins[0].name = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        volcano.tiers[0].plugins[1].flags["preemptable"] = True  # type: ignore[index]
    with pytest.raises(TypeError):
        volcano.configurations["x"] = Arguments()  # type: ignore[index]
    with pytest.raises(TypeError):
        volcano.metrics["x"] = "y"  # type: ignore[index]
    with pytest.raises(TypeError):
        volcano.tiers[1].plugins[5].arguments["binpack.weight"] = 1  # type: ignore[index]
    assert isinstance(volcano.tiers, tuple)
    assert isinstance(volcano.tiers[0].plugins, tuple)


def test_configs_compare_by_content_not_layout() -> None:
    compact = parse_config("actions: a\ntiers: [{plugins: [{name: p}]}]\n", "f")
    spread = parse_config("\n\nactions: a\ntiers:\n- plugins:\n  - name: p\n", "f")
    assert compact == spread
    assert compact.line_of("tiers[0].plugins[0].name") == 2
    assert spread.line_of("tiers[0].plugins[0].name") == 6
    assert compact != parse_config("actions: a\ntiers: [{plugins: [{name: q}]}]\n", "f")


def test_dataclasses_built_in_code_are_normalised() -> None:
    config = SchedulerConfig(
        actions=["allocate"],  # type: ignore[arg-type]
        tiers=[Tier([PluginOption("gang")])],  # type: ignore[list-item]
        metrics={"type": "prometheus"},
    )
    assert config.actions == ("allocate",)
    assert config.tiers[0].plugins == (PluginOption("gang"),)
    assert config.line_of("actions") is None
    with pytest.raises(TypeError):
        config.metrics["type"] = "x"  # type: ignore[index]


def test_a_bad_argument_type_only_warns(caplog: pytest.LogCaptureFixture) -> None:
    text = "actions: a\ntiers:\n- plugins:\n  - name: binpack\n    arguments: {binpack.weight: x}\n"
    option = parse_config(text).tiers[0].plugins[0]
    with caplog.at_level(logging.WARNING, logger="pumice.config"):
        assert option.arguments.get_int("binpack.weight", 1) == 1
    assert "plugin 'binpack'" in caplog.text
    assert "'binpack.weight'" in caplog.text
