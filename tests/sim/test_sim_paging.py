"""Paged lists with a field selector stay consistent while the table changes, whether the
server still remembers the list's first page or has to rebuild it from history."""

from __future__ import annotations

from typing import Any

from kubernetes_asyncio import client as k8s_client

from pumice.sim.listing import LISTINGS_KEPT
from sim.simkit import node, pod

PENDING = "spec.nodeName="


async def _rest(core: Any, token: str, rv: str) -> list[str]:
    """The names on every page after the one that gave ``token``, each at ``rv``."""
    names: list[str] = []
    while token:
        page = await core.list_namespaced_pod(
            "default", field_selector=PENDING, limit=3, _continue=token
        )
        assert page.metadata.resource_version == rv
        names += [p.metadata.name for p in page.items]
        token = page.metadata._continue
    return names


async def _change_the_table(core: Any) -> None:
    """Delete one pending pod, bind another, create a third."""
    await core.delete_namespaced_pod("p05", "default", grace_period_seconds=0)
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "p07"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "n0"},
    }
    resp = await core.create_namespaced_pod_binding(
        "p07", "default", binding, _preload_content=False
    )
    assert resp.status == 201
    await core.create_namespaced_pod("default", pod("p10"))


async def test_pages_show_the_first_pages_version_while_pods_change(sim: Any, api: Any) -> None:
    sim.create(node("n0"))
    for i in range(10):
        sim.create(pod(f"p{i:02d}"))
    sim.create(pod("bound", node_name="n0"))  # never matches the selector
    core = k8s_client.CoreV1Api(api)
    first = await core.list_namespaced_pod("default", field_selector=PENDING, limit=3)
    assert [p.metadata.name for p in first.items] == ["p00", "p01", "p02"]
    assert first.metadata.remaining_item_count is None  # not told with a field selector
    await _change_the_table(core)
    rest = await _rest(core, first.metadata._continue, first.metadata.resource_version)
    assert rest == [f"p{i:02d}" for i in range(3, 10)]
    now = await core.list_namespaced_pod("default", field_selector=PENDING)
    assert [p.metadata.name for p in now.items] == [
        "p00", "p01", "p02", "p03", "p04", "p06", "p08", "p09", "p10"
    ]  # fmt: skip


async def test_a_continue_token_the_server_forgot_is_rebuilt_from_history(
    sim: Any, api: Any
) -> None:
    sim.create(node("n0"))
    sim.create(node("n1"))
    for i in range(10):
        sim.create(pod(f"p{i:02d}"))
    core = k8s_client.CoreV1Api(api)
    first = await core.list_namespaced_pod("default", field_selector=PENDING, limit=3)
    await _change_the_table(core)
    for i in range(LISTINGS_KEPT + 1):  # other paged lists push the first one out
        other = await core.list_node(label_selector=f"other!=x{i}", limit=1)
        assert other.metadata._continue
    rest = await _rest(core, first.metadata._continue, first.metadata.resource_version)
    assert rest == [f"p{i:02d}" for i in range(3, 10)]
