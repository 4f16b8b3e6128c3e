"""``pumice sim-cluster --authorization rbac --kubeconfig-out-for NS/NAME=PATH``: the admin
kubeconfig may do everything, the ServiceAccount's only what the seeded policy grants."""

from __future__ import annotations

import asyncio
from pathlib import Path

from sim.simkit import run_kubectl
from sim.test_sim_cli import failing, start, stop

POLICY = """\
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: pod-watcher}
rules:
- {apiGroups: [""], resources: [pods], verbs: [get, list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: scheduler-watches-pods}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: pod-watcher}
subjects:
- {kind: ServiceAccount, name: scheduler, namespace: kube-system}
"""


async def test_a_kubeconfig_per_identity(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    admin = tmp_path / "admin.kubeconfig"
    robot = tmp_path / "robot.kubeconfig"
    proc = await start(
        "--authorization",
        "rbac",
        "--cluster",
        str(policy),
        "--kubeconfig-out",
        str(admin),
        "--kubeconfig-out-for",
        f"kube-system/scheduler={robot}",
    )
    try:
        assert proc.stdout is not None
        lines = [
            (await asyncio.wait_for(proc.stdout.readline(), 30)).decode().strip() for _ in range(4)
        ]
        assert lines[0].startswith("pumice sim-cluster: serving https://127.0.0.1:"), lines
        assert "1 ClusterRole, 1 ClusterRoleBinding" in lines[0]
        assert lines[3] == f"kubeconfig for ServiceAccount kube-system/scheduler: {robot}"
        mine = await run_kubectl(robot, tmp_path, "auth", "can-i", "watch", "pods", "-A")
        assert mine.stdout.strip() == "yes", mine.stderr
        refused = await run_kubectl(robot, tmp_path, "get", "nodes")
        assert refused.stderr.strip() == (
            "Error from server (Forbidden): nodes is forbidden: User "
            '"system:serviceaccount:kube-system:scheduler" cannot list resource "nodes" in API '
            'group "" at the cluster scope'
        )
        whoever = await run_kubectl(admin, tmp_path, "get", "sa", "-n", "kube-system", "-o", "name")
        assert whoever.stdout.split() == ["serviceaccount/scheduler"]
    finally:
        code, err = await stop(proc)
    assert code == 0, err


async def test_bad_identity_flags_are_exit_2(tmp_path: Path) -> None:
    for spec in ("scheduler=x", "kube-system/scheduler", "ns/a/b=x"):
        code, err = await failing("--kubeconfig-out-for", spec)
        assert code == 2, spec
        assert err.strip() == (
            f"pumice sim-cluster: error: --kubeconfig-out-for {spec!r}: expected "
            "NAMESPACE/NAME=PATH"
        )
    code, err = await failing("--authorization", "abac")
    assert code == 2
    assert "invalid choice: 'abac'" in err
