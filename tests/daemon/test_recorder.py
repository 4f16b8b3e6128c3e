"""The flight recorder's ring and files, driven as the daemon drives it (a journaled cache →
snapshot → ``begin`` → session through the tee → ``finish``), without an API server; and
``pumice replay`` on recordings that are not this version's or not whole."""

from __future__ import annotations

import dataclasses
import functools
import pickle
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from daemon.workload import node, pod
from pumice.cache import ClusterCache
from pumice.cli import main
from pumice.commands.config_commands import load_checked
from pumice.daemon.recorder import Recorder, tee
from pumice.daemon.recordfile import (
    MAGIC,
    Payload,
    Reader,
    decode,
    encode,
    encode_payload,
    read_header,
    recordings,
    runs,
)
from pumice.daemon.recordwriter import GROUP_SHARE
from pumice.framework import run_actions
from pumice.framework.committer import RecordingCommitter
from pumice.framework.config import RecordSettings, SchedulerConfig
from pumice.framework.configfile import parse_config
from pumice.framework.host import PluginHost
from pumice.framework.session import Session
from pumice.model import NodeInfo


@functools.cache
def default_config() -> tuple[SchedulerConfig, PluginHost]:
    return load_checked(None)


@pytest.fixture
def recorders() -> Iterator[list[Recorder]]:
    """Recorders made in a test, closed at its end (their processes with them)."""
    made: list[Recorder] = []
    yield made
    for recorder in made:
        recorder.close()


def recorder_in(made: list[Recorder], directory: Path, **bounds: int) -> Recorder:
    recorder = Recorder(RecordSettings(str(directory), **bounds))
    made.append(recorder)
    return recorder


def cluster(recorder: Recorder, nodes: int = 20, running: int = 0) -> ClusterCache:
    """A journaled cache with ``nodes`` nodes and ``running`` pods already running on them."""
    cache = recorder.cache("pumice", volcano=True, default_queue="default")
    for i in range(nodes):
        cache.nodes.on_add(node(f"n{i:02d}", cpu="64", memory="256Gi", pods="1000"))
    for i in range(running):
        running_pod = pod(f"running-{i}", node_name=f"n{i % nodes:02d}")
        cache.assigned_pods.on_add(cache.slim_pod(running_pod))
    return cache


def run_cycles(
    recorder: Recorder,
    cache: ClusterCache,
    cycles: int,
    first: int = 1,
    per_cycle: int = 5,
    config: SchedulerConfig | None = None,
) -> None:
    """``cycles`` daemon-like cycles: new pods arrive, a session places them, the cache assumes
    what it bound; each waits for the recorder's process (so every file is there after it)."""
    default, host = default_config()
    config = config or default
    for cycle in range(first, first + cycles):
        for i in range(per_cycle):
            cache.pending_pods.on_add(cache.slim_pod(pod(f"c{cycle}-p{i}", cpu="10m")))
        snapshot = cache.snapshot()
        record = recorder.begin(snapshot, cycle, config)
        committer = tee(RecordingCommitter(quiet=True), record)
        session = Session.open(snapshot, config, host, committer=committer, rng=record.rng())
        failed = False
        try:
            run_actions(session)
        except Exception:
            failed = True
        session.close()
        recorder.finish(record, failed=failed)
        recorder.flush()
        assert isinstance(committer, RecordingCommitter)
        for decision in committer.of_kind("bind"):
            assert cache.assume(decision.task.uid, node=decision.node)


def this_run(recorder: Recorder) -> Path:
    return Path(recorder.run)


def on_disk(directory: Path) -> list[Path]:
    return [p for p in directory.rglob("*") if p.is_file()]


def header(path: Path) -> dict[str, object]:
    return read_header(path, path.read_bytes())[0]


def test_every_deciding_cycle_is_a_file_that_reads_back(
    tmp_path: Path, recorders: list[Recorder]
) -> None:
    recorder = recorder_in(recorders, tmp_path)
    run_cycles(recorder, cluster(recorder), 3)
    found = recordings(this_run(recorder))
    assert [c for c, _ in found] == [1, 2, 3] and recorder.written == 3
    assert this_run(recorder).parent == tmp_path
    record = decode(found[-1][1])
    assert record.cycle == 3 and len(record.decisions) == 5
    assert {key for _, _, key, _ in record.decisions} == {f"batch/c3-p{i}" for i in range(5)}
    assert len(record.snapshot.nodes) == 20
    assert record.snapshot.taken_at == record.taken_at


def test_a_cycle_that_decides_nothing_writes_nothing_and_its_journal_goes_on(
    tmp_path: Path, recorders: list[Recorder]
) -> None:
    recorder = recorder_in(recorders, tmp_path)
    cache = cluster(recorder)
    run_cycles(recorder, cache, 1)
    run_cycles(recorder, cache, 1, first=2, per_cycle=0)  # nothing to place
    cache.nodes.on_add(node("late", cpu="1"))  # between cycles: in the next file's journal
    run_cycles(recorder, cache, 1, first=3)
    found = recordings(this_run(recorder))
    assert [c for c, _ in found] == [1, 3] and header(found[1][1])["base"] == 1
    assert "late" in decode(found[1][1]).snapshot.nodes


def test_the_ring_never_passes_max_bytes_nor_keep_cycles_and_keeps_most_of_its_history(
    tmp_path: Path, recorders: list[Recorder]
) -> None:
    max_bytes, keep = 120_000, 200
    recorder = recorder_in(recorders, tmp_path, keep_cycles=keep, max_bytes=max_bytes)
    cache = cluster(recorder, nodes=4)
    largest, history = 0, []
    for cycle in range(1, 91):
        run_cycles(recorder, cache, 1, first=cycle, per_cycle=3)
        for i in range(3):  # a steady cluster: the pods of six cycles ago finish
            cache.gone(f"batch/c{cycle - 6}-p{i}")
        size = sum(p.stat().st_size for p in on_disk(tmp_path))
        largest = max(largest, size)
        assert size <= max_bytes and len(on_disk(tmp_path)) <= keep
        history.append((size, len(on_disk(tmp_path))))
    assert recorder.bytes == sum(p.stat().st_size for p in on_disk(tmp_path))
    assert largest > max_bytes * 0.9  # the bound was reached, not merely never approached
    # Deleting the oldest group never takes more than about an eighth of the ring: once the
    # bound is reached, most of it stays filled (no collapse to a handful of cycles).
    reached = next(i for i, (size, _) in enumerate(history) if size > max_bytes * 0.9)
    after = history[reached:]
    assert len(after) > 20
    assert min(size for size, _ in after) > max_bytes * 0.75
    assert min(files for _, files in after) >= 0.75 * max(files for _, files in after)
    reader = Reader()
    for _, path in recordings(this_run(recorder)):  # no delta outlived its chain
        reader.read(path)
    assert recorder.written == 90 and recordings(this_run(recorder))[-1][0] == 90


def test_a_cycle_larger_than_the_whole_ring_is_skipped(
    tmp_path: Path, recorders: list[Recorder]
) -> None:
    recorder = recorder_in(recorders, tmp_path, max_bytes=100)
    run_cycles(recorder, cluster(recorder), 2)
    assert recordings(this_run(recorder)) == [] and recorder.dropped == 2


def test_a_new_run_keeps_the_last_runs_recordings_and_counts_them(
    tmp_path: Path, recorders: list[Recorder]
) -> None:
    first = recorder_in(recorders, tmp_path, keep_cycles=2 * GROUP_SHARE)  # groups of two
    run_cycles(first, cluster(first), 3)
    first.close()
    recorders.remove(first)
    kept = {p: p.read_bytes() for p in on_disk(tmp_path)}
    (tmp_path / "notes.txt").write_text("kept")
    # what a crash leaves: a half-written file, in the run and beside it
    (this_run(first) / "cycle-000000004.rec.partial").write_bytes(b"half")
    (tmp_path / "cycle-000000009.rec.partial").write_bytes(b"half")
    size = sum(len(b) for b in kept.values())
    second = recorder_in(recorders, tmp_path, max_bytes=size + 500)
    run_cycles(second, cluster(second), 1)
    assert this_run(second) != this_run(first)
    assert [r.name for r in runs(tmp_path)] == [this_run(first).name, this_run(second).name]
    assert not list(tmp_path.rglob("*.partial"))
    assert (tmp_path / "notes.txt").read_text() == "kept"
    # the second run's files needed room: the first run's oldest group went, whole
    left = [p.name for p in sorted(on_disk(tmp_path)) if p.parent == this_run(first)]
    assert left == ["cycle-000000003.rec"] and len(kept) == 3
    assert second.bytes == sum(p.stat().st_size for p in on_disk(tmp_path) if p.suffix == ".rec")
    assert second.bytes <= size + 500
    assert main(["replay", str(this_run(first))]) == 0  # what is left of it still replays


def test_replay_takes_the_last_run_and_says_so(
    tmp_path: Path, recorders: list[Recorder], capsys: pytest.CaptureFixture[str]
) -> None:
    for _ in range(2):
        recorder = recorder_in(recorders, tmp_path)
        run_cycles(recorder, cluster(recorder), 2)
        recorder.close()
        recorders.remove(recorder)
    capsys.readouterr()
    assert main(["replay", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("identical: 2 cycles replayed")
    assert (
        err.strip()
        == f"pumice replay: replaying {runs(tmp_path)[-1]}, the last of 2 runs in {tmp_path}"
    )
    assert main(["replay", str(runs(tmp_path)[0])]) == 0


def test_between_full_recordings_each_cycle_is_a_delta_on_the_one_before(
    tmp_path: Path, recorders: list[Recorder]
) -> None:
    group = 4
    recorder = recorder_in(recorders, tmp_path, keep_cycles=group * GROUP_SHARE)
    run_cycles(recorder, cluster(recorder, running=300), group + 3)
    found = recordings(this_run(recorder))
    bases = [header(path)["base"] for _, path in found]
    assert bases == [None, 1, 2, 3, None, 5, 6]
    sizes = [path.stat().st_size for _, path in found]
    # a delta holds what changed (5 pods), a fraction of the journal from the cache's creation
    # and of a full file that holds the cache
    assert max(sizes[1:group]) < sizes[0] * 0.5 and max(sizes[1:group]) < sizes[group] * 0.1
    # read on its own, a delta reads its chain; in order, a Reader reads each file once
    alone = decode(found[group - 1][1])
    reader = Reader()
    in_order = [reader.read(path) for _, path in found][group - 1]
    assert alone.decisions == in_order.decisions
    assert list(alone.snapshot.jobs) == list(in_order.snapshot.jobs)
    assert len(alone.snapshot.jobs) == 300 + 5 * group


@pytest.fixture
def recording(tmp_path: Path, recorders: list[Recorder]) -> Path:
    recorder = recorder_in(recorders, tmp_path / "rec")
    run_cycles(recorder, cluster(recorder, running=30), 3)
    recorder.close()
    recorders.remove(recorder)
    return this_run(recorder)


def one_line_exit_2(capsys: pytest.CaptureFixture[str], directory: Path, named: Path) -> str:
    capsys.readouterr()
    assert main(["replay", str(directory)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and str(named) in err and "Traceback" not in err
    return err


def test_the_recording_replays_identical(
    recording: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["replay", str(recording)]) == 0
    assert capsys.readouterr().out.startswith("identical: 3 cycles replayed")


def test_a_delta_whose_base_is_gone_is_one_line_and_exit_2(
    recording: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert header(recordings(recording)[2][1])["base"] == 2
    recordings(recording)[1][1].unlink()
    err = one_line_exit_2(capsys, recording, recordings(recording)[1][1])
    assert "cycle-000000002.rec) is missing" in err


@pytest.mark.parametrize("keep", [10, len(MAGIC) + 30, -200, -1])
def test_a_truncated_file_is_one_line_and_exit_2(
    recording: Path, capsys: pytest.CaptureFixture[str], keep: int
) -> None:
    path = recordings(recording)[1][1]
    path.write_bytes(path.read_bytes()[:keep])
    err = one_line_exit_2(capsys, recording, path)
    assert "truncated" in err


def test_a_damaged_file_is_one_line_and_exit_2(
    recording: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = recordings(recording)[0][1]
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    assert "damaged" in one_line_exit_2(capsys, recording, path)


def test_another_versions_recording_is_one_line_and_exit_2(
    recording: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = recordings(recording)[0][1]
    data = path.read_bytes()
    header_end = data.index(b"\n", len(MAGIC))
    text = data[len(MAGIC) : header_end].replace(b'"pumice": "', b'"pumice": "9.9.9-')
    path.write_bytes(MAGIC + text + data[header_end:])
    err = one_line_exit_2(capsys, recording, path)
    assert "recorded by pumice 9.9.9-" in err


def test_a_file_that_is_no_recording_is_one_line_and_exit_2(
    recording: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = recordings(recording)[0][1]
    path.write_text("hello\n")
    assert "not a pumice recording" in one_line_exit_2(capsys, recording, path)


def test_a_journal_missing_a_line_is_caught_by_the_snapshots_fingerprint(
    recording: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = recordings(recording)[1][1]
    _, body = read_header(path, path.read_bytes())
    payload = pickle.loads(zlib.decompress(body))
    lines = payload.journal.splitlines(keepends=True)
    assume = next(i for i, line in enumerate(lines) if line.startswith(b'["call","assume"'))
    payload.journal = b"".join(lines[:assume] + lines[assume + 1 :])
    path.write_bytes(encode_payload(payload, cycle=2, base=1))
    err = one_line_exit_2(capsys, recording, path)
    assert "does not rebuild the snapshot cycle 2 was decided on" in err


def test_a_recorded_plugin_that_is_not_installed_is_one_line_and_exit_2(
    recording: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = recordings(recording)[0][1]
    record = decode(path)
    gone = parse_config("actions: allocate\ntiers:\n- plugins:\n  - name: thirdparty-plugin\n")
    path.write_bytes(encode(dataclasses.replace(record, config=gone)))
    err = one_line_exit_2(capsys, recording, path)
    assert "cannot open its session" in err and "thirdparty-plugin" in err


def test_replay_names_the_cycle_of_the_header_not_of_the_file_name(
    recording: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    [first, *others] = [path for _, path in recordings(recording)]
    for path in others:
        path.unlink()
    record = decode(first)
    [(_, _, key, chosen), *_] = record.decisions
    cordoned = node(chosen, cpu="64", memory="256Gi", pods="1000")
    cordoned["spec"] = {"unschedulable": True}
    record.snapshot.put_node(NodeInfo.from_node(cordoned))
    first.unlink()
    (recording / "cycle-000000099.rec").write_bytes(encode(record))
    capsys.readouterr()
    assert main(["replay", str(recording)]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"cycle 1: pod {key}: recorded {chosen}, replayed ")


def test_a_session_that_raised_after_binding_is_recorded_and_replays_identical(
    tmp_path: Path, recorders: list[Recorder], capsys: pytest.CaptureFixture[str]
) -> None:
    config, _ = default_config()
    raising = dataclasses.replace(config, actions=("allocate", "no-such-action"))
    recorder = recorder_in(recorders, tmp_path)
    run_cycles(recorder, cluster(recorder), 1, config=raising)
    [(_, path)] = recordings(this_run(recorder))
    record = decode(path)
    assert record.failed and len(record.decisions) == 5  # its binds went out: they are there
    capsys.readouterr()
    assert main(["replay", str(this_run(recorder))]) == 0  # it raises again, after the same binds
    # recorded as completed, it is named as a difference
    path.write_bytes(encode(dataclasses.replace(record, failed=False)))
    assert main(["replay", str(this_run(recorder))]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == (
        "cycle 1: the session: recorded completed, replayed failed"
    )


def test_an_unknown_cycle_and_a_missing_directory_are_exit_2(
    recording: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["replay", str(recording), "--cycle", "99"]) == 2
    assert main(["replay", str(tmp_path / "nowhere")]) == 2
    assert capsys.readouterr().err.count("\n") == 2


def payload_of(path: Path) -> tuple[dict[str, object], Payload]:
    head, body = read_header(path, path.read_bytes())
    payload = pickle.loads(zlib.decompress(body))
    assert isinstance(payload, Payload) and payload.meta["cycle"] == head["cycle"]
    return head, payload


def test_a_runs_first_file_is_its_journal_and_later_full_files_hold_the_cache(
    tmp_path: Path, recorders: list[Recorder], capsys: pytest.CaptureFixture[str]
) -> None:
    recorder = recorder_in(recorders, tmp_path, keep_cycles=2 * GROUP_SHARE)  # groups of two
    run_cycles(recorder, cluster(recorder, running=30), 3)
    first, second, third = (payload_of(path) for _, path in recordings(this_run(recorder)))
    # the first: the journal from the cache's creation, nothing pickled but the config
    assert first[0]["base"] is None and first[1].replica is None and first[1].journal
    assert first[1].journal.startswith(b'["init","pumice",true,"default"')
    assert second[0]["base"] == 1 and second[1].replica is None
    # a later group starts with the recorder's copy of the cache, as the session saw it
    assert third[0]["base"] is None and third[1].replica is not None and not third[1].journal
    assert third[1].replica.snapshot is not None
    capsys.readouterr()
    assert main(["replay", str(this_run(recorder))]) == 0
    assert main(["replay", str(this_run(recorder)), "--cycle", "3"]) == 0
    assert capsys.readouterr().out.count("identical") == 2
