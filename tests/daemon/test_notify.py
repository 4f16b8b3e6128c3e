"""sd_notify: a datagram socket standing in for systemd's NOTIFY_SOCKET receives exactly what
``pumice.daemon.notify`` sends — path and abstract sockets, the watchdog interval, and the
watchdog loop that pings only while the daemon says it is healthy."""

from __future__ import annotations

import asyncio
import os
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from pumice.daemon.notify import Notifier, run_watchdog


@pytest.fixture
def listener(tmp_path: Path) -> Iterator[tuple[socket.socket, str]]:
    """A bound datagram socket and its path, as systemd would pass in NOTIFY_SOCKET."""
    path = str(tmp_path / "notify")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    sock.settimeout(10)
    yield sock, path
    sock.close()


def received(sock: socket.socket) -> bytes:
    return sock.recv(4096)


def test_each_state_arrives_as_one_datagram(listener: tuple[socket.socket, str]) -> None:
    sock, path = listener
    notifier = Notifier.from_environment({"NOTIFY_SOCKET": path})
    assert notifier.enabled
    assert notifier.ready("synced 3 informers")
    assert received(sock) == b"READY=1\nSTATUS=synced 3 informers"
    assert notifier.watchdog()
    assert received(sock) == b"WATCHDOG=1"
    assert notifier.status("cycle 7: 12 bound\n0 failed")
    assert received(sock) == b"STATUS=cycle 7: 12 bound 0 failed"  # one line, always
    assert notifier.stopping()
    assert received(sock) == b"STOPPING=1"
    notifier.close()


def test_an_abstract_socket_is_reached_through_the_at_sign() -> None:
    name = f"pumice-test-{uuid.uuid4().hex}"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(b"\0" + name.encode())
    sock.settimeout(10)
    try:
        notifier = Notifier.from_environment({"NOTIFY_SOCKET": "@" + name})
        assert notifier.ready()
        assert received(sock) == b"READY=1"
        notifier.close()
    finally:
        sock.close()


def test_without_a_socket_nothing_is_sent() -> None:
    notifier = Notifier.from_environment({})
    assert not notifier.enabled
    assert notifier.watchdog_interval is None
    assert not notifier.ready()


def test_a_vanished_socket_is_reported_once_and_never_raises(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    notifier = Notifier(str(tmp_path / "gone"))
    assert not notifier.watchdog()
    assert not notifier.watchdog()
    assert len([r for r in caplog.records if "cannot notify systemd" in r.message]) == 1


@pytest.mark.parametrize(
    ("environ", "interval"),
    [
        ({"WATCHDOG_USEC": "30000000"}, 15.0),
        ({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": str(os.getpid())}, 15.0),
        ({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "1"}, None),  # meant for another process
        ({"WATCHDOG_USEC": "soon"}, None),
        ({"WATCHDOG_USEC": "0"}, None),
        ({}, None),
    ],
)
def test_the_watchdog_interval_is_half_of_watchdog_usec(
    environ: dict[str, str], interval: float | None
) -> None:
    notifier = Notifier.from_environment({"NOTIFY_SOCKET": "/run/x", **environ})
    assert notifier.watchdog_interval == interval


async def test_the_watchdog_pings_only_while_healthy(listener: tuple[socket.socket, str]) -> None:
    sock, path = listener
    sock.setblocking(False)
    notifier = Notifier.from_environment({"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "20000"})
    healthy = True
    asked = 0

    def is_healthy() -> bool:
        nonlocal asked
        asked += 1
        return healthy

    task = asyncio.create_task(run_watchdog(notifier, is_healthy))
    loop = asyncio.get_running_loop()
    try:
        pings = [await asyncio.wait_for(loop.sock_recv(sock, 64), 10) for _ in range(3)]
        assert pings == [b"WATCHDOG=1"] * 3
        healthy = False
        while True:  # drain what was sent before the switch
            try:
                sock.recv(64)
            except BlockingIOError:
                break
        seen = asked
        while asked < seen + 3:  # three more ticks, each answered "not healthy"
            await asyncio.sleep(0.01)
        with pytest.raises(BlockingIOError):
            sock.recv(64)
    finally:
        task.cancel()
        notifier.close()


async def test_without_a_watchdog_the_loop_returns_at_once(
    listener: tuple[socket.socket, str],
) -> None:
    notifier = Notifier.from_environment({"NOTIFY_SOCKET": listener[1]})
    await asyncio.wait_for(run_watchdog(notifier, lambda: True), 10)
