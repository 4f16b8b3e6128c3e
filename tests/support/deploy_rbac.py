"""Run a scenario as pumice's ServiceAccount against a sim that enforces conf/deploy's RBAC.

``run_as_pumice(make_sim, scenario)`` starts a sim with ``--authorization rbac``, seeds the
RBAC of ``conf/deploy/rbac.yaml`` (or a variant, e.g. ``without_grant(...)``), runs
``scenario(sim)`` — which acts through ``sim.client(PUMICE_ACCOUNT)`` or a kubeconfig from
``sim.kubeconfig_for(PUMICE_ACCOUNT)`` handed to a pumice process — and returns what the
ServiceAccount was refused and which grants it used. The least-privilege proof is then:
the full scenario has no refusals, uses every grant, and fails somewhere for each
``without_grant(rbac_objects(), grant)``.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pumice.manifests import load_manifests

Obj = dict[str, Any]
Grant = tuple[str, str, str]
"""(API group, resource or resource/subresource, verb), e.g. ("", "pods/binding", "create")."""

DEPLOY = Path(__file__).resolve().parents[2] / "conf" / "deploy"
PUMICE_ACCOUNT = "kube-system/pumice"
PUMICE_USER = "system:serviceaccount:kube-system:pumice"
RBAC_KINDS = ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")


def rbac_objects() -> list[Obj]:
    """The ServiceAccount, roles and bindings of conf/deploy, as plain dicts."""
    manifests = load_manifests(DEPLOY / "rbac.yaml")
    return [obj for kind in RBAC_KINDS for obj in manifests.kind(kind)]


def grants(objects: list[Obj]) -> set[Grant]:
    """Every (group, resource, verb) that the roles among ``objects`` grant."""
    result: set[Grant] = set()
    for obj in objects:
        for rule in obj.get("rules") or ():
            for group in rule.get("apiGroups") or ():
                for resource in rule.get("resources") or ():
                    for verb in rule.get("verbs") or ():
                        result.add((group, resource, verb))
    return result


def without_grant(objects: list[Obj], grant: Grant) -> list[Obj]:
    """A copy of ``objects`` whose roles no longer grant ``grant`` (other grants unchanged)."""
    group, resource, verb = grant
    result = []
    for obj in copy.deepcopy(objects):
        rules = []
        for rule in obj.get("rules") or ():
            if (
                group in rule.get("apiGroups", ())
                and resource in rule.get("resources", ())
                and verb in rule.get("verbs", ())
            ):
                # split the rule: everything it granted except this one triple
                for g in rule["apiGroups"]:
                    for r in rule["resources"]:
                        verbs = [v for v in rule["verbs"] if (g, r, v) != grant]
                        if verbs:
                            rules.append(
                                {**rule, "apiGroups": [g], "resources": [r], "verbs": verbs}
                            )
            else:
                rules.append(rule)
        if "rules" in obj:
            obj["rules"] = rules
        result.append(obj)
    return result


@dataclass
class PumiceRun:
    """What a scenario did as pumice: its result, the sim (still running until the test
    ends), every refused request and every grant used."""

    sim: Any
    result: Any
    refused: list[Grant]
    used: set[Grant]


def accesses_of(sim: Any, user: str = PUMICE_USER) -> tuple[list[Grant], set[Grant]]:
    """(refused, allowed) requests of ``user`` so far, as grants."""
    refused: list[Grant] = []
    used: set[Grant] = set()
    for access in sim.server.access.accesses:
        if access.user != user:
            continue
        resource = access.resource + (f"/{access.subresource}" if access.subresource else "")
        grant = (access.group, resource, access.verb)
        if access.allowed:
            used.add(grant)
        else:
            refused.append(grant)
    return refused, used


async def start_rbac_sim(make_sim: Any, objects: list[Obj] | None = None, **config: Any) -> Any:
    """A sim enforcing RBAC, seeded with ``objects`` (default: conf/deploy's RBAC)."""
    sim = await make_sim(authorization="rbac", **config)
    sim.server.seed(rbac_objects() if objects is None else objects)
    return sim


async def run_as_pumice(
    make_sim: Any,
    scenario: Callable[[Any], Awaitable[Any]],
    objects: list[Obj] | None = None,
    **config: Any,
) -> PumiceRun:
    """Start an RBAC sim with ``objects``, run ``scenario(sim)``, report what pumice's
    ServiceAccount was refused and used."""
    sim = await start_rbac_sim(make_sim, objects, **config)
    result = await scenario(sim)
    refused, used = accesses_of(sim)
    return PumiceRun(sim, result, refused, used)
