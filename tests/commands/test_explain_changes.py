"""``pumice explain``'s verifying runs share the objects a change does not touch.

A verifying run is given a new list in which only the objects the change edits are copies
(``explain_changes.apply_change``): copying all of them cost a tenth of a verifying run on the
5,000-node bench cluster. That is sound only because a run never changes the objects it is
given once the API server's defaults are in them (the explaining run fills those in first):
these tests hold both halves — the change leaves its input as it was, and a run (binds, gang
and queue statuses, a volume provisioned before a bind) leaves its objects as they were.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from pumice.commands.cluster_input import api_defaults
from pumice.commands.config_commands import load_checked
from pumice.commands.explain_changes import apply_change
from pumice.commands.explain_core import run_cluster
from pumice.commands.explain_target import Target
from support.manifests import gang_pods, node, pod, podgroup, priority_class, queue
from support.volume_cases import claim, pvc, storage_class, vpod

Obj = dict[str, Any]


def cluster() -> list[Obj]:
    limited = queue("q1")
    limited["spec"]["capability"] = {"cpu": "6", "memory": "16Gi"}
    taint = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
    return [
        priority_class("low", 10),
        node("n1", "4"),
        node("n2", "4"),
        node("tainted", "4", taints=[taint]),
        limited,
        storage_class("fast", provisioner="example.com/csi"),
        claim("data", "fast", bound=False),
        pod("low-1", "2", node_name="n1", priority_class="low"),
        vpod("with-volume", [pvc("data", "data")]),
        podgroup("small", 2, queue="q1"),
        *gang_pods("small", 2, "1"),
        podgroup("big", 2, queue="q1"),
        *gang_pods("big", 2, "3"),
        pod("sel", "1", node_selector={"disk": "ssd"}),
    ]


CHANGES: list[tuple[Obj, set[str]]] = [
    ({"kind": "request", "pod": "default/big-0", "resource": "cpu", "to": "2"}, {"big-0", "big-1"}),
    (
        {"kind": "toleration", "key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
        {"big-0", "big-1"},
    ),
    ({"kind": "node-label", "nodes": ["n2"], "label": "disk=ssd"}, {"n2"}),
    ({"kind": "queue-capability", "queue": "q1", "resource": "cpu", "to": "9"}, {"q1"}),
    ({"kind": "evict", "pods": ["default/low-1"]}, set()),
    ({"kind": "add-node", "like": "n1", "count": 2}, {"n1-1", "n1-2"}),
]


@pytest.mark.parametrize(("change", "touched"), CHANGES, ids=[c["kind"] for c, _ in CHANGES])
def test_a_change_copies_only_what_it_touches(change: Obj, touched: set[str]) -> None:
    objects = cluster()
    before = orjson.dumps(objects)
    changed = apply_change(objects, change, Target("PodGroup", "default", "big"))
    assert orjson.dumps(objects) == before, "the input is left as it was"
    assert orjson.dumps(changed) != before
    inputs = {id(obj) for obj in objects}
    copied = {obj["metadata"]["name"] for obj in changed if id(obj) not in inputs}
    assert copied == touched
    if change["kind"] == "evict":
        assert len(changed) == len(objects) - 1
        assert all(id(obj) in inputs for obj in changed)


def test_a_run_leaves_the_objects_it_is_given_as_they_were() -> None:
    config, host = load_checked(None)
    objects = [api_defaults(obj) for obj in cluster()]
    before = orjson.dumps(objects)
    explained = run_cluster(objects, Target("PodGroup", "default", "big"), config, host, "pumice")
    assert explained.status == "pending" and explained.failed is not None
    assert orjson.dumps(objects) == before
    verifying = run_cluster(
        objects,
        Target("Pod", "default", "with-volume"),
        config,
        host,
        "pumice",
        detail=False,
        until_placed=True,
    )
    assert verifying.status == "placed"  # its claim provisioned on the node, then bound
    assert orjson.dumps(objects) == before
