"""The manifest loader: multi-document YAML, kind: List, and errors that say where."""

from __future__ import annotations

from pathlib import Path

import pytest

from pumice.manifests import ManifestError, load_manifests, parse_manifests

ROOT = Path(__file__).resolve().parents[2]

MULTI = """\
apiVersion: v1
kind: Node
metadata: {name: n1}
---
# a comment-only document is empty and skipped
---
apiVersion: v1
kind: Pod
metadata: {name: p1, namespace: default}
spec: {containers: [{name: c, image: busybox}]}
"""

LIST = """\
apiVersion: v1
items:
- apiVersion: v1
  kind: Node
  metadata: {name: n1, resourceVersion: "17", uid: 0b7b2a0c-0000-4000-8000-000000000001}
- apiVersion: scheduling.volcano.sh/v1beta1
  kind: Queue
  metadata: {name: default}
kind: List
metadata:
  resourceVersion: ""
"""


def test_multi_document_yaml_grouped_by_kind() -> None:
    manifests = parse_manifests(MULTI, "c.yaml")
    assert [o["kind"] for o in manifests.objects] == ["Node", "Pod"]
    assert [o["metadata"]["name"] for o in manifests.kind("Pod")] == ["p1"]
    assert sorted(manifests.by_kind) == ["Node", "Pod"]
    assert len(manifests) == 2


def test_kind_list_as_kubectl_writes_it() -> None:
    manifests = parse_manifests(LIST)
    assert [(o["kind"], o["metadata"]["name"]) for o in manifests.objects] == [
        ("Node", "n1"),
        ("Queue", "default"),
    ]


def test_typed_lists_imply_the_item_kind() -> None:
    text = "apiVersion: v1\nkind: PodList\nitems:\n- metadata: {name: p}\n  spec: {}\n"
    (obj,) = parse_manifests(text).objects
    assert (obj["kind"], obj["apiVersion"]) == ("Pod", "v1")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("kind: Node\nmetadata: {name: n}\n", "f.yaml: document 1: missing or empty 'apiVersion'"),
        ("apiVersion: v1\nkind: Node\n", "f.yaml: document 1: Node: missing 'metadata' mapping"),
        (
            "apiVersion: v1\nkind: Node\nmetadata: {name: a}\n---\n- 1\n",
            "f.yaml: document 2: expected a mapping (a Kubernetes object), got list",
        ),
        (
            "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata: {}\n",
            "f.yaml: document 1: item 1: Pod: missing metadata.name",
        ),
        (
            "apiVersion: v1\nkind: List\nitems: 3\n",
            "f.yaml: document 1: 'items' of a List must be a list",
        ),
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: [1]\n",
            "f.yaml: document 1: Pod p: 'spec' must be a mapping",
        ),
    ],
)
def test_bad_objects_name_file_document_and_item(text: str, expected: str) -> None:
    with pytest.raises(ManifestError) as err:
        parse_manifests(text, "f.yaml")
    assert str(err.value) == expected


def test_bad_yaml_names_the_line() -> None:
    text = "apiVersion: v1\nkind: Node\nmetadata: {name: a}\n---\napiVersion: v1\nkind: [Node\n"
    with pytest.raises(ManifestError) as err:
        parse_manifests(text, "f.yaml")
    assert err.value.document == 2
    assert err.value.line is not None and err.value.line >= 6
    assert str(err.value).startswith(f"f.yaml:{err.value.line}: document 2: invalid YAML")


def test_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(ManifestError) as err:
        load_manifests(tmp_path / "missing.yaml")
    assert str(err.value) == f"{tmp_path / 'missing.yaml'}: cannot read: No such file or directory"


def test_the_example_cluster_loads() -> None:
    manifests = load_manifests(ROOT / "conf" / "examples" / "cluster.yaml")
    nodes = manifests.kind("Node")
    assert len(nodes) >= 3
    assert any("nvidia.com/gpu" in n["status"]["allocatable"] for n in nodes)
    assert manifests.kind("Queue")[0]["metadata"]["name"] == "default"
    pods = manifests.kind("Pod")
    assert pods and all(p["spec"]["schedulerName"] == "pumice" for p in pods)
    assert any("scheduling.k8s.io/group-name" in p["metadata"].get("annotations", {}) for p in pods)
    assert manifests.kind("PodGroup")
