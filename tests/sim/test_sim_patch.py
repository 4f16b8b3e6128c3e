"""The three patch formats, edge by edge: JSON merge patch (RFC 7386), strategic merge patch
(merge keys, primitive sets, ``$patch``/``$deleteFromPrimitiveList`` directives) and JSON patch
(RFC 6902: every op, pointer escapes, indices, errors, and a ``test`` that tells ``1`` from
``true``); then the dispatch on Content-Type, and kubectl's ``--type json`` end to end."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pumice.sim.errors import ApiError
from pumice.sim.patch import (
    JSON_PATCH,
    MERGE,
    STRATEGIC,
    apply_patch,
    json_patch,
    merge_patch,
    same_json,
    strategic_merge_patch,
)
from pumice.sim.resources import PODS
from sim.simkit import pod

KEYS = PODS.merge_keys
assert KEYS is not None


def refused(code: int, call: Any, *args: Any) -> str:
    with pytest.raises(ApiError) as caught:
        call(*args)
    assert caught.value.code == code, caught.value.message
    return caught.value.message


# -- JSON merge patch --------------------------------------------------------------------


def test_merge_patch_merges_maps_deletes_nulls_and_replaces_the_rest() -> None:
    target = {"a": {"b": 1, "c": 2}, "list": [1, 2], "gone": True, "keep": "x"}
    original = copy.deepcopy(target)
    patched = merge_patch(target, {"a": {"b": 9, "d": None}, "list": [3], "gone": None})
    assert patched == {"a": {"b": 9, "c": 2}, "list": [3], "keep": "x"}
    assert target == original  # never mutated
    assert merge_patch({"a": 1}, [1, 2]) == [1, 2]  # a non-object patch replaces the whole
    assert merge_patch("scalar", {"a": {"b": None, "c": 1}}) == {"a": {"c": 1}}
    assert merge_patch({"a": "text"}, {"a": {"b": 1}}) == {"a": {"b": 1}}


# -- strategic merge patch ---------------------------------------------------------------


def containers(*items: dict[str, Any]) -> dict[str, Any]:
    return {"spec": {"containers": list(items)}}


def test_strategic_lists_merge_by_their_key() -> None:
    target = containers({"name": "a", "image": "x"}, {"name": "b", "image": "y"})
    patched = strategic_merge_patch(
        target, containers({"name": "b", "image": "z"}, {"name": "c", "image": "w"}), KEYS
    )
    assert patched["spec"]["containers"] == [
        {"name": "a", "image": "x"},
        {"name": "b", "image": "z"},
        {"name": "c", "image": "w"},
    ]
    # nested lists inside items merge by their own key
    target = containers({"name": "a", "env": [{"name": "A", "value": "1"}]})
    patched = strategic_merge_patch(target, containers({"name": "a", "env": [{"name": "B"}]}), KEYS)
    assert patched["spec"]["containers"][0]["env"] == [{"name": "A", "value": "1"}, {"name": "B"}]


def test_strategic_list_directives() -> None:
    target = containers({"name": "a"}, {"name": "b"})
    deleted = strategic_merge_patch(target, containers({"name": "a", "$patch": "delete"}), KEYS)
    assert deleted["spec"]["containers"] == [{"name": "b"}]
    absent = strategic_merge_patch(target, containers({"name": "z", "$patch": "delete"}), KEYS)
    assert absent["spec"]["containers"] == target["spec"]["containers"]
    replaced = strategic_merge_patch(target, containers({"name": "c"}, {"$patch": "replace"}), KEYS)
    assert replaced["spec"]["containers"] == [{"name": "c"}]
    message = refused(400, strategic_merge_patch, target, containers({"image": "x"}), KEYS)
    assert "does not contain declared merge key: name" in message


def test_strategic_primitive_sets_and_deletions() -> None:
    target = {"metadata": {"finalizers": ["a", "b"]}}
    added = strategic_merge_patch(target, {"metadata": {"finalizers": ["b", "c"]}}, KEYS)
    assert added["metadata"]["finalizers"] == ["a", "b", "c"]
    removed = strategic_merge_patch(
        target, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}, KEYS
    )
    assert removed["metadata"]["finalizers"] == ["b"]
    ordered = strategic_merge_patch(
        target,
        {"metadata": {"$setElementOrder/finalizers": ["b", "a"], "labels": {"x": "1"}}},
        KEYS,
    )
    assert ordered["metadata"] == {"finalizers": ["a", "b"], "labels": {"x": "1"}}


def test_strategic_map_directives_and_unkeyed_lists() -> None:
    target = {"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"args": ["x", "y"]}}
    replaced = strategic_merge_patch(
        target, {"metadata": {"labels": {"$patch": "replace", "c": "3"}}}, KEYS
    )
    assert replaced["metadata"]["labels"] == {"c": "3"}
    dropped = strategic_merge_patch(target, {"metadata": {"labels": {"$patch": "delete"}}}, KEYS)
    assert "labels" not in dropped["metadata"]
    assert strategic_merge_patch(target, {"spec": {"args": ["z"]}}, KEYS)["spec"]["args"] == ["z"]
    nulled = strategic_merge_patch(target, {"metadata": {"labels": None}, "$retainKeys": []}, KEYS)
    assert nulled["metadata"] == {}
    assert strategic_merge_patch(target, {"$patch": "delete"}, KEYS) is None


# -- JSON patch --------------------------------------------------------------------------


def test_json_patch_operations() -> None:
    doc = {"a": {"b": [1, 2, 3]}, "c": "x", "~/": 0}
    ops = [
        {"op": "add", "path": "/a/b/1", "value": 9},
        {"op": "add", "path": "/a/b/-", "value": 4},
        {"op": "remove", "path": "/a/b/0"},
        {"op": "replace", "path": "/c", "value": "y"},
        {"op": "copy", "from": "/a/b", "path": "/copied"},
        {"op": "move", "from": "/c", "path": "/moved"},
        {"op": "replace", "path": "/~0~1", "value": 1},
        {"op": "test", "path": "/a/b", "value": [9, 2, 3, 4]},
        {"op": "test", "path": "/moved", "value": "y"},
    ]
    assert json_patch(doc, ops) == {
        "a": {"b": [9, 2, 3, 4]},
        "copied": [9, 2, 3, 4],
        "moved": "y",
        "~/": 1,
    }
    assert doc["a"]["b"] == [1, 2, 3]  # never mutated
    assert json_patch(doc, [{"op": "replace", "path": "", "value": [1]}]) == [1]
    assert json_patch(doc, [{"op": "add", "path": "", "value": {"z": 1}}]) == {"z": 1}


def test_json_patch_test_is_type_strict() -> None:
    doc = {"flag": True, "one": 1, "float": 1.0, "nested": {"x": [True, 1]}, "none": None}
    assert json_patch(doc, [{"op": "test", "path": "/one", "value": 1.0}]) == doc
    assert json_patch(doc, [{"op": "test", "path": "/none", "value": None}]) == doc
    for path, value in [
        ("/flag", 1),
        ("/one", True),
        ("/float", True),
        ("/nested", {"x": [1, 1]}),
        ("/nested", {"x": [True, 1], "y": 0}),
        ("/nested/x", [True]),
        ("/one", "1"),
    ]:
        message = refused(422, json_patch, doc, [{"op": "test", "path": path, "value": value}])
        assert f"testing value {path} failed" in message
    assert same_json({"a": [1, {"b": False}]}, {"a": [1.0, {"b": False}]})
    assert not same_json([1], {"0": 1})


@pytest.mark.parametrize(
    ("ops", "code", "words"),
    [
        ({"op": "add"}, 400, "cannot unmarshal object"),
        ([{"op": "add", "value": 1}], 400, "invalid JSON patch operation"),
        ([{"op": "frobnicate", "path": "/a"}], 400, "unexpected kind of JSON patch operation"),
        ([{"op": "add", "path": "a", "value": 1}], 422, "JSON pointer must start with '/'"),
        ([{"op": "add", "path": "/missing/x", "value": 1}], 422, "missing path: missing"),
        ([{"op": "remove", "path": "/nope"}], 422, "cannot remove missing /nope"),
        ([{"op": "replace", "path": "/nope", "value": 1}], 422, "missing value at /nope"),
        ([{"op": "add", "path": "/list/5", "value": 1}], 422, "array index out of range: 5"),
        ([{"op": "add", "path": "/list/x", "value": 1}], 422, "invalid array index: x"),
        ([{"op": "remove", "path": "/list/-"}], 422, "invalid array index: -"),
        ([{"op": "remove", "path": "/list/2"}], 422, "array index out of range: 2"),
        ([{"op": "add", "path": "/s/x", "value": 1}], 422, "cannot add to a scalar"),
        ([{"op": "remove", "path": "/s/x"}], 422, "cannot remove from a scalar"),
        ([{"op": "test", "path": "/s/x", "value": 1}], 422, "cannot read a scalar"),
        ([{"op": "add", "path": "/s/x/y", "value": 1}], 422, "cannot traverse into x"),
        ([{"op": "move", "from": "/nope", "path": "/a"}], 422, "missing value at /nope"),
    ],
)
def test_json_patch_errors(ops: Any, code: int, words: str) -> None:
    doc = {"list": [1, 2], "s": "text"}
    assert words in refused(code, json_patch, doc, ops)


def test_json_patch_traverses_lists() -> None:
    doc = {"items": [{"n": 1}, {"n": 2}]}
    patched = json_patch(doc, [{"op": "replace", "path": "/items/1/n", "value": 3}])
    assert patched == {"items": [{"n": 1}, {"n": 3}]}


# -- dispatch ----------------------------------------------------------------------------


def test_apply_patch_dispatches_on_the_content_type() -> None:
    base = {"metadata": {"finalizers": ["a"]}}
    patch = {"metadata": {"finalizers": ["b"]}}
    smp = apply_patch(base, STRATEGIC + "; charset=utf-8", patch, KEYS)
    assert smp["metadata"]["finalizers"] == ["a", "b"]
    assert apply_patch(base, MERGE.upper(), patch, KEYS)["metadata"]["finalizers"] == ["b"]
    ops = [{"op": "add", "path": "/x", "value": 1}]
    assert apply_patch(base, JSON_PATCH, ops, None)["x"] == 1
    assert "must be a JSON object" in refused(400, apply_patch, base, STRATEGIC, [1], KEYS)
    # custom resources have no strategic merge patch, as in the real server
    message = refused(415, apply_patch, base, STRATEGIC, patch, None)
    assert "accepted media types include: application/json-patch+json" in message
    assert STRATEGIC not in message
    refused(415, apply_patch, base, "text/plain", patch, KEYS)


# -- end to end --------------------------------------------------------------------------


async def test_kubectl_json_patch_test_op_tells_one_from_true(sim: Any) -> None:
    sim.create(pod("web", annotations={"n": "1"}, activeDeadlineSeconds=1))
    failing = await sim.kubectl(
        "patch",
        "pod",
        "web",
        "--type",
        "json",
        "-p",
        '[{"op":"test","path":"/spec/activeDeadlineSeconds","value":true},'
        '{"op":"replace","path":"/spec/activeDeadlineSeconds","value":5}]',
    )
    assert failing.code != 0
    assert "testing value /spec/activeDeadlineSeconds failed" in failing.stderr
    passing = await sim.kubectl(
        "patch",
        "pod",
        "web",
        "--type",
        "json",
        "-p",
        '[{"op":"test","path":"/spec/activeDeadlineSeconds","value":1},'
        '{"op":"replace","path":"/spec/activeDeadlineSeconds","value":5}]',
    )
    assert passing.code == 0, passing.stderr
    assert sim.store.get("/pods", ("default", "web"))["spec"]["activeDeadlineSeconds"] == 5
