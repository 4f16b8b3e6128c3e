"""``SimServer``: the simulated Kubernetes API server, assembled and served on loopback.

It wires the store, the registry (API verbs), watches, the KWOK-like lifecycle, the volume
controllers, fault
injection, the write log and the admin endpoint into one aiohttp application with a single
catch-all route (one dispatch function is cheaper than aiohttp's router and mirrors the real
server's request-info parsing). It listens on 127.0.0.1 only (HTTPS with a throw-away CA when
``authorization="rbac"``, whose requests ``pumice.sim.access`` authenticates and authorizes).
Use it in-process::

    server = SimServer(SimConfig(pod_start_delay=0.05))
    server.seed(objects)            # or server.registry.create_object(manifest)
    await server.start()            # port 0: a free port
    server.write_kubeconfig(path)
    ...
    await server.stop()
"""

from __future__ import annotations

import asyncio
import base64
import logging
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from aiohttp import web

from pumice.sim.access import ADMIN_TOKEN, AccessControl
from pumice.sim.admin import MUTATING_METHODS, WriteLog, WriteRecord, handle_admin
from pumice.sim.defaults import default_objects
from pumice.sim.discovery import VERSION, Discovery, api_versions
from pumice.sim.errors import ApiError, internal, no_such_path
from pumice.sim.faults import RESPONSE_HEADERS, Faults, FlowControl
from pumice.sim.lifecycle import Lifecycle, LifecycleConfig
from pumice.sim.managedfields import writing
from pumice.sim.objects import Obj
from pumice.sim.provisioner import VolumeConfig
from pumice.sim.rbac import bootstrap_policy
from pumice.sim.registry import Registry
from pumice.sim.resources import EVERY_TYPE, for_object, served_types
from pumice.sim.rest import DRY_RUN, ResourceApi, error_response, json_response, parse_path, verb_of
from pumice.sim.store import Store
from pumice.sim.volumes import VolumeControllers
from pumice.sim.watch import WatchHub

if TYPE_CHECKING:  # cryptography is imported only when TLS is used
    from pumice.sim.tls import ServingCert

log = logging.getLogger("pumice.sim")

HOST = "127.0.0.1"
_SEED_ORDER = {"Namespace": 0, "PriorityClass": 1, "Pod": 3}


@dataclass(frozen=True)
class SimConfig:
    pod_start_delay: float = 0.2
    """Seconds from binding to Running."""
    pod_termination_delay: float = 0.5
    """Upper bound on how long a gracefully deleted pod lingers."""
    history_size: int = 10_000
    """Changes retained per resource for watches from an older resourceVersion."""
    bookmark_interval: float = 60.0
    watch_timeout: float = 1800.0
    """Watch duration when the client sends no timeoutSeconds."""
    seed: int | None = 0
    """Seed for generated names and fault sampling."""
    defaults: bool = True
    """Start with the default namespaces, system PriorityClasses and Volcano's default Queue."""
    max_body: int = 16 * 1024 * 1024
    authorization: str = "none"
    """``none`` (everyone may do everything) or ``rbac`` (see ``pumice.sim.access``)."""
    priority_and_fairness: bool = True
    """Mark every API answer with API Priority and Fairness' headers, as a current server
    does (False: an old server, or one with APF off). ``SimServer.flow.shed_above`` makes it
    shed load with 429 too."""
    volcano: bool = True
    """Serve Volcano's ``scheduling.volcano.sh`` group (PodGroups, Queues). False is a cluster
    without its CRDs: discovery omits the group, its paths answer 404, seeding its kinds fails."""
    storage: bool = True
    """Serve PersistentVolumeClaims, PersistentVolumes and ``storage.k8s.io`` (StorageClasses,
    CSINodes, CSIDrivers), and play the volume controllers (``pumice.sim.volumes``). False is
    a cluster without them, as ``volcano=False`` is one without Volcano."""
    fail_provisioning: float = 0.0
    """Fraction of volume provisioning attempts that fail (``VolumeControllers``)."""
    provisioning_delay: float = 0.0
    """Seconds each volume provisioning attempt takes."""


def _uid(obj: Obj) -> object:
    return (obj.get("metadata") or {}).get("uid")


class SimServer:
    def __init__(self, config: SimConfig | None = None) -> None:
        self.config = config or SimConfig()
        self.store = Store(self.config.history_size)
        self.types = served_types(self.config.volcano, self.config.storage)
        self.discovery = Discovery(self.types)
        self.registry = Registry(self.store, self.config.seed, self.types)
        self.hub = WatchHub()
        self.faults = Faults(self, self.config.seed)
        self.flow = FlowControl(self.config.priority_and_fairness)
        self.writes = WriteLog()
        self.lifecycle = Lifecycle(
            self.store,
            LifecycleConfig(self.config.pod_start_delay, self.config.pod_termination_delay),
        )
        self.volumes = VolumeControllers(
            self.registry,
            VolumeConfig(
                self.config.fail_provisioning, self.config.provisioning_delay, self.config.seed
            ),
        )
        self.api = ResourceApi(
            self.registry,
            self.store,
            self.hub,
            self.config.bookmark_interval,
            self.config.watch_timeout,
            self.types,
        )
        self._absent_groups = EVERY_TYPE.groups - self.types.groups
        self.unserved: deque[tuple[str, str]] = deque(maxlen=10_000)
        """(method, path) of each request for a group this server does not serve, discovery
        included (Volcano's, when ``volcano=False``): what clients asked of absent CRDs."""
        self._runner: web.ServerRunner | None = None
        self._site: web.TCPSite | None = None
        self.port = 0
        self.notes: list[str] = []
        """What seeding did that a user should hear about (defaults replaced)."""
        self._defaults: dict[str, dict[tuple[str, str], Obj]] = {}
        if self.config.defaults:
            self._seed_defaults()
        self.access = AccessControl(self.registry, self.config.authorization)
        # identities need HTTPS: kubectl sends no token to an http:// server (pumice.sim.tls)
        self.tls: ServingCert | None = None
        if self.config.authorization == "rbac":
            self.seed(bootstrap_policy())
            # Imported here: cryptography is needed only when TLS is (and costs start-up time).
            from pumice.sim.tls import make_serving_cert

            self.tls = make_serving_cert(HOST)

    # -- seeding -------------------------------------------------------------------------

    def _seed_defaults(self) -> None:
        for obj in default_objects(volcano=self.config.volcano):
            stored = self.registry.create_object(obj)
            rtype = for_object(str(obj["apiVersion"]), str(obj["kind"]))
            assert rtype is not None and not rtype.namespaced
            self._defaults.setdefault(str(obj["kind"]), {})[("", obj["metadata"]["name"])] = stored

    def seed(self, objects: Iterable[Obj], validate: bool = True) -> int:
        """Store manifests (namespaces first, then the rest in order); returns how many.

        Each is decoded and validated as a ``fieldValidation=Strict`` create would be (an
        ``ApiError`` whose ``problem`` names the field); ``validate=False`` is for tests that
        need objects a real server refuses. A seeded object named like one of the built-in
        defaults (the ``default`` Queue, a default namespace) replaces it, noted in ``notes``.
        """
        ordered = sorted(objects, key=lambda o: _SEED_ORDER.get(str(o.get("kind")), 2))
        count = 0
        for obj in ordered:
            kind = str(obj.get("kind"))
            name = (obj.get("metadata") or {}).get("name")
            rtype = for_object(str(obj.get("apiVersion", "")), kind)
            key = ("", str(name))
            default = self._defaults.get(kind, {}).get(key)
            if rtype is not None and not rtype.namespaced and default is not None:
                stored = self.store.get(rtype.table, key)
                if stored is not None and _uid(stored) == _uid(default):
                    self.store.commit(rtype.table, key, None)
                    self.notes.append(f"{kind} {name} replaces the built-in default")
                elif stored is not None and kind == "Namespace":
                    continue
            elif kind == "Namespace" and ("", name) in self.store.table("/namespaces"):
                continue
            self.registry.create_object(obj, validate=validate)
            count += 1
        return count

    # -- serving -------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://{HOST}:{self.port}"

    async def start(self, port: int = 0) -> None:
        # aiohttp's low-level server: one handler, no router or middleware on the hot path
        server = web.Server(
            self._dispatch, request_factory=self._make_request, handler_cancellation=True
        )
        runner = web.ServerRunner(server, shutdown_timeout=2.0)
        await runner.setup()
        self._runner = runner
        await self._listen(port)
        self.lifecycle.start()
        if self.config.storage:
            self.volumes.start()

    def _make_request(
        self,
        message: Any,
        payload: Any,
        protocol: Any,
        writer: Any,
        task: asyncio.Task[None],
    ) -> web.BaseRequest:
        loop = asyncio.get_running_loop()
        return web.BaseRequest(
            message, payload, protocol, writer, task, loop, client_max_size=self.config.max_body
        )

    async def _listen(self, port: int) -> None:
        assert self._runner is not None
        context = self.tls.server_context() if self.tls is not None else None
        site = web.TCPSite(self._runner, HOST, port, ssl_context=context)
        await site.start()
        self._site = site
        self.port = int(self._runner.addresses[0][1])

    async def stop(self) -> None:
        self.lifecycle.stop()
        self.volumes.stop()
        await self.faults.stop()
        self.hub.close_all()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def kubeconfig(
        self, user: str = "pumice-sim", *, token: str = ADMIN_TOKEN, namespace: str = "default"
    ) -> str:
        """A kubeconfig for this server; by default the admin's (``system:masters``)."""
        cluster: Obj = {"server": self.url}
        if self.tls is not None:
            cluster["certificate-authority-data"] = base64.b64encode(self.tls.ca_pem).decode()
        return yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "pumice-sim", "cluster": cluster}],
                "users": [{"name": user, "user": {"token": token}}],
                "contexts": [
                    {
                        "name": "pumice-sim",
                        "context": {
                            "cluster": "pumice-sim",
                            "user": user,
                            "namespace": namespace,
                        },
                    }
                ],
                "current-context": "pumice-sim",
                "preferences": {},
            },
            sort_keys=False,
        )

    def write_kubeconfig(self, path: str | Path) -> Path:
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(self.kubeconfig())
        return target

    def write_kubeconfig_for(self, namespace: str, name: str, path: str | Path) -> Path:
        """A kubeconfig acting as the ServiceAccount ``namespace/name`` (created if missing)."""
        token = self.access.token_for(namespace, name)
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(self.kubeconfig(f"{namespace}-{name}", token=token, namespace=namespace))
        return target

    def state(self) -> Obj:
        counts = {}
        for rtype in self.types.types:
            counts[f"{rtype.plural}.{rtype.group}" if rtype.group else rtype.plural] = len(
                self.store.table(rtype.table)
            )
        return {
            "resourceVersion": str(self.store.rv),
            "compacted": str(self.store.compacted),
            "objects": counts,
            "watches": len(self.hub.watchers),
            "writes": len(self.writes),
        }

    # -- fault targets -------------------------------------------------------------------

    def close_watches(self, abort: bool = False) -> int:
        return self.hub.close_all(abort)

    def compact(self) -> int:
        return self.store.compact()

    async def drop_connections(self, downtime: float = 0.0, keep: object = None) -> int:
        """Abort every connection (except ``keep``); stop listening for ``downtime`` s."""
        self.hub.close_all(abort=True)
        dropped = 0
        if self._runner is not None and self._runner.server is not None:
            for handler in self._runner.server.connections:
                transport = handler.transport
                if transport is not None and transport is not keep:
                    transport.abort()
                    dropped += 1
        if downtime > 0 and self._site is not None:
            await self._site.stop()
            self._site = None
            await asyncio.sleep(downtime)
            await self._listen(self.port)
        return dropped

    # -- request dispatch ----------------------------------------------------------------

    async def _dispatch(self, request: web.BaseRequest) -> web.StreamResponse:
        path = request.path
        if path.startswith("/sim/"):
            return await handle_admin(self, request)
        if self._absent_groups and path.startswith("/apis/"):
            self._note_unserved(request.method, path)
        method = request.method
        info = parse_path(path)
        verb = verb_of(method, info, request.query) if info is not None else method.lower()
        faults = self.faults
        if faults.latency:
            await asyncio.sleep(faults.latency)
        resp: web.StreamResponse
        flow = self.flow
        request[RESPONSE_HEADERS] = flow.headers
        try:
            rejected = flow.admit()
            if rejected is not None:
                raise rejected
            if faults.errors:
                err = faults.pick(verb, info.qualified_resource if info is not None else path)
                if err is not None:
                    raise err
            if info is None:
                resp = self._non_resource(request, path)
            else:
                user = self.access.check(request, info, verb)
                if self.access.serves(info):
                    resp = await self.access.handle(request, info, verb, user)
                else:
                    with writing(request.query.get("fieldManager", "")):
                        resp = await self.api.handle(request, info, verb)
        except ApiError as exc:
            resp = error_response(exc)
        except (asyncio.CancelledError, ConnectionError):
            raise
        except Exception as exc:
            log.exception("sim: %s %s failed", method, path)
            resp = error_response(internal(f"{type(exc).__name__}: {exc}"))
        if not resp.prepared:  # a watch sent them itself (RESPONSE_HEADERS)
            resp.headers.update(flow.headers)
        # a dry run changes nothing, so it is no write (pumice.sim.rest, DRY_RUN)
        if method in MUTATING_METHODS and not request.get(DRY_RUN):
            self.writes.record(
                WriteRecord(
                    time=time.time(),
                    verb=verb,
                    method=method,
                    path=path,
                    query=request.query_string,
                    user_agent=request.headers.get("User-Agent", ""),
                    code=resp.status,
                    resource=info.qualified_resource if info is not None else "",
                    namespace=info.namespace if info is not None else "",
                    name=info.name if info is not None else "",
                )
            )
        return resp

    def _note_unserved(self, method: str, path: str) -> None:
        group = path.split("/", 3)[2]
        if group in self._absent_groups:
            self.unserved.append((method, path))

    def _non_resource(self, request: web.BaseRequest, path: str) -> web.StreamResponse:
        if request.method not in ("GET", "HEAD"):
            raise no_such_path()
        path = path.rstrip("/") or "/"
        parts = [p for p in path.split("/") if p]
        if path in ("/healthz", "/livez", "/readyz"):
            return web.Response(text="ok", content_type="text/plain")
        if path == "/version":
            return json_response(VERSION)
        if path == "/api":
            return json_response(api_versions(f"{HOST}:{self.port}"))
        if path == "/apis":
            return json_response(self.discovery.api_group_list())
        if len(parts) == 2 and parts[0] == "api":
            found = self.discovery.resource_list("", parts[1])
        elif len(parts) == 2 and parts[0] == "apis":
            found = self.discovery.api_group(parts[1])
        elif len(parts) == 3 and parts[0] == "apis":
            found = self.discovery.resource_list(parts[1], parts[2])
        elif path == "/openapi/v3":
            found = self.discovery.openapi_v3_root()
        elif path.startswith("/openapi/v3/"):
            doc = self.discovery.openapi_v3_doc(path[len("/openapi/v3/") :])
            if doc is None:
                raise no_such_path()
            return web.Response(body=doc, content_type="application/json")
        else:
            found = None
        if found is None:
            raise no_such_path()
        return json_response(found)
