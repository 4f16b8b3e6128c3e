"""``pumice simulate`` refuses what pumice does not evaluate, in the daemon's words; what it
evaluates (claims, ephemeral volumes) is turned away for what it is, in kube-scheduler's words."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.manifests import node, pending, placed, pod, simulate

Capsys = pytest.CaptureFixture[str]


def test_pods_with_resource_claims_are_refused_and_missing_volume_claims_said(
    tmp_path: Path, capsys: Capsys
) -> None:
    claims = {"resourceClaims": [{"name": "gpu", "resourceClaimName": "gpu-0"}]}
    pvc = {"volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]}
    template = {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"]}}}
    eph = {"volumes": [{"name": "scratch", "ephemeral": template}]}
    plain = {"volumes": [{"name": "tmp", "emptyDir": {}}]}
    objects = [
        node("n1"),
        pod("dra", extra_spec=claims),
        pod("pvc", extra_spec=pvc),
        pod("eph", extra_spec=eph),
        pod("plain", extra_spec=plain),
    ]
    result = simulate(tmp_path, objects, capsys)
    assert placed(result) == {"default/plain": "n1"}
    assert pending(result) == {
        "default/dra": "pumice does not evaluate spec.resourceClaims; the pod stays pending",
        "default/pvc": '0/1 nodes are available: persistentvolumeclaim "data" not found.',
        # the claim made for the ephemeral volume has no class: it binds at once, or not
        "default/eph": "0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims.",
    }
