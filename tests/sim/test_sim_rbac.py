"""``--authorization rbac``: a ServiceAccount may do exactly what its seeded Role and
ClusterRole allow, is refused the rest in the real API server's words, and ``kubectl auth
can-i`` gives the same answers."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from kubernetes_asyncio import client as k8s_client
from kubernetes_asyncio.client.rest import ApiException

from pumice.sim.rbac import Attributes, rule_allows
from sim.simkit import binding, node, pod

ACCOUNT = "team-a/scheduler"
SA_USER = "system:serviceaccount:team-a:scheduler"
RBAC = "rbac.authorization.k8s.io/v1"

POLICY: list[dict[str, Any]] = [
    {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": "scheduler", "namespace": "team-a"},
    },
    {
        "apiVersion": RBAC,
        "kind": "Role",
        "metadata": {"name": "pod-reader", "namespace": "team-a"},
        "rules": [
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": [""], "resources": ["pods/binding"], "verbs": ["create"]},
        ],
    },
    {
        "apiVersion": RBAC,
        "kind": "RoleBinding",
        "metadata": {"name": "scheduler-reads-pods", "namespace": "team-a"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "scheduler", "namespace": "team-a"}],
    },
    {
        "apiVersion": RBAC,
        "kind": "ClusterRole",
        "metadata": {"name": "node-lister"},
        "rules": [
            {"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]},
            {
                "apiGroups": ["scheduling.volcano.sh"],
                "resources": ["queues"],
                "resourceNames": ["default"],
                "verbs": ["get"],
            },
        ],
    },
    {
        "apiVersion": RBAC,
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "scheduler-lists-nodes"},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "node-lister",
        },
        "subjects": [{"kind": "ServiceAccount", "name": "scheduler", "namespace": "team-a"}],
    },
]

Call = Callable[[k8s_client.ApiClient], Awaitable[Any]]


def _core(api: k8s_client.ApiClient) -> k8s_client.CoreV1Api:
    return k8s_client.CoreV1Api(api)


def _queues(api: k8s_client.ApiClient) -> k8s_client.CustomObjectsApi:
    return k8s_client.CustomObjectsApi(api)


# (what the client does, the can-i arguments for it, allowed, the refusal's message)
CASES: list[tuple[str, Call, list[str], bool, str]] = [
    (
        "list pods in team-a",
        lambda api: _core(api).list_namespaced_pod("team-a"),
        ["list", "pods", "-n", "team-a"],
        True,
        "",
    ),
    (
        "watch pods in team-a",
        lambda api: _core(api).list_namespaced_pod(
            "team-a", watch=True, timeout_seconds=1, _preload_content=False
        ),
        ["watch", "pods", "-n", "team-a"],
        True,
        "",
    ),
    (
        "watch pods everywhere",
        lambda api: _core(api).list_pod_for_all_namespaces(
            watch=True, timeout_seconds=1, _preload_content=False
        ),
        ["watch", "pods", "-A"],
        False,
        f'pods is forbidden: User "{SA_USER}" cannot watch resource "pods" in API group "" at '
        "the cluster scope",
    ),
    (
        "get a pod in team-a",
        lambda api: _core(api).read_namespaced_pod("web", "team-a"),
        ["get", "pods/web", "-n", "team-a"],
        True,
        "",
    ),
    (
        "list pods in default",
        lambda api: _core(api).list_namespaced_pod("default"),
        ["list", "pods", "-n", "default"],
        False,
        f'pods is forbidden: User "{SA_USER}" cannot list resource "pods" in API group "" in '
        'the namespace "default"',
    ),
    (
        "delete a pod in team-a",
        lambda api: _core(api).delete_namespaced_pod("web", "team-a"),
        ["delete", "pods/web", "-n", "team-a"],
        False,
        f'pods "web" is forbidden: User "{SA_USER}" cannot delete resource "pods" in API group '
        '"" in the namespace "team-a"',
    ),
    (
        "bind a pod in team-a",
        lambda api: _core(api).create_namespaced_pod_binding(
            "web", "team-a", binding("web", "node-a", "team-a"), _preload_content=False
        ),
        ["create", "pods/web", "--subresource=binding", "-n", "team-a"],
        True,
        "",
    ),
    (
        "list nodes",
        lambda api: _core(api).list_node(),
        ["list", "nodes"],
        True,
        "",
    ),
    (
        "get a node",
        lambda api: _core(api).read_node("node-a"),
        ["get", "nodes/node-a"],
        False,
        f'nodes "node-a" is forbidden: User "{SA_USER}" cannot get resource "nodes" in API '
        'group "" at the cluster scope',
    ),
    (
        "get the default queue",
        lambda api: _queues(api).get_cluster_custom_object(
            "scheduling.volcano.sh", "v1beta1", "queues", "default"
        ),
        ["get", "queues.scheduling.volcano.sh/default"],
        True,
        "",
    ),
    (
        "list queues (the rule names one queue)",
        lambda api: _queues(api).list_cluster_custom_object(
            "scheduling.volcano.sh", "v1beta1", "queues"
        ),
        ["list", "queues.scheduling.volcano.sh"],
        False,
        f'queues.scheduling.volcano.sh is forbidden: User "{SA_USER}" cannot list resource '
        '"queues" in API group "scheduling.volcano.sh" at the cluster scope',
    ),
    (
        "create a pod in team-a",
        lambda api: _core(api).create_namespaced_pod("team-a", pod("new", "team-a")),
        ["create", "pods", "-n", "team-a"],
        False,
        f'pods is forbidden: User "{SA_USER}" cannot create resource "pods" in API group "" in '
        'the namespace "team-a"',
    ),
]


@pytest.fixture
async def rbac_sim(make_sim: Any) -> Any:
    sim = await make_sim(authorization="rbac")
    sim.server.seed(POLICY)
    sim.create(node("node-a"))
    sim.create(pod("web", "team-a"))
    return sim


@pytest.mark.parametrize(("what", "call", "can_i", "allowed", "message"), CASES)
async def test_a_service_account_gets_what_its_roles_allow(
    rbac_sim: Any, what: str, call: Call, can_i: list[str], allowed: bool, message: str
) -> None:
    client = await rbac_sim.client(ACCOUNT)
    async with client:
        try:
            result = await call(client)
            # a raw (_preload_content=False) response is not raised on; read its status
            code = result.status if isinstance(getattr(result, "status", None), int) else 200
            body = json.loads(await result.read()) if code >= 400 else {}
        except ApiException as exc:
            code, body = exc.status, json.loads(exc.body)
    if allowed:
        assert code < 300, f"{what}: {body}"
    else:
        assert code == 403, what
        assert body["reason"] == "Forbidden"
        assert body["message"] == message
    answer = await rbac_sim.kubectl("auth", "can-i", *can_i, account=ACCOUNT)
    assert answer.stdout.strip() == ("yes" if allowed else "no"), (what, answer.stderr)
    assert answer.code == (0 if allowed else 1)


async def test_kubectl_as_the_account_prints_the_real_refusal(rbac_sim: Any) -> None:
    result = await rbac_sim.kubectl("get", "pods", "-n", "kube-system", account=ACCOUNT)
    assert result.code != 0
    assert result.stderr.strip() == (
        f'Error from server (Forbidden): pods is forbidden: User "{SA_USER}" cannot list '
        'resource "pods" in API group "" in the namespace "kube-system"'
    )
    allowed = await rbac_sim.kubectl("get", "pods", "-n", "team-a", account=ACCOUNT)
    assert allowed.code == 0, allowed.stderr
    assert "web" in allowed.stdout


async def test_the_admin_kubeconfig_may_do_everything(rbac_sim: Any) -> None:
    assert rbac_sim.url.startswith("https://")
    answer = await rbac_sim.kubectl("auth", "can-i", "delete", "nodes")
    assert answer.stdout.strip() == "yes"
    deleted = await rbac_sim.kubectl("delete", "node", "node-a")
    assert deleted.code == 0, deleted.stderr


async def test_unknown_tokens_and_deleted_accounts_are_unauthorized(rbac_sim: Any) -> None:
    client = await rbac_sim.client(ACCOUNT)
    async with client:
        await _core(client).list_namespaced_pod("team-a")
        rbac_sim.registry.store.commit("/serviceaccounts", ("team-a", "scheduler"), None)
        with pytest.raises(ApiException) as refused:
            await _core(client).list_namespaced_pod("team-a")
    assert refused.value.status == 401
    client = await rbac_sim.client()
    client.configuration.api_key["BearerToken"] = "Bearer made-up"
    async with client:
        with pytest.raises(ApiException) as unknown:
            await _core(client).list_node()
    assert unknown.value.status == 401


async def test_a_binding_to_a_missing_role_says_so(rbac_sim: Any) -> None:
    rbac_sim.server.seed(
        [
            {
                "apiVersion": RBAC,
                "kind": "RoleBinding",
                "metadata": {"name": "dangling", "namespace": "team-a"},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "Role",
                    "name": "gone",
                },
                "subjects": [{"kind": "ServiceAccount", "name": "scheduler"}],
            }
        ]
    )
    client = await rbac_sim.client(ACCOUNT)
    async with client:
        with pytest.raises(ApiException) as refused:
            await _core(client).delete_namespaced_pod("web", "team-a")
    assert json.loads(refused.value.body)["message"].endswith(
        ': RBAC: role.rbac.authorization.k8s.io "gone" not found'
    )


async def test_rbac_objects_are_served_over_rest(sim: Any) -> None:
    for command in (
        ["create", "serviceaccount", "robot"],
        ["create", "role", "reader", "--verb=get", "--resource=pods"],
        ["create", "rolebinding", "rb", "--role=reader", "--serviceaccount=default:robot"],
        ["create", "clusterrole", "lister", "--verb=list", "--resource=nodes"],
        ["create", "clusterrolebinding", "crb", "--clusterrole=lister", "--group=ops"],
    ):
        result = await sim.kubectl(*command)
        assert result.code == 0, (command, result.stderr)
    stored = sim.store.get("rbac.authorization.k8s.io/rolebindings", ("default", "rb"))
    assert stored["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": "reader",
    }
    assert stored["subjects"] == [
        {"kind": "ServiceAccount", "name": "robot", "namespace": "default"}
    ]
    role = sim.store.get("rbac.authorization.k8s.io/roles", ("default", "reader"))
    assert role["rules"] == [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]
    listed = await sim.kubectl("get", "sa,roles,clusterrolebindings", "-o", "name")
    assert set(listed.stdout.split()) >= {
        "serviceaccount/robot",
        "role.rbac.authorization.k8s.io/reader",
        "clusterrolebinding.rbac.authorization.k8s.io/crb",
    }


async def test_without_authorization_everyone_may_do_everything(sim: Any) -> None:
    answer = await sim.kubectl("auth", "can-i", "delete", "nodes", account="default/robot")
    assert answer.stdout.strip() == "yes"
    client = await sim.client("default/robot")
    async with client:
        assert (await _core(client).list_node()).items == []


@pytest.mark.parametrize(
    ("rule", "attrs", "allowed"),
    [
        (
            {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},
            Attributes("get", "x", "y"),
            True,
        ),
        (
            {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]},
            Attributes("list", "", "pods"),
            False,
        ),
        (
            {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]},
            Attributes("get", "apps", "pods"),
            False,
        ),
        (
            {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]},
            Attributes("get", "", "pods", "status"),
            False,
        ),
        (
            {"verbs": ["patch"], "apiGroups": [""], "resources": ["*/status"]},
            Attributes("patch", "", "pods", "status"),
            True,
        ),
        (
            {"verbs": ["patch"], "apiGroups": [""], "resources": ["pods/status"]},
            Attributes("patch", "", "pods"),
            False,
        ),
        (
            {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "resourceNames": ["a"]},
            Attributes("get", "", "pods", name="b"),
            False,
        ),
        (
            {"verbs": ["list"], "apiGroups": [""], "resources": ["pods"], "resourceNames": ["a"]},
            Attributes("list", "", "pods"),
            False,
        ),
    ],
)
def test_rule_matching(rule: dict[str, Any], attrs: Attributes, allowed: bool) -> None:
    assert rule_allows(rule, attrs) is allowed


async def test_kubectl_auth_whoami_and_create_token(rbac_sim: Any) -> None:
    me = await rbac_sim.kubectl("auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
    assert me.stdout == "kubernetes-admin", me.stderr
    minted = await rbac_sim.kubectl("create", "token", "scheduler", "-n", "team-a")
    assert minted.code == 0, minted.stderr
    token = minted.stdout.strip()
    who = await rbac_sim.kubectl(
        "--token", token, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"
    )
    assert who.stdout == SA_USER, who.stderr
    pods = await rbac_sim.kubectl("--token", token, "get", "pods", "-n", "team-a", "-o", "name")
    assert pods.stdout.split() == ["pod/web"], pods.stderr
    refused = await rbac_sim.kubectl(
        "create", "token", "scheduler", "-n", "team-a", account=ACCOUNT
    )
    assert refused.code != 0
    assert (
        f'serviceaccounts "scheduler" is forbidden: User "{SA_USER}" cannot create resource '
        '"serviceaccounts/token" in API group "" in the namespace "team-a"'
    ) in refused.stderr
    missing = await rbac_sim.kubectl("create", "token", "nobody", "-n", "team-a")
    assert 'serviceaccounts "nobody" not found' in missing.stderr


async def test_a_rolebinding_grants_a_clusterrole_in_its_namespace_only(rbac_sim: Any) -> None:
    rbac_sim.create(pod("web", "default"))
    rbac_sim.server.seed(
        [
            {
                "apiVersion": RBAC,
                "kind": "ClusterRole",
                "metadata": {"name": "pod-deleter"},
                "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["delete"]}],
            },
            {
                "apiVersion": RBAC,
                "kind": "RoleBinding",
                "metadata": {"name": "team-a-deletes", "namespace": "team-a"},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": "pod-deleter",
                },
                # every ServiceAccount of team-a, through its group
                "subjects": [
                    {
                        "apiGroup": "rbac.authorization.k8s.io",
                        "kind": "Group",
                        "name": "system:serviceaccounts:team-a",
                    }
                ],
            },
        ]
    )
    here = await rbac_sim.kubectl(
        "auth", "can-i", "delete", "pod/web", "-n", "team-a", account=ACCOUNT
    )
    there = await rbac_sim.kubectl(
        "auth", "can-i", "delete", "pod/web", "-n", "default", account=ACCOUNT
    )
    other = await rbac_sim.kubectl(
        "auth", "can-i", "delete", "pod/web", "-n", "team-a", account="team-b/robot"
    )
    assert [here.stdout.strip(), there.stdout.strip(), other.stdout.strip()] == ["yes", "no", "no"]
    deleted = await rbac_sim.kubectl("delete", "pod", "web", "-n", "team-a", account=ACCOUNT)
    assert deleted.code == 0, deleted.stderr


async def test_kubectl_auth_can_i_list(rbac_sim: Any) -> None:
    listed = await rbac_sim.kubectl("auth", "can-i", "--list", "-n", "team-a", account=ACCOUNT)
    assert listed.code == 0, listed.stderr
    rows = {
        line.split()[0]: line.split()[1:]
        for line in listed.stdout.splitlines()[1:]
        if line[0] != " "
    }
    assert rows["pods"] == ["[]", "[]", "[get", "list", "watch]"]
    assert rows["pods/binding"] == ["[]", "[]", "[create]"]
    assert rows["nodes"] == ["[]", "[]", "[list]"]
    assert rows["queues.scheduling.volcano.sh"] == ["[]", "[default]", "[get]"]
    elsewhere = await rbac_sim.kubectl("auth", "can-i", "--list", "-n", "default", account=ACCOUNT)
    assert "pods/binding" not in elsewhere.stdout
    assert "nodes" in elsewhere.stdout


async def test_a_watch_pinned_to_a_name_is_authorized_on_that_name(rbac_sim: Any) -> None:
    rbac_sim.server.seed(
        [
            {
                "apiVersion": RBAC,
                "kind": "ClusterRole",
                "metadata": {"name": "default-queue-watcher"},
                "rules": [
                    {
                        "apiGroups": ["scheduling.volcano.sh"],
                        "resources": ["queues"],
                        "resourceNames": ["default"],
                        "verbs": ["list", "watch"],
                    }
                ],
            },
            {
                "apiVersion": RBAC,
                "kind": "ClusterRoleBinding",
                "metadata": {"name": "scheduler-watches-the-default-queue"},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": "default-queue-watcher",
                },
                "subjects": [
                    {"kind": "ServiceAccount", "name": "scheduler", "namespace": "team-a"}
                ],
            },
        ]
    )
    client = await rbac_sim.client(ACCOUNT)
    queues = _queues(client)
    async with client:
        pinned = await queues.list_cluster_custom_object(
            "scheduling.volcano.sh",
            "v1beta1",
            "queues",
            field_selector="metadata.name=default",
        )
        assert [q["metadata"]["name"] for q in pinned["items"]] == ["default"]
        with pytest.raises(ApiException) as refused:
            await queues.list_cluster_custom_object(
                "scheduling.volcano.sh",
                "v1beta1",
                "queues",
                field_selector="metadata.name=other",
            )
    assert json.loads(refused.value.body)["message"].startswith(
        'queues.scheduling.volcano.sh "other" is forbidden'
    )


async def test_the_admin_can_ask_as_the_account(rbac_sim: Any) -> None:
    sa = f"--as={SA_USER}"
    allowed = await rbac_sim.kubectl("auth", "can-i", "list", "pods", "-n", "team-a", sa)
    denied = await rbac_sim.kubectl("auth", "can-i", "list", "pods", "-n", "default", sa)
    assert [allowed.stdout.strip(), denied.stdout.strip()] == ["yes", "no"]
    refused = await rbac_sim.kubectl("get", "nodes", "node-a", sa)
    assert f'nodes "node-a" is forbidden: User "{SA_USER}" cannot get resource' in refused.stderr
    # the account itself may not impersonate anyone
    upward = await rbac_sim.kubectl("get", "pods", "--as=kubernetes-admin", account=ACCOUNT)
    assert (
        f'users "kubernetes-admin" is forbidden: User "{SA_USER}" cannot impersonate resource '
        '"users" in API group "" at the cluster scope'
    ) in upward.stderr


async def test_every_access_is_counted_for_audits(rbac_sim: Any) -> None:
    client = await rbac_sim.client(ACCOUNT)
    async with client:
        await _core(client).list_namespaced_pod("team-a")
        await _core(client).list_namespaced_pod("team-a")
        await _core(client).list_node(label_selector="x")
        with pytest.raises(ApiException):
            await _core(client).delete_namespaced_pod("web", "team-a")
    mine = {a: n for a, n in rbac_sim.server.access.accesses.items() if a.user == SA_USER}
    assert {(a.verb, a.resource, a.namespace, a.allowed, n) for a, n in mine.items()} == {
        ("list", "pods", "team-a", True, 2),
        ("list", "nodes", "", True, 1),
        ("delete", "pods", "team-a", False, 1),
    }
