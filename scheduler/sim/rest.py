"""REST routing: from an HTTP request to a registry verb and back to JSON, dry runs included.

``parse_path`` turns a URL into a ``RequestInfo`` the way the real server's request-info
factory does (``/api/v1/namespaces/ns/pods/name/binding``, ``/apis/group/version/...``, the
legacy ``/watch/`` prefix, ``namespaces/{name}/status``), and ``verb_of`` names the
Kubernetes verb (get, list, watch, create, update, patch, delete, deletecollection).
``ResourceApi.handle`` runs it: bodies are parsed with orjson (protobuf ones with
``pumice.sim.protobuf``) and then validated (``pumice.sim.validation``), selectors and paging
parameters are read from the query, ``kubectl``'s ``as=Table`` requests get server-side
printed tables, and watches are handed to ``pumice.sim.watch``.

**Dry-run requests** (``?dryRun=All``, or ``dryRun`` in the DeleteOptions of a deletion or an
eviction, where kubectl puts it): the whole request runs, nothing is kept. The real server sends
a dry-run request through decoding, defaulting, validation and admission exactly like the real
one and stops right before storage, answering with the object it would have stored. We get the
same by running the ordinary handler with the store in dry-run mode: ``Store.commit`` then
answers with the change it would make, without storing it, taking a resourceVersion, recording
history or telling watchers and the KWOK-like lifecycle. Every verb gets it for free (create,
update, patch, delete, deletecollection, status, binding, eviction, namespace deletion), because
all of them end in ``Store.commit``. A dry run must not shift what later real requests see
either: the registry's random generator (``generateName`` suffixes) and the node address
allocator are restored afterwards. The write log leaves dry-run requests out
(``pumice.sim.server`` reads the request's ``DRY_RUN`` mark).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import web
from multidict import MultiMapping

from pumice.sim import pods, protobuf, tables
from pumice.sim.apply import is_apply, server_side_apply
from pumice.sim.errors import ApiError, bad_request, invalid, method_not_allowed, no_such_path
from pumice.sim.objects import Obj
from pumice.sim.registry import Registry
from pumice.sim.resources import BINDINGS, EVERY_TYPE, ResourceSet, ResourceType
from pumice.sim.selectors import build_selector
from pumice.sim.store import Store
from pumice.sim.validation import Checks
from pumice.sim.watch import WatchHub, WatchRequest, serve_watch

JSON = "application/json"
_NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})
_TRUE = frozenset({"true", "True", "1"})


@dataclass(frozen=True, slots=True)
class RequestInfo:
    """What a resource URL addresses."""

    group: str
    version: str
    namespace: str
    resource: str
    name: str
    subresource: str
    watch_path: bool

    @property
    def qualified_resource(self) -> str:
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource


def parse_path(path: str) -> RequestInfo | None:
    """The resource a path addresses, or None for non-resource paths (discovery...)."""
    parts = [p for p in path.split("/") if p]
    if len(parts) >= 3 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 4 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    watch_path = False
    if rest[0] == "watch":
        watch_path = True
        rest = rest[1:]
        if not rest:
            return None
    namespace = ""
    if rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
        else:
            # /namespaces/{name}[/status]: the namespace object itself
            return RequestInfo(
                group,
                version,
                "",
                "namespaces",
                rest[1],
                rest[2] if len(rest) > 2 else "",
                watch_path,
            )
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    sub = rest[2] if len(rest) > 2 else ""
    if len(rest) > 3:
        return None
    return RequestInfo(group, version, namespace, resource, name, sub, watch_path)


def verb_of(method: str, info: RequestInfo, query: MultiMapping[str]) -> str:
    if method == "GET":
        if info.watch_path or query.get("watch", "") in _TRUE:
            return "watch"
        return "get" if info.name else "list"
    if method == "POST":
        return "create"
    if method == "PUT":
        return "update"
    if method == "PATCH":
        return "patch"
    if method == "DELETE":
        return "delete" if info.name else "deletecollection"
    return method.lower()


def json_response(body: Obj, status: int = 200) -> web.Response:
    return web.Response(body=orjson.dumps(body), status=status, content_type=JSON)


def error_response(err: ApiError) -> web.Response:
    resp = web.Response(body=orjson.dumps(err.status()), status=err.code, content_type=JSON)
    for name, value in err.headers.items():
        resp.headers[name] = value
    return resp


async def read_json(request: web.BaseRequest, required: bool = True) -> Any:
    return parse_json(await request.read(), required, request.headers.get("Content-Type", ""))


def parse_json(raw: bytes, required: bool = True, content_type: str = JSON) -> Any:
    """A request body as JSON data; ``content_type`` says whether it came as protobuf
    (kubectl's creates of namespaces and priority classes), decoded to the same shape."""
    if not raw:
        if required:
            raise bad_request("the body of the request was empty")
        return None
    if protobuf.is_protobuf(content_type):
        return protobuf.decode_object(raw)
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise bad_request(f"the body of the request could not be decoded as JSON: {exc}") from None


def _int(query: MultiMapping[str], name: str, default: int) -> int:
    text = query.get(name)
    if text is None or text == "":
        return default
    try:
        return int(text)
    except ValueError:
        raise bad_request(f"invalid value for {name}: {text!r}") from None


class ResourceApi:
    """Handles every request that addresses a resource."""

    def __init__(
        self,
        registry: Registry,
        store: Store,
        hub: WatchHub,
        bookmark_interval: float,
        watch_timeout: float,
        types: ResourceSet = EVERY_TYPE,
    ) -> None:
        self.registry = registry
        self.types = types
        self.store = store
        self.hub = hub
        self.bookmark_interval = bookmark_interval
        self.watch_timeout = watch_timeout

    def resolve(self, info: RequestInfo) -> ResourceType:
        # a group the server does not serve (no Volcano CRDs) is as unknown as a typo
        rtype = self.types.lookup(info.group, info.version, info.resource)
        if rtype is None:
            raise no_such_path()
        if info.subresource and info.subresource not in rtype.subresources:
            raise no_such_path()
        if rtype.namespaced is False and info.namespace:
            raise no_such_path()
        return rtype

    async def handle(
        self, request: web.BaseRequest, info: RequestInfo, verb: str
    ) -> web.StreamResponse:
        rtype = self.resolve(info)
        query = request.query
        ns = info.namespace
        name = info.name
        if verb in ("list", "watch"):
            selector = build_selector(
                rtype, ns, query.get("labelSelector"), query.get("fieldSelector")
            )
            if verb == "watch":
                if info.name:
                    selector = build_selector(
                        rtype,
                        ns,
                        query.get("labelSelector"),
                        ",".join(
                            filter(None, [query.get("fieldSelector"), f"metadata.name={name}"])
                        ),
                    )
                return await self._watch(request, rtype, selector)
            return self._list(request, rtype, selector)
        if verb == "get":
            return self._get(request, rtype, ns, name)
        # the body is read before anything runs: what follows is synchronous, so a dry run
        # (which switches the store for its duration) never overlaps another request
        raw = await request.read()
        checks = Checks.from_query(query)
        if dry_run_requested(query, verb=verb, raw=raw, subresource=info.subresource):
            request[DRY_RUN] = True
            with running_dry(self.registry):
                resp = self._mutate(request, rtype, info, verb, raw, True, checks)
        else:
            resp = self._mutate(request, rtype, info, verb, raw, False, checks)
        for warning in checks.headers():
            resp.headers.add("Warning", warning)
        return resp

    def _mutate(
        self,
        request: web.BaseRequest,
        rtype: ResourceType,
        info: RequestInfo,
        verb: str,
        raw: bytes,
        dry_run: bool,
        checks: Checks,
    ) -> web.Response:
        query = request.query
        ns = info.namespace
        name = info.name
        sub = info.subresource
        # kubectl sends some creates as protobuf; a patch's Content-Type names its format
        content_type = request.headers.get("Content-Type", "")
        if verb == "deletecollection":
            selector = build_selector(
                rtype, ns, query.get("labelSelector"), query.get("fieldSelector")
            )
            return self._delete_collection(rtype, selector, parse_json(raw, False) or {})
        if sub == "binding" or rtype is BINDINGS:
            if verb != "create":
                raise method_not_allowed()
            body = parse_json(raw, True, content_type)
            if isinstance(body, dict):
                body = checks.check(BINDINGS, body)
            return json_response(pods.bind(self.registry, ns, name, body, dry_run), 201)
        if sub == "eviction":
            if verb != "create":
                raise method_not_allowed()
            return json_response(pods.evict(self.registry, ns, name, parse_json(raw)), 201)
        if verb == "create":
            if name:
                raise method_not_allowed()
            body = parse_json(raw, True, content_type)
            created = self.registry.create(rtype, ns, body, dry_run, checks)
            return json_response(created, 201)
        if verb == "update":
            body = parse_json(raw, True, content_type)
            return json_response(
                self.registry.update(rtype, ns, name, body, subresource=sub, checks=checks)
            )
        if verb == "patch" and is_apply(content_type):
            if sub:
                raise method_not_allowed()
            obj, code = server_side_apply(
                self.registry, rtype, ns, name, raw, query, dry_run, checks
            )
            return json_response(obj, code)
        if verb == "patch":
            body = parse_json(raw)
            return json_response(
                self.registry.patch(rtype, ns, name, content_type, body, sub, checks)
            )
        if verb == "delete":
            if sub:
                raise method_not_allowed()
            options = parse_json(raw, False) or {}
            if not isinstance(options, dict):
                raise bad_request("DeleteOptions must be a JSON object")
            if "gracePeriodSeconds" in query:
                options = {**options, "gracePeriodSeconds": _int(query, "gracePeriodSeconds", 0)}
            return json_response(self.registry.delete(rtype, ns, name, options))
        raise method_not_allowed()

    def _get(
        self, request: web.BaseRequest, rtype: ResourceType, ns: str, name: str
    ) -> web.Response:
        if tables.wants_table(request.headers.get("Accept", "")):
            stored = self.registry.current(rtype, ns, name)
            table = tables.to_table(
                rtype,
                [stored],
                {"resourceVersion": str(self.store.rv)},
                request.query.get("includeObject", "Metadata"),
            )
            return json_response(table)
        return json_response(self.registry.get(rtype, ns, name))

    def _list(self, request: web.BaseRequest, rtype: ResourceType, selector: Any) -> web.Response:
        query = request.query
        args = (
            rtype,
            selector,
            _int(query, "limit", 0),
            query.get("continue", ""),
            query.get("resourceVersion", ""),
            query.get("resourceVersionMatch", ""),
        )
        if tables.wants_table(request.headers.get("Accept", "")):
            stored, list_meta = self.registry.list_stored(*args)
            table = tables.to_table(
                rtype, stored, list_meta, query.get("includeObject", "Metadata")
            )
            return json_response(table)
        return json_response(self.registry.list_objects(*args))

    def _delete_collection(self, rtype: ResourceType, selector: Any, options: Obj) -> web.Response:
        stored, _ = self.registry.list_stored(rtype, selector)
        deleted = []
        for obj in stored:
            m = obj["metadata"]
            try:
                deleted.append(
                    self.registry.delete(rtype, m.get("namespace", ""), m["name"], options)
                )
            except ApiError as exc:
                if exc.code != 404:
                    raise
        return json_response(
            {
                "kind": f"{rtype.kind}List",
                "apiVersion": rtype.api_version,
                "metadata": {"resourceVersion": str(self.store.rv)},
                "items": deleted,
            }
        )

    async def _watch(
        self, request: web.BaseRequest, rtype: ResourceType, selector: Any
    ) -> web.StreamResponse:
        query = request.query
        timeout = _int(query, "timeoutSeconds", 0)
        wreq = WatchRequest(
            rtype=rtype,
            selector=selector,
            resource_version=query.get("resourceVersion", ""),
            timeout=float(timeout) if timeout > 0 else self.watch_timeout,
            bookmarks=query.get("allowWatchBookmarks", "") in _TRUE,
            send_initial_events=query.get("sendInitialEvents", "") in _TRUE,
            table=tables.wants_table(request.headers.get("Accept", "")),
        )
        return await serve_watch(request, self.store, self.hub, wreq, self.bookmark_interval)


ALL = "All"
DRY_RUN = web.RequestKey("pumice.dry_run", bool)
"""The key a dry-run request is marked with (aiohttp request state)."""

_OPTIONS_KIND = {
    "create": "CreateOptions",
    "update": "UpdateOptions",
    "patch": "PatchOptions",
    "delete": "DeleteOptions",
    "deletecollection": "DeleteOptions",
}


def dry_run_requested(query: MultiMapping[str], *, verb: str, raw: bytes, subresource: str) -> bool:
    """Whether the request asks for a dry run (in the query, or for deletions and evictions
    in the DeleteOptions of the body, where kubectl puts it); 422 for a value but ``All``."""
    values = list(query.getall("dryRun", [])) + _dry_run_in_body(raw, verb, subresource)
    if not values:
        return False
    if any(v != ALL for v in values):
        shown = ", ".join(f'"{v}"' for v in values)
        raise invalid(
            _OPTIONS_KIND.get(verb, "CreateOptions"),
            "meta.k8s.io",
            name="",
            causes=[
                (
                    "dryRun",
                    "FieldValueNotSupported",
                    f'Unsupported value: []string{{{shown}}}: supported values: "{ALL}"',
                )
            ],
        )
    return True


def _dry_run_in_body(raw: bytes, verb: str, subresource: str) -> list[str]:
    if not raw or not (verb in ("delete", "deletecollection") or subresource == "eviction"):
        return []
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return []  # the handler reports the malformed body
    if isinstance(body, dict) and subresource == "eviction":
        body = body.get("deleteOptions")
    values = body.get("dryRun") if isinstance(body, dict) else None
    return [str(v) for v in values] if isinstance(values, list) else []


@contextmanager
def running_dry(registry: Registry) -> Iterator[None]:
    """Run the body against ``registry`` with every write answered but none kept."""
    store = registry.store
    if store.dry_run:
        yield
        return
    rng_state = registry.rng.getstate()
    next_ip = registry.admission.next_node_ip
    store.dry_run = True
    try:
        yield
    finally:
        store.dry_run = False
        registry.rng.setstate(rng_state)
        registry.admission.next_node_ip = next_ip
