"""The API server connection: configuration loading, one aiohttp session, raw JSON requests.

``pumice.kube.kubeconfig`` reads the kubeconfig or the in-cluster service account (handing
plugin credentials and merged files to kubernetes_asyncio's loaders, which keep those tokens
fresh; the in-cluster token is re-read as it rotates); the ``Authorization`` header is asked
for on every request. pumice then talks to the server through its own aiohttp session built
from that configuration:

* ``trust_env`` is off: with it on, aiohttp reads ~/.netrc and the proxy environment in a
  worker thread on every request, which costs more CPU than a loopback request itself (the
  stock client reaches about 2,100 binds/s, this one 5,700/s in ``bench/bench_sim.py``). An
  explicit ``proxy-url`` from the kubeconfig is still honoured.
* Responses stay plain dicts parsed with orjson; the generated models are never built.
* Every request takes a token from a QPS/burst bucket first; a 429 is retried after the
  server's Retry-After (capped) up to ``max_retries`` times, then raised as TooManyRequests.
  By default the bucket sets no limit when the server shows API Priority and Fairness (its
  ``X-Kubernetes-PF-*`` headers: the server sheds load itself, with 429 and Retry-After), and
  paces at Volcano's 2,000/s with burst 2,000 when it does not (see ``RequestPacing``).
* Failures are typed (``pumice.kube.rest``); no ``ApiException`` or aiohttp error escapes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import ssl
import tempfile
from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from pumice.kube.kubeconfig import ClientConfig, check_exists, in_cluster, load_kubeconfig
from pumice.kube.ratelimit import Backoff, RequestPacing
from pumice.kube.rest import (
    Forbidden,
    Kind,
    KubeConfigError,
    KubeError,
    NotFound,
    ServerError,
    Unreachable,
    error_for,
)

log = logging.getLogger("pumice.kube")

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
_SERVICE_HOST = "KUBERNETES_SERVICE_HOST"
_READ_METHODS = frozenset({"GET", "HEAD"})
_DEFAULT_KUBECONFIG = "~/.kube/config"


@dataclass(frozen=True)
class KubeSettings:
    kubeconfig: str | None = None
    """None: $KUBECONFIG, then in-cluster, then ~/.kube/config."""
    qps: float | None = None
    """Client-side requests per second; None: decided by the server (``RequestPacing``);
    0: no limit."""
    burst: int | None = None
    """Requests allowed at once above ``qps``; None: as ``qps`` (or the fallback's); 0: no
    limit."""
    user_agent: str = "pumice"
    request_timeout: float = 30.0
    context: str | None = None
    """The kubeconfig context to use (None: its current-context)."""
    max_retries: int = 3
    """How often a 429 is retried (after its Retry-After) before TooManyRequests is raised."""
    retry_after_cap: float = 10.0
    """The longest Retry-After honoured; a 429 without one waits a capped backoff instead."""
    connection_limit: int = 100
    read_only: bool = False
    """Refuse every mutating request (dry-run's safety net): it raises Forbidden, unsent."""


@dataclass
class ClientStats:
    requests: int = 0
    """Requests sent (each retry counts)."""
    retries: int = 0
    """429s retried."""
    errors: dict[int, int] = field(default_factory=dict)
    """Error responses by status (0: no answer)."""


class Kube:
    """An authenticated connection to one API server."""

    def __init__(
        self,
        server: str,
        configuration: ClientConfig,
        settings: KubeSettings,
        session: aiohttp.ClientSession,
        ssl_context: ssl.SSLContext | bool,
    ) -> None:
        self.server = server.rstrip("/")
        self.settings = settings
        self.stats = ClientStats()
        self.pacing = RequestPacing(settings.qps, settings.burst)
        self.limiter = self.pacing.limiter
        self._configuration = configuration
        self._session = session
        self._ssl = ssl_context
        self._server_hostname = configuration.tls_server_name
        self._proxy = configuration.proxy
        # asked on every request: a rotated in-cluster token, a refreshed exec/gcp token
        self._authorization = configuration.authorization
        self._refresher: asyncio.Task[None] | None = None

    @property
    def session(self) -> aiohttp.ClientSession:
        """The aiohttp session (``trust_env`` off), for callers that need to inspect it."""
        return self._session

    async def __aenter__(self) -> Kube:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _headers(self, content_type: str | None) -> dict[str, str]:
        headers = {"Accept": JSON, "User-Agent": self.settings.user_agent}
        if content_type is not None:
            headers["Content-Type"] = content_type
        auth = await self._authorization()
        if auth:
            headers["Authorization"] = auth
        return headers

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, object] | None = None,
        body: object | None = None,
        content_type: str | None = None,
        timeout: float | None = None,
        max_retries: int | None = None,
    ) -> dict[str, Any]:
        """Send one request; the parsed JSON answer (``{}`` when empty) or a KubeError.

        ``content_type`` defaults to JSON when there is a body (pass ``MERGE_PATCH`` or
        ``STRATEGIC_MERGE_PATCH`` for patches). ``max_retries`` overrides how often a 429 is
        retried here (the evictor passes 0 and paces PodDisruptionBudget refusals itself).
        """
        if self.settings.read_only and method.upper() not in _READ_METHODS:
            raise Forbidden(
                f"{method} {path}: refused: this client is read-only (dry-run)",
                method=method,
                path=path,
            )
        retries = self.settings.max_retries if max_retries is None else max_retries
        data = None if body is None else orjson.dumps(body)
        if data is not None and content_type is None:
            content_type = JSON
        params = _query(query)
        client_timeout = aiohttp.ClientTimeout(total=timeout or self.settings.request_timeout)
        backoff: Backoff | None = None
        while True:
            status, raw, retry_after = await self._send(
                method, path, params, data, content_type, client_timeout
            )
            if status < 300:
                return _parse(raw) if raw else {}
            self.stats.errors[status] = self.stats.errors.get(status, 0) + 1
            parsed = _parse_quietly(raw)
            if status == 429 and retries > 0:
                retries -= 1
                self.stats.retries += 1
                backoff = backoff or Backoff(initial=0.5, cap=self.settings.retry_after_cap)
                delay = backoff.next()
                if retry_after is not None:
                    delay = min(retry_after, self.settings.retry_after_cap)
                log.debug("429 on %s %s; retrying in %.2fs", method, path, delay)
                await asyncio.sleep(delay)
                continue
            raise error_for(status, method, path, parsed, retry_after)

    async def _send(
        self,
        method: str,
        path: str,
        params: dict[str, str] | None,
        data: bytes | None,
        content_type: str | None,
        timeout: aiohttp.ClientTimeout,
    ) -> tuple[int, bytes, float | None]:
        await self.limiter.take()
        self.stats.requests += 1
        headers = await self._headers(content_type)
        try:
            async with self._session.request(
                method,
                self.server + path,
                params=params,
                data=data,
                headers=headers,
                timeout=timeout,
                ssl=self._ssl,
                proxy=self._proxy,
                server_hostname=self._server_hostname,
            ) as resp:
                raw = await resp.read()
                if not self.pacing.decided:
                    self.pacing.observe(resp.headers, self.server)
                return resp.status, raw, _retry_after(resp.headers.get("Retry-After"))
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            self.stats.errors[0] = self.stats.errors.get(0, 0) + 1
            raise Unreachable(
                f"{method} {path}: no answer from {self.server}: {_describe(exc)}",
                method=method,
                path=path,
            ) from None

    async def stream(
        self,
        path: str,
        query: Mapping[str, object] | None = None,
        *,
        read_timeout: float | None = None,
    ) -> AsyncGenerator[dict[str, Any], None]:
        """A watch: yields each event (``{"type", "object"}``) until the server ends it.

        A clean end of the stream just ends the iteration; an error status raises its typed
        error before the first event, and a stream cut in the middle (or silent for longer
        than ``read_timeout``) raises Unreachable. Use it with ``contextlib.aclosing``.
        """
        params = _query({**(query or {}), "watch": "true"})
        await self.limiter.take()
        self.stats.requests += 1
        headers = await self._headers(None)
        timeout = aiohttp.ClientTimeout(
            total=None, connect=self.settings.request_timeout, sock_read=read_timeout
        )
        try:
            async with self._session.get(
                self.server + path,
                params=params,
                headers=headers,
                timeout=timeout,
                ssl=self._ssl,
                proxy=self._proxy,
                server_hostname=self._server_hostname,
            ) as resp:
                if resp.status >= 300:
                    raw = await resp.read()
                    self.stats.errors[resp.status] = self.stats.errors.get(resp.status, 0) + 1
                    raise error_for(
                        resp.status,
                        "WATCH",
                        path,
                        _parse_quietly(raw),
                        _retry_after(resp.headers.get("Retry-After")),
                    )
                while True:
                    line = await resp.content.readline()
                    if not line:
                        return
                    if line.strip():
                        yield _parse(line)
        except KubeError:
            raise
        except (aiohttp.ClientError, OSError, TimeoutError, ValueError) as exc:
            # ValueError: aiohttp's "Chunk too big" for a line beyond the read buffer
            self.stats.errors[0] = self.stats.errors.get(0, 0) + 1
            raise Unreachable(
                f"WATCH {path}: stream from {self.server} broke: {_describe(exc)}",
                method="WATCH",
                path=path,
            ) from None

    def refresh_tokens(self) -> None:
        """Keep exec-plugin and gcp tokens of a kubeconfig fresh (kubernetes_asyncio's loop,
        when its loader read the kubeconfig)."""
        if self._configuration.refresher is not None:
            self._refresher = asyncio.get_running_loop().create_task(
                self._configuration.refresher(), name="kube-token-refresh"
            )

    async def close(self) -> None:
        if self._refresher is not None:
            self._refresher.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._refresher
        await self._session.close()


async def connect(settings: KubeSettings) -> Kube:
    """Load the configuration (kubeconfig or in-cluster) and open a session to the server."""
    _check(settings)
    configuration = await load_configuration(settings)
    ssl_context = _ssl_context(configuration)
    session = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=settings.connection_limit),
        trust_env=False,
        # watch events of large objects exceed aiohttp's default line limit
        read_bufsize=2**21,
    )
    kube = Kube(configuration.host, configuration, settings, session, ssl_context)
    kube.refresh_tokens()
    return kube


async def load_configuration(settings: KubeSettings) -> ClientConfig:
    """The server and credentials: the named kubeconfig, else $KUBECONFIG, else the
    in-cluster service account, else ~/.kube/config (``pumice.kube.kubeconfig``)."""
    explicit = settings.kubeconfig or os.environ.get("KUBECONFIG") or None
    if explicit:
        check_exists(
            explicit,
            "--kubeconfig or scheduler.kubeconfig" if settings.kubeconfig else "$KUBECONFIG",
        )
    in_pod = bool(os.environ.get(_SERVICE_HOST))
    default = Path(_DEFAULT_KUBECONFIG).expanduser()
    if not explicit and not in_pod and not default.exists():
        raise KubeConfigError(
            "no Kubernetes configuration: no --kubeconfig, no $KUBECONFIG, "
            f"not in a cluster, and {default} does not exist"
        )
    try:
        if explicit:
            return await load_kubeconfig(explicit, settings.context)
        if in_pod:
            return in_cluster()
        return await load_kubeconfig(str(default), settings.context)
    except Exception as exc:  # KubeConfigError, OSError, yaml errors, the plugin loaders' errors
        where = explicit or ("in-cluster" if in_pod else _DEFAULT_KUBECONFIG)
        raise KubeConfigError(f"{where}: cannot load Kubernetes configuration: {exc}") from None


def _check(settings: KubeSettings) -> None:
    problems = []
    if settings.qps is not None and not settings.qps >= 0:
        problems.append(f"qps must not be negative, not {settings.qps}")
    if settings.burst is not None and settings.burst < 0:
        problems.append(f"burst must not be negative, not {settings.burst}")
    if settings.request_timeout <= 0:
        problems.append(f"request timeout must be positive, not {settings.request_timeout}")
    if settings.max_retries < 0:
        problems.append(f"max retries must not be negative, not {settings.max_retries}")
    if problems:
        raise KubeConfigError("client settings: " + "; ".join(problems))


def _ssl_context(configuration: ClientConfig) -> ssl.SSLContext | bool:
    """The TLS settings the configuration asks for (True: aiohttp's defaults, for http://)."""
    if not configuration.host.startswith("https"):
        return True
    context = ssl.create_default_context(cafile=configuration.ca_file, cadata=configuration.ca_data)
    if configuration.cert_data is not None or configuration.key_data is not None:
        # inline client credentials: the ssl module loads them from files only; a private
        # folder holds them for the call and goes with them
        with tempfile.TemporaryDirectory(prefix="pumice-tls-") as folder:
            cert = configuration.cert_file
            key = configuration.key_file
            if configuration.cert_data is not None:
                cert = os.path.join(folder, "client.crt")
                Path(cert).write_bytes(configuration.cert_data)
            if configuration.key_data is not None:
                key = os.path.join(folder, "client.key")
                Path(key).write_bytes(configuration.key_data)
            if cert:
                context.load_cert_chain(cert, keyfile=key)
    elif configuration.cert_file:
        context.load_cert_chain(configuration.cert_file, keyfile=configuration.key_file)
    if not configuration.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


def _query(query: Mapping[str, object] | None) -> dict[str, str] | None:
    if not query:
        return None
    out: dict[str, str] = {}
    for key, value in query.items():
        if value is None:
            continue
        if isinstance(value, bool):
            out[key] = "true" if value else "false"
        else:
            out[key] = str(value)
    return out


def _parse(raw: bytes) -> dict[str, Any]:
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise ServerError(f"the API server sent something that is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ServerError("the API server sent JSON that is not an object")
    return value


def _parse_quietly(raw: bytes) -> object:
    try:
        return orjson.loads(raw) if raw else None
    except orjson.JSONDecodeError:
        return None


def _retry_after(text: str | None) -> float | None:
    if not text:
        return None
    try:
        return max(0.0, float(text))
    except ValueError:
        return None  # an HTTP date: rare from the API server; fall back to backoff


def _describe(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


async def served(kube: Kube, kind: Kind) -> bool:
    """Whether the API server serves ``kind`` (discovery of its group version)."""
    try:
        doc = await kube.request("GET", kind.group_path)
    except NotFound:
        return False
    resources = doc.get("resources") or []
    return any(isinstance(r, dict) and r.get("name") == kind.plural for r in resources)
