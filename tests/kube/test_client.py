"""The client: configuration loading, typed errors, 429 retries, QPS limit, trust_env off."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import yaml
from aiohttp import web
from kubernetes_asyncio.client.exceptions import ApiException
from sim.simkit import node, pod

from kube.conftest import connect_to
from pumice.kube import (
    NODES,
    PODGROUPS,
    PODS,
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    Kind,
    Kube,
    KubeConfigError,
    KubeError,
    KubeSettings,
    NotFound,
    ServerError,
    TooManyRequests,
    Unreachable,
    connect,
    served,
)
from pumice.kube.ratelimit import Backoff, TokenBucket


async def test_requests_return_plain_dicts(sim: Any, kube: Kube) -> None:
    sim.create(node("n1"))
    nodes = await kube.request("GET", NODES.path())
    assert type(nodes) is dict
    assert [n["metadata"]["name"] for n in nodes["items"]] == ["n1"]
    created = await kube.request("POST", PODS.path("default"), body=pod("p1"))
    assert created["metadata"]["uid"]
    assert kube.server == sim.url


async def test_each_error_status_has_its_type(sim: Any, kube: Kube) -> None:
    with pytest.raises(NotFound) as missing:
        await kube.request("GET", PODS.path("default", "nope"))
    assert missing.value.status == 404
    assert "GET /api/v1/namespaces/default/pods/nope: 404 NotFound" in str(missing.value)
    await kube.request("POST", PODS.path("default"), body=pod("p1"))
    with pytest.raises(Conflict):
        await kube.request("POST", PODS.path("default"), body=pod("p1"))
    with pytest.raises(Invalid):
        await kube.request("POST", PODS.path("default"), body={"kind": "Pod", "metadata": {}})
    for code, error in [(403, Forbidden), (410, Gone), (500, ServerError), (503, ServerError)]:
        sim.faults.fail(code, verb="list", resource="nodes", count=1)
        with pytest.raises(error) as caught:
            await kube.request("GET", NODES.path())
        assert caught.value.status == code
        assert "\n" not in str(caught.value)
    # every typed error is a KubeError, never kubernetes_asyncio's ApiException
    assert issubclass(ServerError, KubeError)
    assert not issubclass(ServerError, ApiException)


async def test_unreachable_server_is_a_typed_error(make_sim: Any) -> None:
    sim = await make_sim()
    client = await connect_to(sim, request_timeout=2.0)
    try:
        await sim.server.stop()
        with pytest.raises(Unreachable) as caught:
            await client.request("GET", NODES.path())
        assert caught.value.status is None
        assert "GET /api/v1/nodes: no answer" in str(caught.value)
    finally:
        await client.close()


async def test_429_is_retried_after_retry_after(sim: Any) -> None:
    client = await connect_to(sim, max_retries=3)
    try:
        sim.faults.fail(429, verb="list", resource="nodes", count=2, retry_after=0)
        await client.request("GET", NODES.path())
        assert client.stats.retries == 2
        sim.faults.fail(429, verb="list", resource="nodes", count=10, retry_after=0)
        with pytest.raises(TooManyRequests) as caught:
            await client.request("GET", NODES.path())
        assert caught.value.retry_after == 0.0
        assert client.stats.retries == 5  # 2 before + 3 more, then it gave up
        with pytest.raises(TooManyRequests):
            await client.request("GET", NODES.path(), max_retries=0)
        assert client.stats.retries == 5
    finally:
        await client.close()


async def test_qps_limit_bounds_the_requests_that_reach_the_server(sim: Any) -> None:
    # burst 5, then one request every 1000 s: of 12 writes only the burst gets through
    client = await connect_to(sim, qps=0.001, burst=5)
    try:
        creates = [
            asyncio.create_task(client.request("POST", PODS.path("default"), body=pod(f"p{i}")))
            for i in range(12)
        ]
        done, pending = await asyncio.wait(creates, timeout=1.0)
        assert len(done) == 5
        assert len(pending) == 7
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        assert len([w for w in sim.writes if w.resource == "pods"]) == 5
        assert client.limiter.waits == 7
    finally:
        await client.close()


def test_token_bucket_arithmetic() -> None:
    now = [0.0]
    bucket = TokenBucket(qps=10.0, burst=3, clock=lambda: now[0])
    assert [bucket.reserve() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.reserve() == pytest.approx(0.1)  # the 4th waits one interval
    assert bucket.reserve() == pytest.approx(0.2)
    now[0] = 10.0  # refilled, but never above the burst
    assert [bucket.reserve() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.reserve() > 0
    assert TokenBucket(qps=0, burst=1).reserve() == 0.0  # qps 0: unlimited


def test_backoff_doubles_to_a_cap_with_jitter() -> None:
    backoff = Backoff(initial=1.0, cap=8.0)
    delays = [backoff.next() for _ in range(8)]
    for delay, base in zip(delays, [1, 2, 4, 8, 8, 8, 8, 8], strict=True):
        assert base / 2 <= delay <= base
    backoff.reset()
    assert backoff.next() <= 1.0
    assert len(set(delays[3:])) > 1  # jittered, not lock-step


async def test_trust_env_is_off(sim: Any, kube: Kube, monkeypatch: pytest.MonkeyPatch) -> None:
    # With trust_env on, aiohttp would send this request to the (dead) proxy.
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:9")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    assert kube.session.trust_env is False
    client = await connect_to(sim)
    try:
        assert (await client.request("GET", NODES.path()))["kind"] == "NodeList"
    finally:
        await client.close()


async def test_kubeconfig_from_the_environment(sim: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", str(sim.kubeconfig))
    async with await connect(KubeSettings(user_agent="pumice-test/1")) as client:
        await client.request("POST", PODS.path("default"), body=pod("p1"))
        assert [w.user_agent for w in sim.writes] == ["pumice-test/1"]
    assert client.session.closed


async def test_bad_kubeconfig_is_a_config_error(tmp_path: Any) -> None:
    missing = tmp_path / "missing.yaml"
    with pytest.raises(KubeConfigError) as caught:
        await connect(KubeSettings(kubeconfig=str(missing)))
    assert str(missing) in str(caught.value)
    garbage = tmp_path / "garbage.yaml"
    garbage.write_text("clusters: 3\n")
    with pytest.raises(KubeConfigError):
        await connect(KubeSettings(kubeconfig=str(garbage)))
    with pytest.raises(KubeConfigError, match="burst must not be negative, not -1"):
        await connect(KubeSettings(kubeconfig=str(garbage), burst=-1))


async def test_discovery_tells_which_kinds_are_served(kube: Kube) -> None:
    assert await served(kube, PODS)
    assert await served(kube, PODGROUPS)
    assert not await served(kube, Kind("example.com", "v1", "widgets", True, "Widget"))
    assert not await served(kube, Kind("", "v1", "widgets", True, "Widget"))


async def test_read_only_client_sends_no_writes(sim: Any) -> None:
    client = await connect_to(sim, read_only=True)
    try:
        assert (await client.request("GET", NODES.path()))["kind"] == "NodeList"
        for method in ("POST", "PUT", "PATCH", "DELETE"):
            with pytest.raises(Forbidden, match="read-only"):
                await client.request(method, PODS.path("default"), body=pod("p1"))
        assert len(sim.writes) == 0
    finally:
        await client.close()


async def test_configuration_order_without_kubeconfig(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(KubeConfigError, match="no Kubernetes configuration"):
        await connect(KubeSettings())
    # in a pod (service host set) the service account is tried before ~/.kube/config
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    with pytest.raises(KubeConfigError, match="in-cluster"):
        await connect(KubeSettings())


async def _header_echo(seen: list[str | None]) -> tuple[Any, str]:
    """A loopback server that records each request's Authorization header."""

    async def handle(request: web.Request) -> web.Response:
        seen.append(request.headers.get("Authorization"))
        return web.json_response({"kind": "NodeList", "items": []})

    app = web.Application()
    app.router.add_get("/api/v1/nodes", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    return runner, f"http://{host}:{port}"


def _kubeconfig(path: Any, server: str, user: dict[str, Any]) -> str:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": server}}],
                "users": [{"name": "u", "user": user}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    return str(path)


async def test_credentials_are_sent(tmp_path: Any) -> None:
    seen: list[str | None] = []
    runner, url = await _header_echo(seen)
    credential = (
        '{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential",'
        '"status":{"token":"from-exec"}}'
    )
    exec_user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": "/bin/sh",
            "args": ["-c", f"echo '{credential}'"],
        }
    }
    try:
        for user, expected in [
            ({"token": "static-token"}, "Bearer static-token"),
            (exec_user, "Bearer from-exec"),
        ]:
            path = _kubeconfig(tmp_path / f"kc-{len(seen)}", url, user)
            client = await connect(KubeSettings(kubeconfig=path))
            try:
                await client.request("GET", NODES.path())
            finally:
                await client.close()
            assert seen[-1] == expected
    finally:
        await runner.cleanup()


async def test_a_silent_watch_hits_the_read_timeout(tmp_path: Any) -> None:
    """A half-dead connection (headers sent, then nothing) ends in Unreachable, not a hang."""
    release = asyncio.Event()

    async def silent(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse()
        await resp.prepare(request)
        await release.wait()
        return resp

    app = web.Application()
    app.router.add_get("/api/v1/nodes", silent)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    host, port = runner.addresses[0][:2]
    path = _kubeconfig(tmp_path / "kc", f"http://{host}:{port}", {"token": "t"})
    client = await connect(KubeSettings(kubeconfig=path))
    try:
        with pytest.raises(Unreachable, match=r"WATCH /api/v1/nodes: stream .* broke"):
            async for _ in client.stream(NODES.path(), {"timeoutSeconds": 300}, read_timeout=0.2):
                pass
    finally:
        release.set()
        await client.close()
        await runner.cleanup()
