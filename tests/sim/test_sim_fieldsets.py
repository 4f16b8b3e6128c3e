"""Field sets as managedFields names them: paths for maps, keyed lists and sets, the FieldsV1
round trip, and conflicts printed as the real server prints them."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from pumice.sim.fieldsets import (
    MISSING,
    describe,
    differs,
    field_set,
    from_fields_v1,
    merge_applied,
    remove_at,
    to_fields_v1,
    value_at,
)
from pumice.sim.resources import PODS, QUEUES

POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "web",
        "namespace": "default",
        "uid": "u-1",
        "labels": {"app": "web"},
        "finalizers": ["example.com/keep"],
    },
    "spec": {
        "containers": [{"name": "main", "image": "busybox", "args": ["sleep", "1"]}],
        "tolerations": [{"key": "gpu", "operator": "Exists"}],
    },
    "status": {"phase": "Pending"},
}


def test_paths_of_a_pod() -> None:
    paths = field_set(PODS, POD)
    main = ("f:spec", "f:containers", 'k:{"name":"main"}')
    assert paths == {
        ("f:metadata", "f:labels", "f:app"),
        ("f:metadata", "f:finalizers", 'v:"example.com/keep"'),
        (*main, "."),
        (*main, "f:name"),
        (*main, "f:image"),
        (*main, "f:args"),  # a list without a merge key is atomic
        ("f:spec", "f:tolerations"),
    }
    assert describe((*main, "f:image")) == '.spec.containers[name="main"].image'
    assert describe(("f:metadata", "f:finalizers", 'v:"x"')) == '.metadata.finalizers[="x"]'


def test_custom_resources_have_atomic_lists_and_keep_status_out() -> None:
    queue = {"spec": {"weight": 1, "affinity": {"nodeGroups": ["a"]}}, "status": {"state": "Open"}}
    assert field_set(QUEUES, queue) == {
        ("f:spec", "f:weight"),
        ("f:spec", "f:affinity", "f:nodeGroups"),
    }


def test_values_removal_and_presence() -> None:
    main = ("f:spec", "f:containers", 'k:{"name":"main"}')
    assert value_at(POD, (*main, "f:image")) == "busybox"
    assert value_at(POD, ("f:spec", "f:containers", 'k:{"name":"other"}', ".")) is MISSING
    changed = merge_applied(
        POD, {"spec": {"containers": [{"name": "main", "image": "alpine"}]}}, PODS.merge_keys
    )
    assert not differs(POD, changed, (*main, "."))
    assert differs(POD, changed, (*main, "f:image"))
    assert changed["spec"]["containers"][0]["args"] == ["sleep", "1"]
    remove_at(changed, (*main, "."))
    assert changed["spec"]["containers"] == []
    assert POD["spec"]["containers"][0]["image"] == "busybox"  # the original is untouched


def test_merge_applies_sets_as_a_union() -> None:
    merged = merge_applied(
        POD, {"metadata": {"finalizers": ["b", "example.com/keep"]}}, PODS.merge_keys
    )
    assert merged["metadata"]["finalizers"] == ["example.com/keep", "b"]


_STEP = st.one_of(
    st.from_regex(r"f:[a-z]{1,6}", fullmatch=True),
    st.from_regex(r'k:\{"name":"[a-z]{1,4}"\}', fullmatch=True),
)


@given(st.sets(st.lists(_STEP, min_size=1, max_size=4).map(tuple), max_size=12))
def test_fields_v1_round_trips_leaf_sets(paths: set[tuple[str, ...]]) -> None:
    # only sets where no path is a prefix of another are leaf sets
    leaves = {p for p in paths if not any(q != p and q[: len(p)] == p for q in paths)}
    assert from_fields_v1(to_fields_v1(leaves)) == leaves
