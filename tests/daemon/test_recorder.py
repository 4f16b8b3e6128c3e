"""The flight recorder's ring and files, driven as the daemon drives it (cache → snapshot →
``begin`` → session through the tee → ``finish``), without an API server; and ``pumice replay``
on recordings that are not this version's or not whole."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

from daemon.workload import node, pod
from pumice.cache import ClusterCache
from pumice.cli import main
from pumice.commands.common import load_checked
from pumice.daemon.recorder import FULL_EVERY, Recorder, tee
from pumice.daemon.recordfile import MAGIC, Reader, decode, recordings
from pumice.framework import run_actions
from pumice.framework.committer import RecordingCommitter
from pumice.framework.config import RecordSettings, SchedulerConfig
from pumice.framework.host import PluginHost
from pumice.framework.session import Session


@functools.cache
def default_config() -> tuple[SchedulerConfig, PluginHost]:
    return load_checked(None)


def cluster(nodes: int = 20) -> ClusterCache:
    cache = ClusterCache()
    for i in range(nodes):
        cache.nodes.on_add(node(f"n{i:02d}", cpu="64", memory="256Gi", pods="1000"))
    return cache


def busy_cluster() -> ClusterCache:
    """Pods already running: most of each snapshot stays as it was (what deltas leave out)."""
    cache = cluster()
    for i in range(300):
        cache.assigned_pods.on_add(cache.slim_pod(pod(f"running-{i}", node_name=f"n{i % 20:02d}")))
    return cache


def run_cycles(
    recorder: Recorder, cache: ClusterCache, cycles: int, first: int = 1, per_cycle: int = 5
) -> None:
    """``cycles`` daemon-like cycles: new pods arrive, a session places them, the cache assumes
    what it bound; each waits for the writer (so none is dropped for a backlog)."""
    config, host = default_config()
    for cycle in range(first, first + cycles):
        for i in range(per_cycle):
            cache.pending_pods.on_add(cache.slim_pod(pod(f"c{cycle}-p{i}", cpu="10m")))
        snapshot = cache.snapshot()
        record = recorder.begin(snapshot, cycle, config)
        committer = RecordingCommitter()
        session = Session.open(
            snapshot, config, host, committer=tee(committer, record), rng=record.rng()
        )
        run_actions(session)
        session.close()
        recorder.finish(record)
        recorder.flush()
        for _, uid, _, node_name in record.decisions:
            assert cache.assume(uid, node_name)


def test_every_deciding_cycle_is_a_file_that_reads_back(tmp_path: Path) -> None:
    recorder = Recorder(RecordSettings(str(tmp_path)))
    run_cycles(recorder, cluster(), 3)
    recorder.close()
    found = recordings(tmp_path)
    assert [c for c, _ in found] == [1, 2, 3]
    record = decode(found[-1][1])
    assert record.cycle == 3 and len(record.decisions) == 5
    assert {key for _, _, key, _ in record.decisions} == {f"batch/c3-p{i}" for i in range(5)}
    assert len(record.snapshot.nodes) == 20
    assert record.snapshot.taken_at == record.taken_at


def test_the_ring_never_passes_max_bytes_nor_keep_cycles(tmp_path: Path) -> None:
    max_bytes = 250_000
    recorder = Recorder(RecordSettings(str(tmp_path), keep_cycles=30, max_bytes=max_bytes))
    cache = cluster()
    largest = 0
    for cycle in range(1, 81):  # the cluster (and so each file) grows all the while
        run_cycles(recorder, cache, 1, first=cycle)
        on_disk = sum(p.stat().st_size for p in tmp_path.iterdir())
        largest = max(largest, on_disk)
        assert on_disk <= max_bytes
        assert len(list(tmp_path.iterdir())) <= 30
    recorder.close()
    assert recorder.bytes == sum(p.stat().st_size for p in tmp_path.iterdir())
    for _, path in recordings(tmp_path):  # no delta outlived the recordings it builds on
        decode(path)
    assert largest > max_bytes - 20_000  # the bound was reached, not merely never approached
    assert recorder.written == 80 and recordings(tmp_path)[-1][0] == 80
    assert len(recordings(tmp_path)) < 30  # by then the bytes bound, not the count, binds


def test_a_cycle_larger_than_the_whole_ring_is_skipped(tmp_path: Path) -> None:
    recorder = Recorder(RecordSettings(str(tmp_path), max_bytes=100))
    run_cycles(recorder, cluster(), 2)
    recorder.close()
    assert recordings(tmp_path) == [] and recorder.dropped == 2


def test_a_new_run_starts_the_ring_afresh(tmp_path: Path) -> None:
    first = Recorder(RecordSettings(str(tmp_path)))
    run_cycles(first, cluster(), 3)
    first.close()
    (tmp_path / "notes.txt").write_text("kept")
    Recorder(RecordSettings(str(tmp_path))).close()
    assert recordings(tmp_path) == []
    assert (tmp_path / "notes.txt").read_text() == "kept"


def header(path: Path) -> dict[str, object]:
    data = path.read_bytes()
    parsed: dict[str, object] = json.loads(data[len(MAGIC) : data.index(b"\n", len(MAGIC))])
    return parsed


def test_between_full_recordings_each_cycle_is_a_delta_on_the_one_before(
    tmp_path: Path,
) -> None:
    recorder = Recorder(RecordSettings(str(tmp_path)))
    run_cycles(recorder, busy_cluster(), FULL_EVERY + 3)
    recorder.close()
    found = recordings(tmp_path)
    bases = [header(path)["base"] for _, path in found]
    assert bases == [None, *range(1, FULL_EVERY + 1), None, FULL_EVERY + 2]
    sizes = [path.stat().st_size for _, path in found]
    assert sizes[1] < sizes[0] * 0.6 and max(sizes[1 : FULL_EVERY + 1]) < sizes[0]
    # read on its own, a delta reads its chain; in order, a Reader reads each file once
    alone = decode(found[FULL_EVERY][1])
    reader = Reader()
    in_order = [reader.read(path) for _, path in found][FULL_EVERY]
    assert alone.decisions == in_order.decisions
    assert sorted(alone.snapshot.jobs) == sorted(in_order.snapshot.jobs)
    assert len(alone.snapshot.jobs) == 300 + 5 * (FULL_EVERY + 1)


def test_a_delta_whose_base_is_gone_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recorder = Recorder(RecordSettings(str(tmp_path)))
    run_cycles(recorder, busy_cluster(), 3)
    recorder.close()
    assert header(recordings(tmp_path)[2][1])["base"] == 2
    recordings(tmp_path)[1][1].unlink()
    err = one_line_exit_2(capsys, tmp_path, recordings(tmp_path)[1][1])
    assert "cycle-000000002.rec) is missing" in err


@pytest.fixture
def recording(tmp_path: Path) -> Path:
    directory = tmp_path / "rec"
    recorder = Recorder(RecordSettings(str(directory)))
    run_cycles(recorder, cluster(), 2)
    recorder.close()
    return directory


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
    assert capsys.readouterr().out.startswith("identical: 2 cycles replayed")


@pytest.mark.parametrize("keep", [10, len(MAGIC) + 30, -200, -1])
def test_a_truncated_file_is_one_line_and_exit_2(
    recording: Path, capsys: pytest.CaptureFixture[str], keep: int
) -> None:
    path = recordings(recording)[1][1]
    path.write_bytes(path.read_bytes()[:keep])
    err = one_line_exit_2(capsys, recording, path)
    assert "recording" in err


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
    header = data[len(MAGIC) : header_end].replace(b'"pumice": "', b'"pumice": "9.9.9-')
    path.write_bytes(MAGIC + header + data[header_end:])
    err = one_line_exit_2(capsys, recording, path)
    assert "recorded by pumice 9.9.9-" in err


def test_a_file_that_is_no_recording_is_one_line_and_exit_2(
    recording: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = recordings(recording)[0][1]
    path.write_text("hello\n")
    assert "not a pumice recording" in one_line_exit_2(capsys, recording, path)


def test_an_unknown_cycle_and_a_missing_directory_are_exit_2(
    recording: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["replay", str(recording), "--cycle", "99"]) == 2
    assert main(["replay", str(tmp_path / "nowhere")]) == 2
    assert capsys.readouterr().err.count("\n") == 2
