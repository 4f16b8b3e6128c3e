"""Where the API server is and how to authenticate: the kubeconfig or the in-cluster account.

``load_client_config`` answers with a ``ClientConfig``: the server, its TLS settings, and an
``authorization()`` giving the header for the next request. Two sources are read here:

* a **kubeconfig** of one file whose user has static credentials (``token``, ``tokenFile``,
  ``username``/``password``, client certificates) — what ``pumice sim-cluster``, kind, k3s and
  most admin kubeconfigs write — the same fields and defaults as kubectl and kubernetes_asyncio
  read them (the current context or the named one; relative paths from the file's folder;
  ``*-data`` fields base64; ``insecure-skip-tls-verify``, ``tls-server-name``, ``proxy-url``);
* the **in-cluster** service account (``KUBERNETES_SERVICE_HOST``/``_PORT``, the mounted token,
  re-read every minute as the kubelet rotates it, and the mounted CA).

Everything else — a user with an ``exec`` plugin or an ``auth-provider`` (gcp, oidc), or a
``$KUBECONFIG`` list of several files to merge — is left to kubernetes_asyncio's loaders, which
also keep those tokens fresh. Why not always: importing ``kubernetes_asyncio`` at all runs its
package ``__init__``, which imports the whole generated client (768 modules, 0.6 to 0.95 s of CPU
at every start), and pumice sends its requests with its own aiohttp session and plain dicts,
so it needs none of it for the common credentials.
"""

from __future__ import annotations

import base64
import binascii
import os
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pumice.kube.rest import KubeConfigError

SERVICE_HOST = "KUBERNETES_SERVICE_HOST"
SERVICE_PORT = "KUBERNETES_SERVICE_PORT"
SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")
TOKEN_REREAD_SECONDS = 60.0
"""How long an in-cluster token is used before the file is read again (client-go: 1 min)."""


async def _no_authorization() -> str | None:
    return None


@dataclass
class ClientConfig:
    """The server and the credentials for it (as kubectl would use them)."""

    host: str
    ca_file: str | None = None
    """A CA bundle file to verify the server with (None: the system's)."""
    ca_data: str | None = None
    """PEM text of the CA bundle (a kubeconfig's ``certificate-authority-data``)."""
    cert_file: str | None = None
    key_file: str | None = None
    cert_data: bytes | None = None
    """PEM of the client certificate (``client-certificate-data``), loaded into the TLS
    context through a private temporary file, removed at once."""
    key_data: bytes | None = None
    verify_ssl: bool = True
    tls_server_name: str | None = None
    proxy: str | None = None
    authorization: Callable[[], Awaitable[str | None]] = field(default=_no_authorization)
    """The ``Authorization`` header for the next request (None: none sent)."""
    refresher: Callable[[], Coroutine[Any, Any, None]] | None = None
    """A loop that keeps the credentials fresh (exec plugins, gcp), run beside the client."""


def static_authorization(value: str | None) -> Callable[[], Awaitable[str | None]]:
    async def authorization() -> str | None:
        return value

    return authorization


# -- in-cluster ---------------------------------------------------------------------------------


def in_cluster(
    environ: dict[str, str] | os._Environ[str] = os.environ, account: Path = SERVICE_ACCOUNT
) -> ClientConfig:
    """The service account Kubernetes mounts into a pod (a ``KubeConfigError`` says what is
    missing)."""
    host, port = environ.get(SERVICE_HOST), environ.get(SERVICE_PORT)
    if host is None or port is None:
        raise KubeConfigError("Service host/port is not set.")
    if not host or not port:
        raise KubeConfigError("Service host/port is set but empty.")
    if ":" in host or "%" in host:
        host = f"[{host}]"  # an IPv6 address, as Go's JoinHostPort writes it
    token_file, ca_file = account / "token", account / "ca.crt"
    if not token_file.is_file():
        raise KubeConfigError("Service token file does not exist.")
    token = _TokenFile(token_file)
    token.read()
    if not ca_file.is_file():
        raise KubeConfigError("Service certification file does not exist.")
    if not ca_file.read_text():
        raise KubeConfigError("Cert file exists but empty.")
    return ClientConfig(f"https://{host}:{port}", ca_file=str(ca_file), authorization=token.header)


class _TokenFile:
    """A bound service account token: read again once a minute (the kubelet rotates it)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.value = ""
        self.read_at = 0.0

    def read(self) -> str:
        content = self.path.read_text()
        if not content:
            raise KubeConfigError("Token file exists but empty.")
        self.value, self.read_at = f"Bearer {content}", time.monotonic()
        return self.value

    async def header(self) -> str | None:
        if time.monotonic() - self.read_at >= TOKEN_REREAD_SECONDS:
            try:
                return self.read()
            except (OSError, KubeConfigError):
                return self.value  # mid-rotation: the last token until the file is back
        return self.value


# -- kubeconfig ---------------------------------------------------------------------------------


async def load_kubeconfig(paths: str, context: str | None = None) -> ClientConfig:
    """The kubeconfig ``paths`` names (one file, or a ``$KUBECONFIG`` list), for ``context``
    (None: its current context). Read here when it is one file whose user has static
    credentials; else by kubernetes_asyncio's loader (``full_kubeconfig``). A ``KubeConfigError``
    (or ``OSError``, ``yaml.YAMLError``) says what is wrong."""
    names = [p for p in paths.split(os.pathsep) if p]
    existing = [p for p in names if Path(p).expanduser().exists()]
    if len(existing) > 1:
        return await full_kubeconfig(paths, context)
    file = Path(existing[0] if existing else paths).expanduser()
    document = yaml.load(file.read_text(), Loader=_LOADER)
    if not isinstance(document, dict):
        raise KubeConfigError("Invalid kube-config file: not a mapping")
    name = context or document.get("current-context")
    if not name:
        raise KubeConfigError("Invalid kube-config file. Expected key current-context")
    ctx = _named(document, "contexts", name, "context")
    cluster = _named(document, "clusters", _text(ctx, "cluster", "context"), "cluster")
    user_name = ctx.get("user")
    user = _named(document, "users", user_name, "user", missing_ok=True) if user_name else {}
    if "exec" in user or "auth-provider" in user:
        return await full_kubeconfig(str(file), context)  # a plugin's credentials
    server = cluster.get("server")
    if not isinstance(server, str) or not server:
        raise KubeConfigError("Invalid kube-config file. Expected key server in cluster")
    base = file.resolve().parent
    config = ClientConfig(server.rstrip("/"))
    if config.host.startswith("https"):
        config.ca_data = _data(cluster, "certificate-authority")
        config.ca_file = _file(cluster, "certificate-authority", base)
        config.cert_data = _bytes(user, "client-certificate")
        config.cert_file = _file(user, "client-certificate", base)
        config.key_data = _bytes(user, "client-key")
        config.key_file = _file(user, "client-key", base)
    if "insecure-skip-tls-verify" in cluster:
        config.verify_ssl = not cluster["insecure-skip-tls-verify"]
    if "tls-server-name" in cluster:
        config.tls_server_name = cluster["tls-server-name"]
    if "proxy-url" in cluster:
        config.proxy = cluster["proxy-url"]
    config.authorization = static_authorization(_user_header(user, base))
    return config


def _user_header(user: dict[str, Any], base: Path) -> str | None:
    """A token (inline, else from ``tokenFile``), else basic auth, as kubectl prefers them."""
    token = user.get("token")
    if not token and user.get("tokenFile"):
        token = (base / str(user["tokenFile"])).read_text()
    if token:
        return f"Bearer {token}"
    if "username" in user and "password" in user:
        pair = f"{user['username']}:{user['password']}".encode()
        return "Basic " + base64.b64encode(pair).decode()
    return None


def _named(
    document: dict[str, Any], section: str, name: object, key: str, missing_ok: bool = False
) -> dict[str, Any]:
    entries = document.get(section)
    if not isinstance(entries, list):
        raise KubeConfigError(f"Invalid kube-config file. Expected {section} to be a list")
    found = [e for e in entries if isinstance(e, dict) and e.get("name") == name]
    if len(found) > 1:
        raise KubeConfigError(f"Invalid kube-config file. More than one {key} named {name}")
    if not found:
        if missing_ok:
            return {}
        raise KubeConfigError(f"Invalid kube-config file. Expected a {key} named {name}")
    value = found[0].get(key)
    if not isinstance(value, dict):
        if missing_ok and value is None:
            return {}
        raise KubeConfigError(f"Invalid kube-config file. Expected key {key} in {section}[{name}]")
    return value


def _text(entry: dict[str, Any], key: str, where: str) -> str:
    value = entry.get(key)
    if not isinstance(value, str) or not value:
        raise KubeConfigError(f"Invalid kube-config file. Expected key {key} in {where}")
    return value


def _bytes(entry: dict[str, Any], key: str) -> bytes | None:
    """``<key>-data``, base64-decoded (the data wins over the file, as kubectl has it)."""
    data = entry.get(f"{key}-data")
    if not data:
        return None
    try:
        return base64.standard_b64decode(data if isinstance(data, bytes) else str(data).encode())
    except binascii.Error as exc:
        raise KubeConfigError(f"{key}-data is not base64: {exc}") from None


def _data(entry: dict[str, Any], key: str) -> str | None:
    raw = _bytes(entry, key)
    return raw.decode() if raw is not None else None


def _file(entry: dict[str, Any], key: str, base: Path) -> str | None:
    if entry.get(f"{key}-data") or not entry.get(key):
        return None
    path = os.path.normpath(base / str(entry[key]))
    if not os.path.isfile(path):
        raise KubeConfigError(f"File does not exists: {path}")
    return path


_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


# -- kubernetes_asyncio's loaders (plugins, merged files) -----------------------------------------


async def full_kubeconfig(path: str, context: str | None) -> ClientConfig:
    """Read by kubernetes_asyncio (imported only now), its tokens kept fresh by its loop."""
    from kubernetes_asyncio.client import Configuration
    from kubernetes_asyncio.config import load_kube_config, refresh_token

    configuration = Configuration()
    loader = await load_kube_config(
        config_file=path,
        context=context,
        client_configuration=configuration,
        persist_config=False,
    )

    async def authorization() -> str | None:
        key = configuration.api_key.get("BearerToken")
        if key:
            prefix = configuration.api_key_prefix.get("BearerToken")
            return f"{prefix} {key}" if prefix else str(key)
        return None

    async def refresher() -> None:
        await refresh_token(loader, configuration)

    return ClientConfig(
        str(configuration.host),
        ca_file=configuration.ssl_ca_cert,
        cert_file=configuration.cert_file,
        key_file=configuration.key_file,
        verify_ssl=bool(configuration.verify_ssl),
        tls_server_name=getattr(configuration, "tls_server_name", None),
        proxy=getattr(configuration, "proxy", None),
        authorization=authorization,
        refresher=refresher,
    )


def check_exists(paths: str, origin: str) -> None:
    """Name the missing file when no kubeconfig ``paths`` names (a list, as kubectl reads
    ``$KUBECONFIG``) exists; the loader would only say that a key is missing."""
    names = [p for p in paths.split(os.pathsep) if p]
    if names and not any(Path(p).expanduser().is_file() for p in names):
        missing = ", ".join(names)
        raise KubeConfigError(f"kubeconfig {missing} (from {origin}): no such file")
