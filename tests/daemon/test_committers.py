"""LoopCommitter: decisions made in the session's thread reach the event loop in order, however
they are batched, and one whose callback raises does not stop the others."""

from __future__ import annotations

import asyncio
import threading
from types import SimpleNamespace
from typing import Any

from pumice.daemon.committers import LoopCommitter


async def test_decisions_from_a_thread_arrive_in_order_on_the_loop() -> None:
    loop = asyncio.get_running_loop()
    seen: list[tuple[str, ...]] = []
    threads: set[int] = set()

    def on_bind(*, uid: str, namespace: str, name: str, node: str) -> None:
        threads.add(threading.get_ident())
        if name == "bad":
            raise RuntimeError("this callback fails")
        seen.append(("bind", uid, node))

    def on_evict(*, uid: str, namespace: str, name: str, reason: str) -> None:
        seen.append(("evict", uid))

    def on_nominate(uid: str, *, node: str) -> None:
        seen.append(("nominate", uid, node))

    errors: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, context: errors.append(context))
    committer = LoopCommitter(loop, on_bind, on_evict, on_nominate)

    def session() -> None:
        for i in range(500):
            task = SimpleNamespace(uid=f"u{i}", namespace="ns", name="bad" if i == 7 else f"p{i}")
            committer.bind(task, f"n{i}")  # type: ignore[arg-type]
            if i % 100 == 0:
                committer.evict(task, "preempted")  # type: ignore[arg-type]
                committer.nominate(task, "n0")  # type: ignore[arg-type]

    await asyncio.to_thread(session)
    await asyncio.sleep(0)
    expected: list[tuple[str, ...]] = []
    for i in range(500):
        if i != 7:
            expected.append(("bind", f"u{i}", f"n{i}"))
        if i % 100 == 0:
            expected += [("evict", f"u{i}"), ("nominate", f"u{i}", "n0")]
    assert seen == expected
    assert threads == {threading.get_ident()}  # every callback ran on the loop's thread
    assert len(errors) == 1 and isinstance(errors[0]["exception"], RuntimeError)
    assert committer.binds == 500 and committer.evictions == 5
