"""Canonical scheduling terms, and the attributes a task computes once per pod object:
``terms``, ``nonzero_request`` and ``shape``."""

from __future__ import annotations

from typing import Any

import pytest

from pumice import NO_TERMS, NON_ZERO_DEFAULTS, PodTerms, Resource, TaskInfo, TaskShape, pod_terms
from pumice.model.terms import pod_host_ports
from support.nodes import container, expr, pod, term, toleration

MiB = 2**20


def test_a_pod_without_constraints_has_no_terms() -> None:
    assert pod_terms(pod()) is NO_TERMS
    assert pod_terms(None) is NO_TERMS
    assert pod_terms({}) is NO_TERMS
    assert PodTerms(None, (), (), frozenset()) == NO_TERMS


def test_forms_do_not_depend_on_the_order_things_are_written_in() -> None:
    a = pod(
        "a",
        node_selector={"zone": "a", "disk": "ssd"},
        required=[term(expr("gen", "In", "2", "1"), expr("arch", "Exists")), term()],
        preferred=[(5, term(expr("gen", "In", "3"))), (2, term(expr("zone", "NotIn", "c")))],
        tolerations=[toleration("b", "Exists"), toleration("a", value="x", effect="NoSchedule")],
    )
    b = pod(
        "b",
        node_selector={"disk": "ssd", "zone": "a"},
        required=[term(), term(expr("arch", "Exists"), expr("gen", "In", "1", "2"))],
        preferred=[(2, term(expr("zone", "NotIn", "c"))), (5, term(expr("gen", "In", "3")))],
        tolerations=[toleration("a", "Equal", "x", "NoSchedule"), toleration("b", "Exists")],
    )
    assert pod_terms(a) == pod_terms(b)
    assert hash(pod_terms(a)) == hash(pod_terms(b))
    terms = pod_terms(a)
    assert terms.selector == (
        (("disk", "ssd"), ("zone", "a")),
        (((), ()), ((("arch", "Exists", ()), ("gen", "In", ("1", "2"))), ())),
    )
    assert terms.preferred == (
        (2, ((("zone", "NotIn", ("c",)),), ())),
        (5, ((("gen", "In", ("3",)),), ())),
    )
    # "" operator reads as Equal; Exists drops any value; duplicates collapse
    assert terms.tolerations == (("a", "Equal", "x", "NoSchedule"), ("b", "Exists", "", ""))


def test_tolerations_are_canonical() -> None:
    terms = pod_terms(
        pod(
            tolerations=[
                {"key": "k", "operator": "Exists", "value": "ignored"},
                {"key": "k", "operator": "Exists"},
                {"key": "v", "value": "1"},
            ]
        )
    )
    assert terms.tolerations == (("k", "Exists", "", ""), ("v", "Equal", "1", ""))


def test_zero_weights_and_empty_preferred_terms_are_dropped() -> None:
    terms = pod_terms(pod(preferred=[(0, term(expr("a", "Exists"))), (3, term())]))
    assert terms.preferred == ()
    assert terms == NO_TERMS


def test_host_ports_come_from_app_containers_and_sidecars_only() -> None:
    sidecar = {**container(host_ports=[9000], name="proxy"), "restartPolicy": "Always"}
    plain_init = container(host_ports=[9100], name="setup")
    p = pod(
        containers=[
            container(host_ports=[8080, {"containerPort": 53, "hostPort": 53, "protocol": "UDP"}]),
            container(host_ports=[{"containerPort": 1, "hostPort": 0}], name="zero"),
            container(host_ports=[{"containerPort": 1, "hostPort": 81, "hostIP": "10.0.0.1"}]),
        ],
        init_containers=[sidecar, plain_init],
    )
    expected = {
        ("0.0.0.0", "TCP", 8080),
        ("0.0.0.0", "UDP", 53),
        ("10.0.0.1", "TCP", 81),
        ("0.0.0.0", "TCP", 9000),
    }
    assert pod_host_ports(p) == expected
    assert pod_terms(p).host_ports == expected
    assert pod_host_ports(None) == frozenset()


# -- the attributes of a task -------------------------------------------------------------------


def test_terms_are_computed_once_per_pod_object() -> None:
    task = TaskInfo.from_pod(pod(tolerations=[toleration("a", "Exists")]))
    first = task.terms
    assert first.tolerations == (("a", "Exists", "", ""),)
    assert task.terms is first  # cached
    task.pod = pod(node_selector={"zone": "b"})  # a new pod object: computed again
    assert task.terms.selector == ((("zone", "b"),), None)
    assert task.terms.tolerations == ()


def test_a_task_without_a_pod_has_no_terms() -> None:
    assert TaskInfo(uid="t", name="t").terms is NO_TERMS


def test_nonzero_request_counts_the_defaults_per_container() -> None:
    p = pod(containers=[container("500m"), container(memory="1Gi", name="b"), container(name="c")])
    task = TaskInfo.from_pod(p)
    assert task.resreq == Resource({"cpu": 500, "memory": 1024 * MiB})
    cpu, memory = NON_ZERO_DEFAULTS["cpu"], NON_ZERO_DEFAULTS["memory"]
    assert task.nonzero_request == Resource(
        {"cpu": 500 + 2 * cpu, "memory": 1024 * MiB + 2 * memory}
    )
    assert task.nonzero_request is task.nonzero_request


def test_nonzero_request_of_a_task_without_a_pod_fills_in_what_is_missing() -> None:
    task = TaskInfo(uid="t", name="t", resreq=Resource({"cpu": 300, "nvidia.com/gpu": 1}))
    assert task.nonzero_request == Resource(
        {"cpu": 300, "memory": NON_ZERO_DEFAULTS["memory"], "nvidia.com/gpu": 1}
    )
    task.resreq = Resource({"memory": 5 * MiB})  # a new request: computed again
    assert task.nonzero_request == Resource({"cpu": NON_ZERO_DEFAULTS["cpu"], "memory": 5 * MiB})


def test_nonzero_request_falls_back_on_the_request_for_a_pod_that_does_not_parse() -> None:
    task = TaskInfo(
        uid="t",
        name="t",
        resreq=Resource({"cpu": 200}),
        pod=pod(containers=[container("lots")]),
    )
    assert task.nonzero_request == Resource({"cpu": 200, "memory": NON_ZERO_DEFAULTS["memory"]})


def gang_pod(name: str, **changes: Any) -> dict[str, Any]:
    """One pod of a gang: requests, a selector and a toleration; ``changes`` edit the spec."""
    p = pod(
        name,
        containers=[container("500m", "1Gi", name="main"), container("100m", "64Mi", name="log")],
        node_selector={"zone": "a"},
        tolerations=[toleration("dedicated", value="batch", effect="NoSchedule")],
    )
    p["spec"].update(changes)
    p["metadata"]["labels"] = {"index": name}
    return p


def test_pods_of_a_gang_share_a_shape() -> None:
    a, b = TaskInfo.from_pod(gang_pod("w-0")), TaskInfo.from_pod(gang_pod("w-1"))
    assert a.shape == b.shape
    assert hash(a.shape) == hash(b.shape)
    assert len({a.shape, b.shape}) == 1
    assert a.shape is b.shape  # shared
    assert a.shape.request == (("cpu", 600), ("memory", 1024 * MiB + 64 * MiB))
    assert a.shape is a.shape
    # how the request is split between containers does not matter when each names cpu and memory
    merged = TaskInfo.from_pod(gang_pod("w-2", containers=[container("600m", "1088Mi")]))
    assert merged.shape == a.shape


@pytest.mark.parametrize(
    "changes",
    [
        {"containers": [container("600m", "1088Mi"), container(name="idle")]},
        {"nodeSelector": {"zone": "b"}},
        {"tolerations": []},
        {"containers": [container("500m", "1Gi", host_ports=[80]), container("100m", "64Mi")]},
    ],
)
def test_a_different_request_or_term_is_a_different_shape(changes: dict[str, Any]) -> None:
    base = TaskInfo.from_pod(gang_pod("w-0"))
    other = TaskInfo.from_pod(gang_pod("w-1", **changes))
    assert other.shape != base.shape


def test_same_request_but_another_non_zero_request_is_another_shape() -> None:
    one = TaskInfo.from_pod(gang_pod("a", containers=[container("600m", "1088Mi")]))
    two = TaskInfo.from_pod(
        gang_pod("b", containers=[container("600m", "1088Mi"), container(name="idle")])
    )
    assert one.resreq == two.resreq
    assert one.nonzero_request != two.nonzero_request
    assert one.shape != two.shape


def test_shape_amounts_are_whole_numbers_where_they_can_be() -> None:
    task = TaskInfo(uid="t", name="t", resreq=Resource({"cpu": 250, "nvidia.com/gpu": 0.5}))
    shape = TaskShape(task.resreq, task.nonzero_request, task.terms)
    assert shape.request == (("cpu", 250), ("nvidia.com/gpu", 0.5))
    assert type(shape.request[0][1]) is int
    assert shape == task.shape
    assert shape != "not a shape"


def test_remembered_terms_are_never_given_to_a_pod_they_are_wrong_for() -> None:
    # 1 == True, but their canonical strings differ: non-string values are never remembered
    assert pod_terms(pod(node_selector={"x": 1})).selector == ((("x", "1"),), None)  # type: ignore[dict-item]
    assert pod_terms(pod(node_selector={"x": True})).selector == ((("x", "True"),), None)  # type: ignore[dict-item]
    assert pod_terms(pod(node_selector={"x": "1"})).selector == ((("x", "1"),), None)
    seconds = {"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}
    first = pod_terms(pod(tolerations=[seconds]))
    assert pod_terms(pod(tolerations=[{**seconds, "tolerationSeconds": 60}])) is first
    assert first.tolerations == (("k", "Exists", "", "NoExecute"),)
    odd = {"key": "k", "operator": "Exists", "tolerationSeconds": [1]}  # unhashable: parsed
    assert pod_terms(pod(tolerations=[odd])).tolerations == (("k", "Exists", "", ""),)
    # equal raw terms give the very same object
    a = pod_terms(pod(node_selector={"zone": "a"}, tolerations=[toleration("t", "Exists")]))
    b = pod_terms(pod(node_selector={"zone": "a"}, tolerations=[toleration("t", "Exists")]))
    assert a is b
