"""The REST API as pumice addresses it: the resources it reads and writes with their paths, and
the typed errors of the answers (nothing from kubernetes_asyncio or aiohttp leaks).

**Errors**, one class per kind of failure::

    KubeError                 any failed API request (.status: HTTP code or None, .reason)
      NotFound                404: the object (or the resource) does not exist
      Conflict                409: precondition failed, already exists, already bound
      Gone                    410: resourceVersion too old (relist) or continue token expired
      TooManyRequests         429: throttled or blocked by a PodDisruptionBudget (.retry_after)
      Forbidden               401/403: RBAC or authentication
      Invalid                 400/422: the server refused what we sent
      ServerError             5xx and any other unexpected status
      Unreachable             no answer: connection refused or dropped, timeouts
      KubeConfigError         no usable kubeconfig / in-cluster configuration

Every message is one line naming the verb and path, then the server's own message.

**Resources** (``Kind``, one constant each): the API resources pumice reads and writes, and
where each lives in the URL space. ``Kind.path(namespace, name, subresource)`` builds the REST
path the way the API server's request-info parser reads it back:
``/api/v1/namespaces/ns/pods/name/binding`` for the core group, ``/apis/group/version/...`` for
the others. (``pumice.kube.client.served`` asks discovery whether a kind is served at all, so
the daemon can skip Volcano's CRDs on a cluster that has none.)
"""

from __future__ import annotations

from dataclasses import dataclass

from pumice.plain import PumiceError


class KubeError(PumiceError):
    """A failed request to the API server."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        reason: str = "",
        method: str = "",
        path: str = "",
    ) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason
        self.method = method
        self.path = path


class NotFound(KubeError):
    """404."""


class Conflict(KubeError):
    """409."""


class Gone(KubeError):
    """410."""


class TooManyRequests(KubeError):
    """429; ``retry_after`` is the server's Retry-After in seconds, if it sent one."""

    def __init__(
        self,
        message: str,
        *,
        retry_after: float | None = None,
        status: int | None = 429,
        reason: str = "TooManyRequests",
        method: str = "",
        path: str = "",
    ) -> None:
        super().__init__(message, status=status, reason=reason, method=method, path=path)
        self.retry_after = retry_after


class Forbidden(KubeError):
    """401 or 403."""


class Invalid(KubeError):
    """400 or 422."""


class ServerError(KubeError):
    """5xx (and any status this module does not otherwise classify)."""


class Unreachable(KubeError):
    """The request got no HTTP answer: connection refused or dropped, or a timeout."""


class KubeConfigError(KubeError):
    """The kubeconfig or in-cluster configuration could not be loaded (bad input: exit 2)."""


_BY_STATUS: dict[int, type[KubeError]] = {
    400: Invalid,
    401: Forbidden,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    410: Gone,
    422: Invalid,
    429: TooManyRequests,
}


def error_for(
    status: int,
    method: str,
    path: str,
    body: object,
    retry_after: float | None = None,
) -> KubeError:
    """The typed error for an HTTP error response (``body``: the parsed Status, if any)."""
    reason = ""
    message = ""
    if isinstance(body, dict):
        reason = str(body.get("reason") or "")
        message = str(body.get("message") or "")
    text = f"{method} {path}: {status} {reason or 'error'}" + (f": {message}" if message else "")
    text = " ".join(text.split())  # one line, whatever the server sent
    cls = _BY_STATUS.get(status, ServerError)
    if cls is TooManyRequests:
        return TooManyRequests(
            text, retry_after=retry_after, status=status, reason=reason, method=method, path=path
        )
    return cls(text, status=status, reason=reason, method=method, path=path)


@dataclass(frozen=True)
class Kind:
    group: str
    version: str
    plural: str
    namespaced: bool
    kind: str

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_path(self) -> str:
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"

    def path(
        self, namespace: str | None = None, name: str | None = None, subresource: str | None = None
    ) -> str:
        """The collection path (``name`` None) or an object's path, optionally a subresource.

        A namespaced kind without a namespace addresses the collection across all namespaces.
        """
        parts = [self.group_path]
        if self.namespaced and namespace:
            parts.append(f"namespaces/{namespace}")
        parts.append(self.plural)
        if name:
            parts.append(name)
            if subresource:
                parts.append(subresource)
        return "/".join(parts)


NODES = Kind("", "v1", "nodes", False, "Node")
PODS = Kind("", "v1", "pods", True, "Pod")
PODGROUPS = Kind("scheduling.volcano.sh", "v1beta1", "podgroups", True, "PodGroup")
QUEUES = Kind("scheduling.volcano.sh", "v1beta1", "queues", False, "Queue")
NAMESPACES = Kind("", "v1", "namespaces", False, "Namespace")
PRIORITYCLASSES = Kind("scheduling.k8s.io", "v1", "priorityclasses", False, "PriorityClass")
PERSISTENTVOLUMECLAIMS = Kind("", "v1", "persistentvolumeclaims", True, "PersistentVolumeClaim")
PERSISTENTVOLUMES = Kind("", "v1", "persistentvolumes", False, "PersistentVolume")
STORAGECLASSES = Kind("storage.k8s.io", "v1", "storageclasses", False, "StorageClass")
CSINODES = Kind("storage.k8s.io", "v1", "csinodes", False, "CSINode")
CSIDRIVERS = Kind("storage.k8s.io", "v1", "csidrivers", False, "CSIDriver")
STORAGE_KINDS = (PERSISTENTVOLUMECLAIMS, PERSISTENTVOLUMES, STORAGECLASSES, CSINODES, CSIDRIVERS)
"""What volume decisions read, each informed only where the cluster serves it."""
LEASES = Kind("coordination.k8s.io", "v1", "leases", True, "Lease")
EVENTS = Kind("events.k8s.io", "v1", "events", True, "Event")
CORE_EVENTS = Kind("", "v1", "events", True, "Event")
