"""RBAC as the real API server evaluates it, over the Roles and bindings in the store.

A request is allowed when some binding names the user (directly, through one of its groups, or
as its ServiceAccount) and the bound role has a rule matching the request's attributes:

- ``verbs``: the verb or ``*``;
- ``apiGroups``: the group (``""`` is the core group) or ``*``;
- ``resources``: the resource, ``resource/subresource`` for a subresource (``pods/binding``),
  ``*`` for everything, ``*/subresource`` for that subresource of any resource;
- ``resourceNames``: empty, or containing the request's name (a request without a name, such
  as list or create, never matches a rule that lists names).

RoleBindings grant only inside their namespace (their role is a Role of that namespace or a
ClusterRole); ClusterRoleBindings grant everywhere. Members of ``system:masters`` are allowed
everything, as the real server's superuser group. Non-resource URLs and aggregated ClusterRoles
are not evaluated (non-resource paths are open to everyone in the simulated server).

Denials carry the real server's wording (``forbidden_error``), which kubectl prints verbatim.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from pumice.sim.errors import ApiError, qualified
from pumice.sim.objects import Obj, meta
from pumice.sim.resources import (
    CLUSTER_ROLE_BINDINGS,
    CLUSTER_ROLES,
    RBAC_GROUP,
    ROLE_BINDINGS,
    ROLES,
)
from pumice.sim.store import Store

MASTERS = "system:masters"
AUTHENTICATED = "system:authenticated"
SA_PREFIX = "system:serviceaccount:"


@dataclass(frozen=True, slots=True)
class User:
    name: str
    groups: tuple[str, ...] = ()

    @staticmethod
    def service_account(namespace: str, name: str) -> User:
        return User(
            f"{SA_PREFIX}{namespace}:{name}",
            ("system:serviceaccounts", f"system:serviceaccounts:{namespace}", AUTHENTICATED),
        )

    @property
    def service_account_key(self) -> tuple[str, str] | None:
        """(namespace, name) when this user is a ServiceAccount."""
        if not self.name.startswith(SA_PREFIX):
            return None
        ns, _, name = self.name[len(SA_PREFIX) :].partition(":")
        return ns, name


ANONYMOUS = User("system:anonymous", ("system:unauthenticated",))


@dataclass(frozen=True, slots=True)
class Attributes:
    """What a resource request asks to do (the real server's authorizer.Attributes)."""

    verb: str
    group: str
    resource: str
    subresource: str = ""
    namespace: str = ""
    name: str = ""


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    reason: str = ""


def rule_allows(rule: Obj, attrs: Attributes) -> bool:
    verbs = rule.get("verbs") or []
    if "*" not in verbs and attrs.verb not in verbs:
        return False
    groups = rule.get("apiGroups") or []
    if "*" not in groups and attrs.group not in groups:
        return False
    if not _resource_matches(rule.get("resources") or [], attrs):
        return False
    names = rule.get("resourceNames") or []
    return not names or attrs.name in names


def _resource_matches(resources: list[str], attrs: Attributes) -> bool:
    if attrs.subresource:
        wanted = f"{attrs.resource}/{attrs.subresource}"
        return any(r in ("*", wanted, f"*/{attrs.subresource}") for r in resources)
    return any(r in ("*", attrs.resource) for r in resources)


def _subject_matches(subject: Obj, user: User, binding_ns: str) -> bool:
    kind = subject.get("kind")
    name = subject.get("name")
    if kind == "User":
        return bool(name == user.name)
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        ns = subject.get("namespace") or binding_ns
        return user.name == f"{SA_PREFIX}{ns}:{name}"
    return False


def _describe_subject(subject: Obj, binding_ns: str) -> str:
    if subject.get("kind") == "ServiceAccount":
        ns = subject.get("namespace") or binding_ns
        return f'ServiceAccount "{subject.get("name")}/{ns}"'
    return f'{subject.get("kind")} "{subject.get("name")}"'


class RbacAuthorizer:
    """Decides requests from the Roles, ClusterRoles and bindings currently stored."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def authorize(self, user: User, attrs: Attributes) -> Decision:
        if MASTERS in user.groups:
            return Decision(True, f'allowed as a member of the group "{MASTERS}"')
        problems: list[str] = []
        for binding_kind, binding, rules in self._grants(user, attrs.namespace, problems):
            if any(rule_allows(rule, attrs) for rule in rules):
                m = meta(binding)
                ns = str(m.get("namespace") or "")
                ref = binding.get("roleRef") or {}
                subject = next(
                    s for s in binding.get("subjects") or [] if _subject_matches(s, user, ns)
                )
                named = f"{m.get('name')}/{ns}" if ns else str(m.get("name"))
                return Decision(
                    True,
                    f'RBAC: allowed by {binding_kind} "{named}" of {ref.get("kind")} '
                    f'"{ref.get("name")}" to {_describe_subject(subject, ns)}',
                )
        return Decision(False, "RBAC: " + ", ".join(problems) if problems else "")

    def rules_for(self, user: User, namespace: str) -> tuple[list[Obj], list[str]]:
        """Every rule that applies to ``user`` in ``namespace`` (cluster-wide ones included),
        and the problems met (bindings to missing roles), as SelfSubjectRulesReview lists."""
        if MASTERS in user.groups:
            return [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}], []
        problems: list[str] = []
        rules = [rule for _, _, found in self._grants(user, namespace, problems) for rule in found]
        return rules, problems

    def _grants(
        self, user: User, namespace: str, problems: list[str]
    ) -> Iterator[tuple[str, Obj, list[Obj]]]:
        """(binding kind, binding, rules of its role) for every binding naming ``user``."""
        for binding in self.store.table(CLUSTER_ROLE_BINDINGS.table).values():
            if self._names(binding, user, ""):
                rules = self._role_rules(binding, "", problems)
                if rules is not None:
                    yield "ClusterRoleBinding", binding, rules
        if not namespace:
            return
        for (ns, _name), binding in self.store.table(ROLE_BINDINGS.table).items():
            if ns == namespace and self._names(binding, user, ns):
                rules = self._role_rules(binding, ns, problems)
                if rules is not None:
                    yield "RoleBinding", binding, rules

    @staticmethod
    def _names(binding: Obj, user: User, namespace: str) -> bool:
        return any(_subject_matches(s, user, namespace) for s in binding.get("subjects") or [])

    def _role_rules(self, binding: Obj, namespace: str, problems: list[str]) -> list[Obj] | None:
        ref = binding.get("roleRef") or {}
        kind, name = ref.get("kind"), str(ref.get("name", ""))
        if kind == "ClusterRole":
            role = self.store.get(CLUSTER_ROLES.table, ("", name))
            missing = f'clusterrole.{RBAC_GROUP} "{name}" not found'
        elif kind == "Role" and namespace:
            role = self.store.get(ROLES.table, (namespace, name))
            missing = f'role.{RBAC_GROUP} "{name}" not found'
        else:
            return None
        if role is None:
            problems.append(missing)
            return None
        return list(role.get("rules") or [])


def forbidden_message(user: User, attrs: Attributes) -> str:
    resource = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    where = f'in the namespace "{attrs.namespace}"' if attrs.namespace else "at the cluster scope"
    return (
        f'User "{user.name}" cannot {attrs.verb} resource "{resource}" in API group '
        f'"{attrs.group}" {where}'
    )


def forbidden_error(user: User, attrs: Attributes, reason: str = "") -> ApiError:
    """403 exactly as the real server words it (``pods "x" is forbidden: User ...``)."""
    text = forbidden_message(user, attrs)
    if reason:
        text = f"{text}: {reason}"
    target = qualified(attrs.resource, attrs.group)
    if attrs.name:
        target = f'{target} "{attrs.name}"'
    details: Obj = {}
    if attrs.name:
        details["name"] = attrs.name
    if attrs.group:
        details["group"] = attrs.group
    details["kind"] = attrs.resource
    return ApiError(403, "Forbidden", f"{target} is forbidden: {text}", details)


def bootstrap_policy() -> list[Obj]:
    """The roles every RBAC cluster starts with that matter here: cluster-admin for
    ``system:masters`` and system:basic-user, which lets every authenticated user ask
    who it is and what it may do (``kubectl auth whoami``, ``kubectl auth can-i``)."""
    crb = "ClusterRoleBinding"
    api = f"{RBAC_GROUP}/v1"
    bootstrap = {"kubernetes.io/bootstrapping": "rbac-defaults"}
    return [
        {
            "apiVersion": api,
            "kind": "ClusterRole",
            "metadata": {"name": "cluster-admin", "labels": bootstrap},
            "rules": [
                {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
                {"nonResourceURLs": ["*"], "verbs": ["*"]},
            ],
        },
        {
            "apiVersion": api,
            "kind": crb,
            "metadata": {"name": "cluster-admin", "labels": bootstrap},
            "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"apiGroup": RBAC_GROUP, "kind": "Group", "name": MASTERS}],
        },
        {
            "apiVersion": api,
            "kind": "ClusterRole",
            "metadata": {"name": "system:basic-user", "labels": bootstrap},
            "rules": [
                {
                    "apiGroups": ["authorization.k8s.io"],
                    "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                    "verbs": ["create"],
                },
                {
                    "apiGroups": ["authentication.k8s.io"],
                    "resources": ["selfsubjectreviews"],
                    "verbs": ["create"],
                },
            ],
        },
        {
            "apiVersion": api,
            "kind": crb,
            "metadata": {"name": "system:basic-user", "labels": bootstrap},
            "roleRef": {
                "apiGroup": RBAC_GROUP,
                "kind": "ClusterRole",
                "name": "system:basic-user",
            },
            "subjects": [{"apiGroup": RBAC_GROUP, "kind": "Group", "name": AUTHENTICATED}],
        },
    ]
