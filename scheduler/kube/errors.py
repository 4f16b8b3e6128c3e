"""Typed errors of the Kubernetes API boundary; nothing from kubernetes_asyncio or aiohttp leaks.

Exception hierarchy::

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
"""

from __future__ import annotations

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
