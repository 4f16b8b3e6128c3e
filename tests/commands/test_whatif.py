"""``pumice simulate --until-done``: jobs run to completion in virtual time.

Every expectation below is worked out by hand from the scenario, in the comments beside it.
The scenarios run with the shipped default configuration's tiers (enqueue, allocate, backfill;
gang, proportion, binpack, …) and the period each test names.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from pumice.commands.whatif_inputs import COMPLETE_AFTER
from pumice.model import parse_quantity
from pumice.sim import lifecycle
from support.manifests import node, pod, podgroup, priority_class, queue, run_cli, write_yaml

Capsys = pytest.CaptureFixture[str]

TIERS = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
"""


def config(tmp_path: Path, period: str, name: str = "scheduler.yaml") -> Path:
    path = tmp_path / name
    path.write_text(f"{TIERS}scheduler:\n  period: {period}\n")
    return path


def two_nodes_and_a_long_pod(tmp_path: Path) -> Path:
    """Two nodes of 4 cpu; pod ``a`` (4 cpu, 10 minutes) waits at t = 0."""
    a = pod("a", "4", "0", created="2026-01-01T00:00:00Z")
    a["metadata"]["annotations"] = {COMPLETE_AFTER: "10m"}
    objects = [node("n1", "4", "8Gi"), node("n2", "4", "8Gi"), priority_class("low", 10), a]
    return write_yaml(tmp_path / "cluster.yaml", objects)


# j1 takes the other whole node at t = 0; j2 (a gang of two whole nodes) and j3 arrive while
# both nodes are busy.
JOBS: list[dict[str, Any]] = [
    {"arrival": "0s", "job": "j1", "pods": 1, "requests": {"cpu": "4"}, "runtime": "5m"},
    {"arrival": "1m", "job": "j2", "pods": 2, "requests": {"cpu": "4"}, "runtime": "10m"},
    {
        "arrival": "2m",
        "job": "j3",
        "pods": 1,
        "requests": {"cpu": "2"},
        "runtime": "1m",
        "priority": "low",
    },
]


def write_jsonl(path: Path, jobs: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(j) + "\n" for j in jobs))
    return path


def write_csv(path: Path, jobs: list[dict[str, Any]]) -> Path:
    resources = sorted({r for j in jobs for r in j["requests"]})
    header = ["arrival", "namespace", "job", "pods", "runtime", "queue", "priority"]
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header + [f"requests.{r}" for r in resources])
        for j in jobs:
            row = [str(j.get(k, "")) for k in header]
            writer.writerow(row + [j["requests"].get(r, "") for r in resources])
    return path


def timeline_of(args: list[str], capsys: Capsys) -> dict[str, Any]:
    code, out, err = run_cli(["simulate", *args, "--until-done", "--output", "json"], capsys)
    assert code == 0, err
    result: dict[str, Any] = json.loads(out)
    return result


def test_the_complete_after_annotation_is_the_sims() -> None:
    assert COMPLETE_AFTER == lifecycle.COMPLETE_AFTER


@pytest.mark.parametrize("form", ["jsonl", "csv"])
def test_waits_makespan_and_utilisation_of_two_nodes_and_four_jobs(
    tmp_path: Path, capsys: Capsys, form: str
) -> None:
    cluster = two_nodes_and_a_long_pod(tmp_path)
    writer = write_jsonl if form == "jsonl" else write_csv
    trace = writer(tmp_path / f"trace.{form}", JOBS)
    conf = config(tmp_path, "1s")
    result = timeline_of([str(cluster), "--config", str(conf), "--trace", str(trace)], capsys)
    timeline = result["timeline"]
    # t=0: a and j1 take a whole node each (waits 0). t=60: j2 (2 x 4 cpu) cannot fit; t=120:
    # neither can j3. t=300: j1 completes; its node takes j3 (2 cpu; wait 300-120=180), not
    # the gang j2. t=360: j3 completes. t=600: a completes; j2 gets both nodes (wait
    # 600-60=540) and runs until 1200, the last completion.
    assert timeline["makespan_seconds"] == 1200.0
    # waits sorted [0, 0, 180, 540]: p50 is rank ceil(2)=2, p90 and p99 rank 4
    assert timeline["queues"] == {
        "default": {
            "jobs": 4,
            "jobs_done": 4,
            "wait_seconds": {"p50": 0.0, "p90": 540.0, "p99": 540.0},
        }
    }
    cpu = [(s["t"], s["cpu"]) for s in timeline["utilisation"]]
    # 8/8 cpu; j1 gone and j3 in: 6/8; j3 gone: 4/8; a gone and j2 in: 8/8; all gone: 0
    assert cpu == [(0.0, 1.0), (300.0, 0.75), (360.0, 0.5), (600.0, 1.0), (1200.0, 0.0)]
    first = timeline["shares"][0]
    # one queue with all the work: it deserves what it asks for (8 cpu) and holds it all
    assert (first["t"], first["queue"], first["share"]) == (0.0, "default", 1.0)
    assert parse_quantity(first["deserved"]["cpu"]) == 8
    assert timeline["pending_pods"] == 0


def test_csv_and_json_lines_give_the_same_timeline(tmp_path: Path, capsys: Capsys) -> None:
    cluster = two_nodes_and_a_long_pod(tmp_path)
    conf = config(tmp_path, "1s")
    runs = [
        timeline_of([str(cluster), "--config", str(conf), "--trace", str(trace)], capsys)
        for trace in (
            write_jsonl(tmp_path / "t.jsonl", JOBS),
            write_csv(tmp_path / "t.csv", JOBS),
        )
    ]
    assert runs[0] == runs[1]


# Four one-pod jobs that always fit (two nodes of 4 cpu, 1 cpu each): a job waits only for
# the next cycle, so the period alone makes the difference.
UNCONTENDED = [
    {"arrival": a, "job": f"u{i}", "pods": 1, "requests": {"cpu": "1"}, "runtime": "100s"}
    for i, a in enumerate(["0s", "15s", "100s", "170s"])
]


def test_two_configurations_compared(tmp_path: Path, capsys: Capsys) -> None:
    cluster = write_yaml(tmp_path / "cluster.yaml", [node("n1", "4"), node("n2", "4")])
    trace = write_jsonl(tmp_path / "t.jsonl", UNCONTENDED)
    fast, slow = config(tmp_path, "1s", "fast.yaml"), config(tmp_path, "1m", "slow.yaml")
    args = [str(cluster), "--config", str(fast), "--compare", str(slow), "--trace", str(trace)]
    result = timeline_of(args, capsys)
    first, second = result["timeline"], result["compare"]
    assert (first["config"], second["config"]) == (str(fast), str(slow))
    # period 1s: every arrival is on a boundary, no wait; the last job runs 170..270
    assert first["makespan_seconds"] == 270.0
    assert first["queues"]["default"]["wait_seconds"] == {"p50": 0.0, "p90": 0.0, "p99": 0.0}
    # period 1m: cycles at 0, 60, 120, 180: waits 0, 45, 20, 10 -> sorted [0, 10, 20, 45];
    # p50 is rank 2, p90 and p99 rank 4; the last job runs 180..280
    assert second["makespan_seconds"] == 280.0
    assert second["queues"]["default"]["wait_seconds"] == {"p50": 10.0, "p90": 45.0, "p99": 45.0}
    assert second["queues"]["default"]["jobs_done"] == 4


def test_the_plot_is_a_png_of_both_runs_side_by_side(tmp_path: Path, capsys: Capsys) -> None:
    from matplotlib import image

    cluster = write_yaml(tmp_path / "cluster.yaml", [node("n1", "4"), node("n2", "4")])
    trace = write_jsonl(tmp_path / "t.jsonl", UNCONTENDED)
    fast, slow = config(tmp_path, "1s", "fast.yaml"), config(tmp_path, "1m", "slow.yaml")
    picture = tmp_path / "whatif.png"
    args = [str(cluster), "--config", str(fast), "--compare", str(slow), "--trace", str(trace)]
    code, out, err = run_cli(["simulate", *args, "--until-done", "--plot", str(picture)], capsys)
    assert code == 0, err
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    pixels = image.imread(str(picture))
    height, width = pixels.shape[:2]
    assert width > 1.5 * height  # two columns of panels
    assert "CONFIG " + str(slow) in out  # the table reports both runs


def test_an_svg_plot(tmp_path: Path, capsys: Capsys) -> None:
    cluster = write_yaml(tmp_path / "cluster.yaml", [node("n1", "4")])
    trace = write_jsonl(tmp_path / "t.jsonl", UNCONTENDED[:1])
    picture = tmp_path / "whatif.svg"
    code, _, err = run_cli(
        ["simulate", str(cluster), "--until-done", "--trace", str(trace), "--plot", str(picture)],
        capsys,
    )
    assert code == 0, err
    assert b"<svg" in picture.read_bytes()[:2000]


def test_plot_without_matplotlib_names_the_extra(
    tmp_path: Path, capsys: Capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(__import__("sys").modules, "matplotlib", None)  # import fails
    cluster = write_yaml(tmp_path / "cluster.yaml", [node("n1", "4")])
    picture = tmp_path / "p.png"
    code, _, err = run_cli(
        ["simulate", str(cluster), "--until-done", "--plot", str(picture)], capsys
    )
    assert code == 2
    assert "pumice[plot]" in err
    assert not picture.exists()


def test_a_pod_without_runtime_runs_forever(tmp_path: Path, capsys: Capsys) -> None:
    forever = pod("forever", "4")
    done = pod("done", "4")
    done["metadata"]["annotations"] = {COMPLETE_AFTER: "90s"}
    later = pod("later", "4", created="2026-01-01T00:00:01Z")
    later["metadata"]["annotations"] = {COMPLETE_AFTER: "30s"}
    cluster = write_yaml(
        tmp_path / "c.yaml", [node("n1", "4"), node("n2", "4"), forever, done, later]
    )
    timeline = timeline_of([str(cluster)], capsys)["timeline"]
    # forever and done take both nodes at 0 (same creation time; later is newer); later gets
    # done's node at 90 (wait 90) and completes at 120; forever never completes
    assert timeline["makespan_seconds"] == 120.0
    assert timeline["queues"]["default"]["jobs"] == 3
    assert timeline["queues"]["default"]["jobs_done"] == 2
    assert timeline["queues"]["default"]["wait_seconds"]["p99"] == 90.0
    assert timeline["utilisation"][-1]["cpu"] == 0.5


@pytest.mark.parametrize(
    ("lines", "line", "message"),
    [
        (
            '{"arrival": "0s", "job": "a", "pods": 1}\n{"arrival": "5d", "job": "b", "pods": 1}',
            2,
            "bad duration '5d'",
        ),
        (
            '{"arrival": "0s", "job": "a", "pods": 1}\n\n{"job": "b", "pods": 1}',
            3,
            "arrival: missing",
        ),
        ('{"arrival": "0s", "job": "a", "pods": 0}', 1, "pods: must be at least 1"),
        ('{"arrival": "0s", "job": "a", "pods": 1, "requests": {"cpu": "2x"}}', 1, "requests.cpu"),
        ('{"arrival": "0s", "job": "a", "pods": 1, "colour": "red"}', 1, "unknown field 'colour'"),
        (
            '{"arrival": "0s", "job": "a", "pods": 1}\n{"arrival": "1s", "job": "a", "pods": 1}',
            2,
            "already on line 1",
        ),
        (
            '{"arrival": "0s", "job": "a", "pods": 1, "priority": "urgent"}',
            1,
            "no PriorityClass 'urgent'",
        ),
        ('{"arrival": "0s", "job": "a", "pods": 1, "queue": "nope"}', 1, "queue 'nope'"),
        ('{"arrival": "0s", "job": "a", "pods": 1}\n{"arrival": ', 2, "not a JSON object"),
        ("arrival,job,pods\n0s,a,1\n1s,b", 3, "2 cells, the header has 3"),
        ('{"arrival": "0s", "job": "pg", "pods": 1}', 1, "job default/pg is a PodGroup"),
        ("arrival,job,pods,size\n0s,a,1,2", 1, "unknown column 'size'"),
        ("arrival,job,pods,requests\n0s,a,1,2", 1, "one requests.<resource> column each"),
    ],
)
def test_a_bad_trace_line_is_one_line_naming_file_and_line(
    tmp_path: Path, capsys: Capsys, lines: str, line: int, message: str
) -> None:
    cluster = write_yaml(tmp_path / "c.yaml", [node("n1", "4"), podgroup("pg", 1)])
    trace = tmp_path / "trace.txt"
    trace.write_text(lines + "\n")
    code, out, err = run_cli(
        ["simulate", str(cluster), "--until-done", "--trace", str(trace)], capsys
    )
    assert code == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1
    assert err.startswith(f"{trace}:{line}: ")
    assert message in err


def test_a_bad_runtime_annotation_names_the_pod(tmp_path: Path, capsys: Capsys) -> None:
    bad = pod("bad", "1")
    bad["metadata"]["annotations"] = {COMPLETE_AFTER: "soon"}
    cluster = write_yaml(tmp_path / "c.yaml", [node("n1", "4"), bad])
    code, _, err = run_cli(["simulate", str(cluster), "--until-done"], capsys)
    assert code == 2
    assert err.strip() == (
        f"{cluster}: Pod default/bad: metadata.annotations[{COMPLETE_AFTER}]: bad duration 'soon'"
    )


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--trace", "t.jsonl"], "--trace needs --until-done"),
        (["--until-done", "--explain"], "--explain cannot be used with --until-done"),
        (["--until-done", "--plot", "x.pdf"], "must end in .png or .svg"),
        (["--until-done", "--cycles", "3"], "--cycles cannot be used with --until-done"),
        (["--until-done", "--plot", "/nonexistent/dir/x.png"], "no such directory"),
    ],
)
def test_flags_that_do_not_go_together(
    tmp_path: Path, capsys: Capsys, flags: list[str], message: str
) -> None:
    cluster = write_yaml(tmp_path / "c.yaml", [node("n1", "4")])
    code, out, err = run_cli(["simulate", str(cluster), *flags], capsys)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and message in err


def test_a_reclaimed_job_restarts_whole(tmp_path: Path, capsys: Capsys) -> None:
    objects = [node("n1", "4"), queue("prod"), queue("research")]
    cluster = write_yaml(tmp_path / "c.yaml", objects)
    jobs = [
        {
            "arrival": "0s",
            "job": "r",
            "pods": 1,
            "requests": {"cpu": "4"},
            "runtime": "10m",
            "queue": "research",
        },
        {
            "arrival": "1m",
            "job": "p",
            "pods": 1,
            "requests": {"cpu": "2"},
            "runtime": "5m",
            "queue": "prod",
        },
    ]
    trace = write_jsonl(tmp_path / "t.jsonl", jobs)
    conf = tmp_path / "reclaim.yaml"
    conf.write_text(
        TIERS.replace("enqueue, allocate, backfill", "enqueue, allocate, reclaim, backfill")
    )
    timeline = timeline_of([str(cluster), "--config", str(conf), "--trace", str(trace)], capsys)[
        "timeline"
    ]
    # t=0: r takes the node. t=60: p arrives; both queues deserve 2 cpu, research holds 4, so
    # reclaim evicts r (its job restarts, pending again with its whole runtime) and p is bound
    # one period later, at 61 (wait 1). p runs to 361; then r is bound again (wait 361) and
    # runs to 961.
    assert timeline["evictions"] == 1
    assert timeline["queues"]["prod"]["wait_seconds"]["p50"] == 1.0
    assert timeline["queues"]["research"]["wait_seconds"]["p50"] == 361.0
    assert timeline["makespan_seconds"] == 961.0
    assert [(s["t"], s["cpu"]) for s in timeline["utilisation"]] == [
        (0.0, 1.0),
        (60.0, 0.0),
        (61.0, 0.5),
        (361.0, 1.0),
        (961.0, 0.0),
    ]


def test_the_whatif_page_example_prints_what_the_page_shows(capsys: Capsys) -> None:
    root = Path(__file__).resolve().parents[2]
    docs = root / "docs"
    code, out, err = run_cli(
        [
            "simulate",
            str(docs / "whatif-cluster.yaml"),
            "--until-done",
            "--trace",
            str(docs / "whatif-trace.csv"),
            "--compare",
            str(docs / "whatif-reclaim.yaml"),
        ],
        capsys,
    )
    assert code == 0, err
    page = (root / "docs" / "whatif.md").read_text()  # the README's "What if?" links it
    shown = page.split("# What if?", 1)[1].split("```", 2)[1]
    lines = [line for line in shown.splitlines() if line and line != "…"]
    for line in lines[1:]:  # the second CONFIG line names the file as the page runs it
        assert line.replace("docs/", str(docs) + "/") in out.splitlines()


def test_an_integer_priority_goes_first(tmp_path: Path, capsys: Capsys) -> None:
    cluster = write_yaml(tmp_path / "c.yaml", [node("n1", "4")])
    jobs = [
        {"arrival": "0s", "job": "a-low", "pods": 1, "requests": {"cpu": "4"}, "runtime": "1m"},
        {
            "arrival": "0s",
            "job": "b-high",
            "pods": 1,
            "requests": {"cpu": "4"},
            "runtime": "10m",
            "priority": 100,
        },
    ]
    trace = write_jsonl(tmp_path / "t.jsonl", jobs)
    timeline = timeline_of([str(cluster), "--trace", str(trace)], capsys)["timeline"]
    # b-high (priority 100) takes the node first although a-low comes first by name; a-low
    # waits for its 10 minutes: waits [0, 600]. By name order it would have been [0, 60].
    assert timeline["queues"]["default"]["wait_seconds"]["p99"] == 600.0
    assert timeline["makespan_seconds"] == 660.0


def test_a_queue_whose_last_job_ended_has_no_share_while_another_runs_on(
    tmp_path: Path, capsys: Capsys
) -> None:
    # two 4-cpu nodes; queue a's job takes one for 5 minutes, queue b's the other for 20.
    # Nothing waits after t = 0, so no session places anything again; still, a's share must
    # fall to 0 at the first boundary after its job ended (300 s), not stay until the end.
    cluster = write_yaml(
        tmp_path / "cluster.yaml", [node("n1", "4"), node("n2", "4"), queue("a"), queue("b")]
    )
    jobs = [
        {"arrival": "0s", "job": "short", "pods": 1, "requests": {"cpu": "4"}, "runtime": "5m"},
        {"arrival": "0s", "job": "long", "pods": 1, "requests": {"cpu": "4"}, "runtime": "20m"},
    ]
    jobs[0]["queue"], jobs[1]["queue"] = "a", "b"
    trace = write_jsonl(tmp_path / "t.jsonl", jobs)
    args = [str(cluster), "--config", str(config(tmp_path, "1s")), "--trace", str(trace)]
    timeline = timeline_of(args, capsys)["timeline"]
    shares_of_a = [(s["t"], s["share"]) for s in timeline["shares"] if s["queue"] == "a"]
    assert shares_of_a[-1] == (300.0, 0.0)
    assert all(share > 0 for t, share in shares_of_a if t < 300.0)
    assert timeline["makespan_seconds"] == 1200.0
