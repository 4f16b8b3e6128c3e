"""Who is calling, and may they: bearer tokens, authorization, reviews and token requests.

Authentication: the kubeconfig ``SimServer.write_kubeconfig`` writes carries the admin token
(user ``kubernetes-admin`` in ``system:masters``, the identity ``kubeadm`` gives its admin
kubeconfig); ``token_for(namespace, name)`` issues a bearer token for a ServiceAccount
(creating the account if it is missing), and ``SimServer.write_kubeconfig_for`` writes a
kubeconfig that uses it. A request without a token is ``system:anonymous``; an unknown token,
or the token of a ServiceAccount since deleted, is 401 Unauthorized, as on a real server.
``Impersonate-User``/``Impersonate-Group`` (``kubectl --as``) switch identity when the caller
may ``impersonate`` (the admin may), so ``kubectl auth can-i --as=system:serviceaccount:ns:sa``
works from the admin kubeconfig.

Authorization is opt-in (``SimConfig.authorization = "rbac"``): every resource request is then
checked by ``pumice.sim.rbac`` and refused with the real 403 wording. Without it everyone may
do everything (the real server's AlwaysAllow mode). Non-resource paths (discovery, /version,
health, OpenAPI) are open to everyone either way, as the bootstrap ``system:discovery`` and
``system:public-info-viewer`` roles make them on a real cluster.

``handle`` answers what is computed rather than stored: ``SelfSubjectAccessReview`` (what
``kubectl auth can-i`` asks) with the same decision the request itself would get,
``SelfSubjectReview`` (``kubectl auth whoami``), and ``serviceaccounts/token`` (``kubectl create
token``), which issues a further bearer token for the account.
"""

from __future__ import annotations

import secrets
import time
from collections import Counter
from dataclasses import dataclass

from aiohttp import web

from pumice.sim.errors import (
    ApiError,
    SimSettingsError,
    bad_request,
    method_not_allowed,
    no_such_path,
    not_found,
)
from pumice.sim.objects import Obj, now_rfc3339
from pumice.sim.rbac import (
    ANONYMOUS,
    AUTHENTICATED,
    MASTERS,
    SA_PREFIX,
    Attributes,
    Decision,
    RbacAuthorizer,
    User,
    forbidden_error,
)
from pumice.sim.registry import Registry
from pumice.sim.resources import (
    NAMESPACES,
    REVIEWS,
    SELF_SUBJECT_REVIEWS,
    SELF_SUBJECT_RULES_REVIEWS,
    SERVICE_ACCOUNTS,
)
from pumice.sim.rest import RequestInfo, json_response, read_json

ADMIN_TOKEN = "pumice-sim"
ADMIN = User("kubernetes-admin", (MASTERS, AUTHENTICATED))
MODES = ("none", "rbac")


def unauthorized() -> ApiError:
    return ApiError(401, "Unauthorized", "Unauthorized")


def attributes_of(info: RequestInfo, verb: str, *, field_selector: str = "") -> Attributes:
    """The authorizer's view of a request, as the real request-info factory builds it:
    a request on a Namespace object is made *in* that namespace, and a list or watch whose
    field selector pins ``metadata.name`` is made on that name (so ``resourceNames`` rules
    allow ``kubectl get pod x -w``)."""
    name = info.name
    if not name and verb in ("list", "watch"):
        for term in field_selector.split(","):
            field, _, value = term.replace("==", "=").partition("=")
            if field.strip() == "metadata.name" and not field.endswith("!"):
                name = value.strip()
    namespace = info.namespace
    if info.resource == NAMESPACES.plural and name and not info.group:
        namespace = name
    return Attributes(verb, info.group, info.resource, info.subresource, namespace, name)


@dataclass(frozen=True, slots=True)
class Access:
    """One kind of request a user made (object names left out), and whether it was allowed."""

    user: str
    verb: str
    group: str
    resource: str
    subresource: str
    namespace: str
    allowed: bool


class AccessControl:
    """Authentication (tokens) and, in ``rbac`` mode, authorization for one server."""

    def __init__(self, registry: Registry, mode: str = "none") -> None:
        if mode not in MODES:
            raise SimSettingsError(
                f"authorization mode {mode!r}: expected one of {', '.join(MODES)}"
            )
        self.registry = registry
        self.mode = mode
        self.authorizer = RbacAuthorizer(registry.store) if mode == "rbac" else None
        self._tokens: dict[str, tuple[str, str]] = {}
        self._by_account: dict[tuple[str, str], str] = {}
        self.accesses: Counter[Access] = Counter()
        """What each user asked for in ``rbac`` mode, by kind of request: how a test proves a
        role is enough (no denials) and no more than needed (every rule was used)."""

    # -- authentication ------------------------------------------------------------------

    def token_for(self, namespace: str, name: str) -> str:
        """A bearer token for the ServiceAccount ``namespace/name`` (created if missing)."""
        key = (namespace, name)
        token = self._by_account.get(key)
        if self.registry.store.get(SERVICE_ACCOUNTS.table, key) is None:
            self.registry.create_object(
                {
                    "apiVersion": "v1",
                    "kind": "ServiceAccount",
                    "metadata": {"name": name, "namespace": namespace},
                }
            )
        if token is None:
            token = self._by_account[key] = self.issue_token(namespace, name)
        return token

    def issue_token(self, namespace: str, name: str) -> str:
        """A new bearer token for an existing account (valid while the account exists;
        tokens do not expire in the simulated server)."""
        token = f"pumice-sa.{secrets.token_urlsafe(24)}"
        self._tokens[token] = (namespace, name)
        return token

    def identify(self, request: web.BaseRequest) -> User:
        """The caller: authenticated, then impersonated when it asks to (``kubectl --as``)."""
        user = self._authenticate(request)
        wanted = request.headers.get("Impersonate-User", "")
        if not wanted:
            return user
        groups = tuple(request.headers.getall("Impersonate-Group", ()))
        if wanted.startswith(SA_PREFIX):
            ns, _, name = wanted[len(SA_PREFIX) :].partition(":")
            target = User.service_account(ns, name)
            attrs = Attributes("impersonate", "", SERVICE_ACCOUNTS.plural, "", ns, name)
        else:
            target = User(wanted, (*groups, AUTHENTICATED))
            attrs = Attributes("impersonate", "", "users", "", "", wanted)
        decision = self.decide(user, attrs)
        if not decision.allowed:
            raise forbidden_error(user, attrs, decision.reason)
        return target

    def _authenticate(self, request: web.BaseRequest) -> User:
        header = request.headers.get("Authorization", "")
        if not header:
            return ANONYMOUS
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer":
            if self.authorizer is None:
                return ADMIN
            raise unauthorized()
        token = token.strip()
        key = self._tokens.get(token)
        if key is not None:
            if self.registry.store.get(SERVICE_ACCOUNTS.table, key) is None:
                raise unauthorized()
            return User.service_account(*key)
        if token == ADMIN_TOKEN or self.authorizer is None:
            # without authorization any token is the admin, as before tokens existed
            return ADMIN
        raise unauthorized()

    # -- authorization -------------------------------------------------------------------

    def decide(self, user: User, attrs: Attributes) -> Decision:
        if self.authorizer is None:
            return Decision(True, "")
        return self.authorizer.authorize(user, attrs)

    def check(self, request: web.BaseRequest, info: RequestInfo, verb: str) -> User:
        """The caller, once allowed to make this resource request (401/403 otherwise)."""
        user = self.identify(request)
        if self.authorizer is None:
            return user
        attrs = attributes_of(info, verb, field_selector=request.query.get("fieldSelector", ""))
        decision = self.authorizer.authorize(user, attrs)
        self.accesses[
            Access(
                user.name,
                attrs.verb,
                attrs.group,
                attrs.resource,
                attrs.subresource,
                attrs.namespace,
                decision.allowed,
            )
        ] += 1
        if not decision.allowed:
            raise forbidden_error(user, attrs, decision.reason)
        return user

    # -- what this module answers itself ------------------------------------------------

    @staticmethod
    def serves(info: RequestInfo) -> bool:
        """Reviews and ServiceAccount tokens: answered here, never stored."""
        if any(info.resource == rtype.plural for rtype in REVIEWS):
            return True
        return info.resource == SERVICE_ACCOUNTS.plural and info.subresource == "token"

    async def handle(
        self, request: web.BaseRequest, info: RequestInfo, verb: str, user: User
    ) -> web.Response:
        if info.subresource == "token":
            return await self._token_request(request, info, verb)
        for rtype in REVIEWS:
            if (info.group, info.version, info.resource) == (
                rtype.group,
                rtype.version,
                rtype.plural,
            ):
                break
        else:
            raise no_such_path()
        if info.namespace:
            raise no_such_path()
        if verb != "create" or info.name:
            raise method_not_allowed()
        body = await read_json(request)
        if not isinstance(body, dict):
            raise bad_request("the body of the request must be a JSON object")
        if rtype is SELF_SUBJECT_REVIEWS:
            status: Obj = {"userInfo": {"username": user.name, "groups": list(user.groups)}}
        elif rtype is SELF_SUBJECT_RULES_REVIEWS:
            status = self._rules_review(user, body.get("spec") or {})
        else:
            status = self._access_review(user, body.get("spec") or {})
        answer: Obj = {
            "kind": rtype.kind,
            "apiVersion": rtype.api_version,
            "metadata": {"creationTimestamp": None},
            **({"spec": body.get("spec") or {}} if rtype is not SELF_SUBJECT_REVIEWS else {}),
            "status": status,
        }
        return json_response(answer, 201)

    def _access_review(self, user: User, spec: Obj) -> Obj:
        attrs_in = spec.get("resourceAttributes")
        if isinstance(attrs_in, dict):
            attrs = Attributes(
                str(attrs_in.get("verb", "")),
                str(attrs_in.get("group", "")),
                str(attrs_in.get("resource", "")),
                str(attrs_in.get("subresource", "")),
                str(attrs_in.get("namespace", "")),
                str(attrs_in.get("name", "")),
            )
            decision = self.decide(user, attrs)
        elif isinstance(spec.get("nonResourceAttributes"), dict):
            decision = Decision(True, "non-resource paths are open in the simulated server")
        else:
            raise _review_invalid()
        status: Obj = {"allowed": decision.allowed}
        if decision.reason:
            status["reason"] = decision.reason
        return status

    def _rules_review(self, user: User, spec: Obj) -> Obj:
        namespace = str(spec.get("namespace") or "")
        if self.authorizer is None:
            rules: list[Obj] = [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]
            problems: list[str] = []
        else:
            rules, problems = self.authorizer.rules_for(user, namespace)
        keys = ("verbs", "apiGroups", "resources", "resourceNames")
        resource_rules = [
            {k: list(r[k]) for k in keys if r.get(k)} for r in rules if r.get("resources")
        ]
        status: Obj = {
            "resourceRules": resource_rules,
            # non-resource paths are open to everyone in the simulated server
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
            "incomplete": False,
        }
        if problems:
            status["evaluationError"] = ", ".join(problems)
        return status

    async def _token_request(
        self, request: web.BaseRequest, info: RequestInfo, verb: str
    ) -> web.Response:
        """``kubectl create token NAME``: a new bearer token for an existing account."""
        if verb != "create":
            raise method_not_allowed()
        key = (info.namespace, info.name)
        if self.registry.store.get(SERVICE_ACCOUNTS.table, key) is None:
            raise not_found(SERVICE_ACCOUNTS.plural, "", name=info.name)
        body = await read_json(request)
        spec = (body.get("spec") if isinstance(body, dict) else None) or {}
        seconds = int(spec.get("expirationSeconds") or 3600)
        token = self.issue_token(*key)
        return json_response(
            {
                "kind": "TokenRequest",
                "apiVersion": "authentication.k8s.io/v1",
                "metadata": {"name": info.name, "namespace": info.namespace},
                "spec": {**spec, "expirationSeconds": seconds},
                "status": {
                    "token": token,
                    "expirationTimestamp": now_rfc3339(time.time() + seconds),
                },
            },
            201,
        )


def _review_invalid() -> ApiError:
    return ApiError(
        422,
        "Invalid",
        'SelfSubjectAccessReview.authorization.k8s.io "" is invalid: spec.resourceAttributes: '
        'Invalid value: "null": exactly one of nonResourceAttributes or resourceAttributes '
        "must be specified",
    )
