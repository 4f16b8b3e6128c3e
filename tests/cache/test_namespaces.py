"""Namespaces in the cache and in ``pumice simulate``: name -> labels for namespaceSelector."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pumice.cache import ClusterCache
from pumice.commands.cluster_input import CACHE_KINDS, api_defaults, read_cluster
from pumice.commands.simulate_cluster import SimulatedCluster
from pumice.model import ClusterSnapshot
from pumice.model.snapshot import namespace_labels
from support.manifests import node, pod, write_yaml

NAME = "kubernetes.io/metadata.name"


def namespace(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def test_the_cache_keeps_each_namespaces_labels_with_its_name_label() -> None:
    cache = ClusterCache("pumice")
    cache.namespaces.on_add(namespace("team-a", team="a", **{NAME: "team-a"}))
    cache.namespaces.on_add(namespace("team-b"))  # as read from a file: no name label
    generation = cache.generation
    snap = cache.snapshot()
    assert snap.namespaces == {
        "team-a": {"team": "a", NAME: "team-a"},
        "team-b": {NAME: "team-b"},
    }
    cache.namespaces.on_update(namespace("team-a"), namespace("team-a", team="x"))
    cache.namespaces.on_delete(namespace("team-b"))
    assert cache.generation > generation  # a session over the old state may decide otherwise
    assert cache.snapshot().namespaces == {"team-a": {"team": "x", NAME: "team-a"}}
    # the session's snapshot taken before is unchanged by later events
    assert snap.namespaces["team-a"] == {"team": "a", NAME: "team-a"}
    assert "team-b" in snap.namespaces


def test_a_namespace_named_but_unknown_exists_with_only_its_name_label() -> None:
    snap = ClusterSnapshot()
    snap.namespaces["known"] = {"env": "prod", NAME: "known"}
    assert snap.namespace_labels("known") == {"env": "prod", NAME: "known"}
    assert snap.namespace_labels("ghost") == {NAME: "ghost"}
    assert namespace_labels({}, "ghost") == {NAME: "ghost"}
    assert "ghost" not in snap.namespaces  # asking does not create it


def test_simulate_reads_namespace_manifests_into_every_cycles_snapshot(tmp_path: Path) -> None:
    path = write_yaml(
        tmp_path / "c.yaml",
        [namespace("ml", tier="gold"), node("n1"), pod("p", namespace="ml")],
    )
    given = read_cluster([str(path)], lambda obj: obj.get("kind") in CACHE_KINDS)
    assert given.notes == []  # Namespaces are read, not skipped
    state = SimulatedCluster("pumice")
    state.add(api_defaults(obj) for obj in given.objects)
    snap = state.snapshot()
    assert snap.namespaces == {"ml": {"tier": "gold", NAME: "ml"}}
    assert snap.namespace_labels("default") == {NAME: "default"}
    again = state.snapshot()
    assert again.namespaces == snap.namespaces
