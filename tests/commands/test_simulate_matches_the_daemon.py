"""``pumice simulate`` and the daemon (``pumice run --sim … --until-idle``) decide the same.

Every scenario cluster of the simulate tests (kept by ``support.manifests.simulate`` when
``PUMICE_SCENARIO_DIR`` is set: every module that simulates runs once in a child pytest to
collect them; of a parametrized or hypothesis test, ``PER_TEST`` clusters), the shipped
examples, and one scenario for each way the two used to disagree, go through both with the
same config; both must leave the same pods placed where, the same pods evicted, and the same
PodGroup phases.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from support.manifests import (
    CONFIG,
    node,
    pod,
    podgroup,
    priority_class,
    queue,
    run_cli,
    write_yaml,
)

Capsys = pytest.CaptureFixture[str]
Obj = dict[str, Any]

ROOT = Path(__file__).parents[2]
EXAMPLES = ROOT / "conf" / "examples"
PER_TEST = 6
"""At most this many clusters of one parametrized or hypothesis test go through both (evenly
spaced over its cases): the upstream tables alone give some 200 clusters, and each costs the
daemon about a second."""


def scenario_modules() -> list[str]:
    """Every test module that simulates a cluster through ``support.manifests.simulate``,
    directly or through ``support.constraint_cases`` — found, not listed, so a new one is never
    left out."""
    uses = re.compile(r"from support\.manifests import[^)\n]*(\([^)]*)?\bsimulate\b")
    found = []
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        text = path.read_text()
        if path.name != Path(__file__).name and (
            uses.search(text) or "from support.constraint_cases import" in text
        ):
            found.append(str(path.relative_to(ROOT)))
    return found


def sampled(folders: list[Path]) -> list[Path]:
    """``PER_TEST`` folders of each test function at most, evenly spaced, in a fixed order."""
    by_test: dict[str, list[Path]] = {}
    for folder in sorted(folders):
        test = (folder / "test.txt").read_text().split("[")[0]
        by_test.setdefault(test, []).append(folder)
    kept = []
    for group in by_test.values():
        step = max(1, -(-len(group) // PER_TEST))
        kept += group[::step]
    return kept


pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    """``pumice run`` routes the root logger through structlog onto the captured stderr: put
    the test run's handlers back, or later tests log into a closed stream."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    access = logging.getLogger("aiohttp.access").level
    yield
    for handler in list(root.handlers):
        root.removeHandler(handler)
    for handler in handlers:
        root.addHandler(handler)
    root.setLevel(level)
    logging.getLogger("aiohttp.access").setLevel(access)


@pytest.fixture(scope="module")
def scenario_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every cluster the simulate tests simulate, with its config (one folder each)."""
    where = tmp_path_factory.mktemp("scenarios")
    env = {**os.environ, "PUMICE_SCENARIO_DIR": str(where)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *scenario_modules()],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    return where


def both_ways(folder: Path, capsys: Capsys) -> tuple[Obj, Obj]:
    """(what simulate left, what the daemon left), each as {placed, evicted, podgroups}."""
    cluster, conf = folder / "cluster.yaml", folder / "scheduler.yaml"
    extra = json.loads((folder / "extra.json").read_text())
    settings: Obj = yaml.safe_load(conf.read_text()) or {}
    scheduler = settings.setdefault("scheduler", {})
    scheduler.update({"period": "50ms", "httpAddress": "127.0.0.1:0"})
    if "--scheduler-name" in extra:
        scheduler["schedulerName"] = extra[extra.index("--scheduler-name") + 1]
    same = folder / "same.yaml"
    same.write_text(yaml.safe_dump(settings))
    args = [str(cluster), "--config", str(same)]

    code, out, err = run_cli(["simulate", *args, "--output", "json"], capsys)
    assert code == 0, err
    result = json.loads(out)
    before = _placed_in(cluster)
    placed = dict(before)
    evicted: set[str] = set()
    for event in sorted(
        [("p", p["cycle"], p["pod"], p["node"]) for p in result["placements"]]
        + [("e", e["cycle"], e["pod"], e["node"]) for e in result["evictions"]],
        key=lambda e: (e[1], e[0] == "p"),
    ):
        if event[0] == "p":
            placed[event[2]] = event[3]
        else:
            placed.pop(event[2], None)
            evicted.add(event[2])
    simulated = {
        "placed": placed,
        "evicted": evicted - set(placed),
        "podgroups": {k: v["phase"] for k, v in result["podgroups"].items()},
    }

    code, out, err = run_cli(["run", "--sim", *args, "--until-idle", "--no-leader-elect"], capsys)
    assert code == 0, err[-3000:]
    lines = out.splitlines()
    summary = lines[lines.index("simulated cluster at the end:") + 1 :]
    live = {words[1]: words[3] for words in (line.split() for line in summary) if words[0] == "pod"}
    ours = {k: v for k, v in before.items() if k in _ours(cluster, scheduler)}
    daemon = {
        "placed": {k: v for k, v in live.items() if k in _ours(cluster, scheduler)},
        "evicted": set(ours) - set(live),
        "podgroups": {
            words[1]: words[2]
            for words in (line.split() for line in summary)
            if words[0] == "podgroup"
        },
    }
    simulated["placed"] = {
        k: v for k, v in simulated["placed"].items() if k in _ours(cluster, scheduler)
    }
    return simulated, daemon


def _pods(cluster: Path) -> list[Obj]:
    return [o for o in yaml.safe_load_all(cluster.read_text()) if o and o.get("kind") == "Pod"]


def _key(pod: Obj) -> str:
    meta = pod["metadata"]
    return f"{meta.get('namespace') or 'default'}/{meta['name']}"


def _placed_in(cluster: Path) -> dict[str, str]:
    """Pods the input already puts on a node (and that have not finished)."""
    return {
        _key(p): p["spec"]["nodeName"]
        for p in _pods(cluster)
        if p.get("spec", {}).get("nodeName")
        and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
    }


def _ours(cluster: Path, scheduler: Obj) -> set[str]:
    """Our pods, except those the input shows being deleted: an API server sets
    ``deletionTimestamp`` itself and drops it from a create, so the sim cannot be seeded with
    a pod that is going away (simulate leaves such a pod out; the daemon, seeing a live pod in
    the sim, schedules it)."""
    name = scheduler.get("schedulerName", "pumice")
    return {
        _key(p)
        for p in _pods(cluster)
        if p.get("spec", {}).get("schedulerName") == name
        and not p["metadata"].get("deletionTimestamp")
    }


def test_every_simulate_scenario_gives_the_daemons_decisions(
    scenario_dir: Path, capsys: Capsys
) -> None:
    every = sorted(p for p in scenario_dir.iterdir() if p.is_dir())
    tests = {(p / "test.txt").read_text().split("::")[0] for p in every}
    assert tests == set(scenario_modules())  # each module gave at least one cluster
    folders = sampled(every)
    assert len(folders) >= 80
    differ = {}
    for folder in folders:
        simulated, daemon = both_ways(folder, capsys)
        if simulated != daemon:
            differ[folder.name] = (simulated, daemon)
    assert differ == {}


def _scenario(tmp_path: Path, objects: list[Obj], config: str | None = None) -> Path:
    folder = tmp_path / "scenario"
    folder.mkdir()
    write_yaml(folder / "cluster.yaml", objects)
    (folder / "scheduler.yaml").write_text(config or CONFIG)
    (folder / "extra.json").write_text("[]")
    return folder


@pytest.mark.parametrize(
    ("cluster", "config"),
    [
        ("cluster.yaml", None),
        ("preemption.yaml", "volcano-scheduler.conf"),
        ("reservation.yaml", "reservation.conf"),
    ],
)
def test_the_shipped_examples_give_the_daemons_decisions(
    tmp_path: Path, capsys: Capsys, cluster: str, config: str | None
) -> None:
    folder = tmp_path / "example"
    folder.mkdir()
    (folder / "cluster.yaml").write_text((EXAMPLES / cluster).read_text())
    conf = EXAMPLES / config if config else ROOT / "conf" / "scheduler.yaml"
    (folder / "scheduler.yaml").write_text(conf.read_text())
    (folder / "extra.json").write_text("[]")
    simulated, daemon = both_ways(folder, capsys)
    assert simulated == daemon
    assert simulated["placed"]  # the example schedules something


# -- the disagreements of old, each through both --------------------------------------------

DEFAULT_QUEUE_CONFIG = """\
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: gang
- plugins:
  - name: predicates
  - name: proportion
configurations:
- name: enqueue
  arguments: {}
scheduler:
  defaultQueue: small
"""


def test_a_podgroup_without_a_queue_is_in_the_configs_default_queue(
    tmp_path: Path, capsys: Capsys
) -> None:
    # queue "small" may hold 1 cpu: the gang of 2 x 1 cpu (no spec.queue) must wait in both
    small = queue("small")
    small["spec"]["capability"] = {"cpu": "1"}
    group = podgroup("g", 2)
    del group["spec"]["queue"]
    objects = [node("n1"), queue("default"), small, group]
    objects += [pod(f"g-{i}", group="g") for i in range(2)]
    simulated, daemon = both_ways(_scenario(tmp_path, objects, DEFAULT_QUEUE_CONFIG), capsys)
    assert simulated == daemon
    assert daemon["placed"] == {}
    assert daemon["podgroups"]["default/g"] in ("Pending", "Inqueue")


def test_a_podgroup_without_a_class_gets_the_global_default_priority(
    tmp_path: Path, capsys: Capsys
) -> None:
    # two gangs, one node for one: the one with the globalDefault priority goes first, though
    # it is the younger (without the default it would be 0 and lose on creation time)
    default = priority_class("everyday", 1000)
    default["globalDefault"] = True
    old = podgroup("old", 2, priority_class="low")
    young = podgroup("young", 2)
    objects = [node("n1", "2"), priority_class("low", 10), default, old, young]
    objects += [pod(f"old-{i}", group="old", created="2026-01-01T00:00:00Z") for i in range(2)]
    objects += [pod(f"young-{i}", group="young", created="2026-01-02T00:00:00Z") for i in range(2)]
    young["metadata"]["creationTimestamp"] = "2026-01-02T00:00:00Z"
    old["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
    simulated, daemon = both_ways(_scenario(tmp_path, objects), capsys)
    assert simulated == daemon
    assert set(daemon["placed"]) == {"default/young-0", "default/young-1"}
    assert daemon["podgroups"] == {"default/young": "Running", "default/old": "Inqueue"}


def test_a_podgroup_whose_pods_all_finished_is_completed(tmp_path: Path, capsys: Capsys) -> None:
    done = [pod(f"done-{i}", group="done", node_name="n1", phase="Succeeded") for i in range(2)]
    objects = [node("n1"), podgroup("done", 2, phase="Running"), *done]
    objects += [podgroup("half", 2, phase="Running")]
    objects += [pod("half-0", group="half", node_name="n1", phase="Succeeded")]
    objects += [pod("half-1", group="half", node_name="n1")]
    simulated, daemon = both_ways(_scenario(tmp_path, objects), capsys)
    assert simulated == daemon
    assert daemon["podgroups"] == {"default/done": "Completed", "default/half": "Running"}


def test_a_lone_pod_marked_not_preemptable_is_never_a_victim(
    tmp_path: Path, capsys: Capsys
) -> None:
    keep = pod("keep", "4", node_name="n1", priority_class="low")
    keep["metadata"]["annotations"] = {"volcano.sh/preemptable": "false"}
    objects = [node("n1"), node("n2"), priority_class("low", 1), priority_class("high", 100)]
    objects += [keep, pod("other", "4", node_name="n2", priority_class="low")]
    objects += [podgroup("urgent", 1, priority_class="high")]
    objects += [pod("urgent-0", "4", group="urgent", priority_class="high")]
    simulated, daemon = both_ways(_scenario(tmp_path, objects), capsys)
    assert simulated == daemon
    assert daemon["evicted"] == {"default/other"}
    assert daemon["placed"]["default/keep"] == "n1"


def test_kinds_the_sim_does_not_serve_are_skipped_with_the_same_note(
    tmp_path: Path, capsys: Capsys
) -> None:
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {}}
    runtime = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "r"}}
    objects = [node("n1"), pod("p"), config_map, runtime]
    folder = _scenario(tmp_path, objects)
    simulated, daemon = both_ways(folder, capsys)
    assert simulated == daemon and daemon["placed"] == {"default/p": "n1"}
    cluster, conf = str(folder / "cluster.yaml"), str(folder / "same.yaml")
    notes = [
        f"{cluster}: skipped 1 ConfigMap object(s): not simulated",
        f"{cluster}: skipped 1 RuntimeClass object(s): not simulated",
    ]
    for args in (
        ["simulate", cluster, "--config", conf],
        ["run", "--sim", cluster, "--config", conf, "--until-idle", "--no-leader-elect"],
    ):
        code, _, err = run_cli(args, capsys)
        assert code == 0, err[-2000:]
        assert [line for line in err.splitlines() if "not simulated" in line] == notes


def test_run_sim_exits_2_with_one_line_for_a_manifest_it_cannot_read(
    tmp_path: Path, capsys: Capsys
) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("kind: [unclosed\n")
    code, out, err = run_cli(["run", "--sim", str(broken), "--until-idle"], capsys)
    assert code == 2 and out == ""
    # (the test-only broken plugin package adds a log line of its own: not ours to count)
    lines = [line for line in err.splitlines() if "broken-plugin" not in line]
    assert len(lines) == 1 and lines[0].startswith(f"pumice run: --sim: {broken}")


def test_pods_given_without_uid_or_creation_time_go_in_input_order(
    tmp_path: Path, capsys: Capsys
) -> None:
    # one node holds one of the two: both ways the first given wins. (The sim used to give
    # random uids, so its last tie-break — the uid — picked either pod; simulate keyed them by
    # name, and "zz" would then lose to "aa".)
    first, second = pod("zz", "3"), pod("aa", "3")
    for made in (first, second):
        del made["metadata"]["uid"], made["metadata"]["creationTimestamp"]
    for _ in range(3):
        simulated, daemon = both_ways(_scenario(tmp_path, [node("n1"), first, second]), capsys)
        assert simulated == daemon
        assert daemon["placed"] == {"default/zz": "n1"}
        shutil.rmtree(tmp_path / "scenario")
