"""Discovery and the other non-resource endpoints kubectl and clients read.

``/api``, ``/apis``, ``/api/v1``, ``/apis/{group}``, ``/apis/{group}/{version}`` describe the
served resources (legacy discovery documents; kubectl falls back to them when the server does
not offer aggregated discovery), ``/version`` reports a v1.32 server (the installed kubectl
dispatcher picks its client version from it), ``/healthz``, ``/livez`` and ``/readyz`` answer
``ok``, and ``/openapi/v3`` describes just enough (the PATCH operations and their
``fieldValidation`` parameter) for kubectl to use server-side field validation instead of
downloading a schema. What they list is one server's ``ResourceSet``: a server without
Volcano's CRDs names no ``scheduling.volcano.sh`` anywhere, as a real cluster without them.
"""

from __future__ import annotations

import hashlib

import orjson

from pumice.sim.objects import Obj
from pumice.sim.resources import ResourceSet, ResourceType

VERSION: Obj = {
    "major": "1",
    "minor": "32",
    "gitVersion": "v1.32.0-pumice-sim",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2025-01-01T00:00:00Z",
    "goVersion": "go1.23.0",
    "compiler": "gc",
    "platform": "linux/amd64",
}

_SUBRESOURCE_KINDS = {
    "binding": ("Binding", "", "", ("create",)),
    "eviction": ("Eviction", "policy", "v1", ("create",)),
    "status": ("", "", "", ("get", "patch", "update")),
    "finalize": ("", "", "", ("update",)),
    "token": ("TokenRequest", "authentication.k8s.io", "v1", ("create",)),
}


def _resource_entries(rtype: ResourceType) -> list[Obj]:
    entry: Obj = {
        "name": rtype.plural,
        "singularName": rtype.singular,
        "namespaced": rtype.namespaced,
        "kind": rtype.kind,
        "verbs": list(rtype.verbs),
    }
    if rtype.short_names:
        entry["shortNames"] = list(rtype.short_names)
    if rtype.categories:
        entry["categories"] = list(rtype.categories)
    out = [entry]
    for sub in rtype.subresources:
        kind, group, version, verbs = _SUBRESOURCE_KINDS[sub]
        sub_entry: Obj = {
            "name": f"{rtype.plural}/{sub}",
            "singularName": "",
            "namespaced": rtype.namespaced,
            "kind": kind or rtype.kind,
            "verbs": list(verbs),
        }
        if group:
            sub_entry["group"] = group
            sub_entry["version"] = version
        out.append(sub_entry)
    return out


def api_versions(address: str) -> Obj:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": address}],
    }


def _group(name: str, versions: list[str]) -> Obj:
    entries = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": entries, "preferredVersion": entries[0]}


# -- OpenAPI v3 (minimal) --------------------------------------------------------------------


def _openapi_doc(types: ResourceSet, group: str, version: str) -> Obj:
    paths: Obj = {}
    for rtype in types.types_in(group, version):
        prefix = f"/apis/{group}/{version}" if group else f"/api/{version}"
        ns = "/namespaces/{namespace}" if rtype.namespaced else ""
        gvk = {"group": group, "version": version, "kind": rtype.kind}
        params = [
            {"name": "fieldValidation", "in": "query", "schema": {"type": "string"}},
            {"name": "dryRun", "in": "query", "schema": {"type": "string"}},
        ]
        operation = {
            "x-kubernetes-action": "patch",
            "x-kubernetes-group-version-kind": gvk,
            "parameters": params,
            "responses": {},
        }
        post = {**operation, "x-kubernetes-action": "post"}
        paths[f"{prefix}{ns}/{rtype.plural}/{{name}}"] = {
            "patch": operation,
            "put": {**operation, "x-kubernetes-action": "put"},
        }
        paths[f"{prefix}{ns}/{rtype.plural}"] = {"post": post}
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": VERSION["gitVersion"]},
        "paths": paths,
        "components": {"schemas": {}},
    }


class Discovery:
    """The discovery and OpenAPI documents of one server, for the types it serves."""

    def __init__(self, types: ResourceSet) -> None:
        self.types = types
        self._group_versions = types.group_versions()
        self._openapi: dict[str, bytes] = {}
        for group, versions in self._group_versions.items():
            for version in versions:
                path = f"apis/{group}/{version}" if group else f"api/{version}"
                self._openapi[path] = orjson.dumps(_openapi_doc(types, group, version))

    def resource_list(self, group: str, version: str) -> Obj | None:
        types = self.types.types_in(group, version)
        if not types:
            return None
        resources: list[Obj] = []
        for rtype in types:
            resources.extend(_resource_entries(rtype))
        return {
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": f"{group}/{version}" if group else version,
            "resources": resources,
        }

    def api_group_list(self) -> Obj:
        groups = [_group(g, v) for g, v in self._group_versions.items() if g]
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}

    def api_group(self, name: str) -> Obj | None:
        versions = self._group_versions.get(name)
        if not name or not versions:
            return None
        return {"kind": "APIGroup", "apiVersion": "v1", **_group(name, versions)}

    def openapi_v3_root(self) -> Obj:
        return {
            "paths": {
                path: {
                    "serverRelativeURL": f"/openapi/v3/{path}?hash="
                    + hashlib.sha256(doc).hexdigest()[:32].upper()
                }
                for path, doc in self._openapi.items()
            }
        }

    def openapi_v3_doc(self, path: str) -> bytes | None:
        return self._openapi.get(path)
