"""The client's default pacing: no client-side limit against a server that shows API Priority
and Fairness, Volcano's 2,000/s (burst 2,000) against one that does not, explicit settings
winning both ways; and the sim playing both kinds of server, shedding with 429 when told."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import aiohttp
import pytest

from pumice.framework.config import SchedulerSettings
from pumice.kube import KubeSettings
from pumice.kube.ratelimit import (
    APF_HEADERS,
    FALLBACK_BURST,
    FALLBACK_QPS,
    RequestPacing,
    explicit_limit,
)
from pumice.sim.faults import FlowControl

from .conftest import connect_to

NODES = "/api/v1/nodes"


def test_the_documented_defaults() -> None:
    # The README and --help promise these: nothing set means "decided by the server".
    assert KubeSettings().qps is None and KubeSettings().burst is None
    assert SchedulerSettings().qps is None and SchedulerSettings().burst is None
    assert (FALLBACK_QPS, FALLBACK_BURST) == (2000.0, 2000)  # Volcano's --kube-api-qps/burst
    undecided = RequestPacing()
    assert not undecided.decided
    assert (undecided.limiter.qps, undecided.limiter.burst) == (2000.0, 2000)


@pytest.mark.parametrize(
    ("qps", "burst", "expected"),
    [
        (None, None, None),  # the server decides
        (None, 300, None),  # a burst alone: still the server's call, with that burst
        (0.0, None, (0.0, 1)),  # 0: no limit
        (None, 0, (0.0, 1)),
        (50.0, 100, (50.0, 100)),  # kube-scheduler's conservative choice
        (50.0, None, (50.0, 50)),  # the burst follows the rate
        (0.5, None, (0.5, 1)),
        (10.0, 0, (0.0, 1)),
    ],
)
def test_explicit_settings_fix_the_limit(
    qps: float | None, burst: int | None, expected: tuple[float, int] | None
) -> None:
    assert explicit_limit(qps, burst) == expected


def test_an_explicit_limit_is_not_lifted_by_the_server() -> None:
    pacing = RequestPacing(50.0, 100)
    pacing.observe({APF_HEADERS[0]: "uid"}, "https://x")
    assert pacing.describe() == "50/s burst 100"


async def test_a_server_with_priority_and_fairness_gets_no_client_limit(make_sim: Any) -> None:
    sim = await make_sim()
    client = await connect_to(sim, qps=None)
    try:
        assert client.pacing.describe() == "2000/s burst 2000"  # until the server answers
        await client.request("GET", NODES)
        assert client.pacing.server_protects is True
        assert client.pacing.describe() == "none"
    finally:
        await client.close()


async def test_a_server_without_it_gets_volcanos_rate_said_once(
    make_sim: Any, caplog: pytest.LogCaptureFixture
) -> None:
    sim = await make_sim(priority_and_fairness=False)
    client = await connect_to(sim, qps=None)
    caplog.set_level(logging.INFO, logger="pumice.kube")
    try:
        for _ in range(3):
            await client.request("GET", NODES)
        assert client.pacing.server_protects is False
        assert client.pacing.describe() == "2000/s burst 2000"
        said = [r.getMessage() for r in caplog.records if "Priority and Fairness" in r.getMessage()]
        assert len(said) == 1, said
        assert "pacing requests at 2000/s (burst 2000)" in said[0]
    finally:
        await client.close()


async def test_the_sim_marks_every_answer_watches_and_errors_included(make_sim: Any) -> None:
    marked = await make_sim()
    plain = await make_sim(priority_and_fairness=False)
    async with aiohttp.ClientSession() as http:
        for path in (NODES, f"{NODES}?watch=true&timeoutSeconds=1", "/api/v1/nodes/missing"):
            async with http.get(marked.server.url + path) as resp:
                assert all(resp.headers.get(h) for h in APF_HEADERS), (path, resp.status)
            async with http.get(plain.server.url + path) as resp:
                assert not any(h in resp.headers for h in APF_HEADERS), (path, resp.status)


async def test_an_overloaded_sim_sheds_with_429_and_the_client_retries(make_sim: Any) -> None:
    sim = await make_sim()
    sim.server.flow.shed_above(20.0, burst=2)
    client = await connect_to(sim, qps=None)
    try:
        answers = await asyncio.gather(*(client.request("GET", NODES) for _ in range(6)))
        assert all(answer.get("kind") == "NodeList" for answer in answers)
        assert sim.server.flow.rejected >= 1
        assert client.stats.retries == sim.server.flow.rejected
        assert client.stats.errors.get(429) == sim.server.flow.rejected
    finally:
        await client.close()


def test_shedding_follows_the_rate() -> None:
    now = [0.0]
    flow = FlowControl(clock=lambda: now[0])
    assert flow.admit() is None  # no rate: never sheds
    flow.shed_above(10.0, burst=2)
    assert [flow.admit() is None for _ in range(3)] == [True, True, False]
    rejected = flow.admit()
    assert rejected is not None and rejected.code == 429
    assert rejected.headers == {"Retry-After": "1"}
    now[0] = 0.1  # one token back
    assert flow.admit() is None
    assert flow.admit() is not None
    with pytest.raises(ValueError, match="rate must be positive"):
        flow.shed_above(0)
