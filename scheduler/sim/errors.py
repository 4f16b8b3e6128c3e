"""API errors of the simulated server, each carried as a ``metav1.Status`` body.

Exception hierarchy::

    ApiError (PumiceError)   one HTTP error response: code + Status body (+ extra headers)
      (built by the helpers below; handlers raise, the router turns it into a response)
    SimSettingsError (PumiceError, ValueError)   a setting the server cannot run with

Every helper reproduces the reason, message and ``details`` the real API server sends, because
kubectl prints the message and clients branch on ``reason`` and ``code``.
"""

from __future__ import annotations

from typing import Any

from pumice.plain import PumiceError
from pumice.sim.objects import Obj


class SimSettingsError(PumiceError, ValueError):
    """A setting the simulated server cannot run with (a fraction outside [0, 1], a negative
    delay, an unknown authorization mode): refused when the server or a rule is set up."""


class ApiError(PumiceError):
    """An error response: HTTP ``code`` and the ``Status`` object sent as its body."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        details: Obj | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = headers or {}
        self.problem = ""
        """``FIELD: MESSAGE`` when the error is about one field (seed errors print it)."""

    def status(self) -> Obj:
        body: Obj = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details is not None:
            body["details"] = self.details
        return body


def success_status(code: int = 201, details: Obj | None = None) -> Obj:
    """The Status body of a successful binding or eviction."""
    body: Obj = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
    if details:
        body["details"] = details
    body["code"] = code
    return body


def _details(*, name: str, group: str, kind: str, **more: Any) -> Obj:
    out: Obj = {}
    if name:
        out["name"] = name
    if group:
        out["group"] = group
    out["kind"] = kind
    out.update(more)
    return out


def qualified(resource: str, group: str) -> str:
    """``pods`` or ``leases.coordination.k8s.io``: how messages name a resource."""
    return f"{resource}.{group}" if group else resource


def not_found(resource: str, group: str, *, name: str) -> ApiError:
    return ApiError(
        404,
        "NotFound",
        f'{qualified(resource, group)} "{name}" not found',
        _details(name=name, group=group, kind=resource),
    )


def no_such_path() -> ApiError:
    return ApiError(404, "NotFound", "the server could not find the requested resource", {})


def already_exists(resource: str, group: str, *, name: str) -> ApiError:
    return ApiError(
        409,
        "AlreadyExists",
        f'{qualified(resource, group)} "{name}" already exists',
        _details(name=name, group=group, kind=resource),
    )


def conflict(resource: str, group: str, *, name: str, why: str) -> ApiError:
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {qualified(resource, group)} "{name}": {why}',
        _details(name=name, group=group, kind=resource),
    )


MODIFIED = (
    "the object has been modified; please apply your changes to the latest version and try again"
)


def stale(resource: str, group: str, *, name: str) -> ApiError:
    return conflict(resource, group, name=name, why=MODIFIED)


def invalid(kind: str, group: str, *, name: str, causes: list[tuple[str, str, str]]) -> ApiError:
    """422 Invalid; ``causes`` are (field, reason, message) as in ``field.Error``."""
    parts = [f"{field}: {message}" for field, _reason, message in causes]
    text = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    return ApiError(
        422,
        "Invalid",
        f'{kind}{"." + group if group else ""} "{name}" is invalid: {text}',
        _details(
            name=name,
            group=group,
            kind=kind,
            causes=[{"reason": r, "message": m, "field": f} for f, r, m in causes],
        ),
    )


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def gone(message: str) -> ApiError:
    return ApiError(410, "Expired", message)


def too_old(asked: int, oldest: int) -> ApiError:
    return gone(f"too old resource version: {asked} ({oldest})")


def method_not_allowed() -> ApiError:
    return ApiError(
        405, "MethodNotAllowed", "the server does not allow this method on the requested resource"
    )


def unsupported_media_type(content_type: str, accepted: list[str]) -> ApiError:
    return ApiError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - accepted media types include: "
        f"{', '.join(accepted)}",
    )


def forbidden(resource: str, group: str, *, name: str, why: str) -> ApiError:
    return ApiError(
        403,
        "Forbidden",
        f'{qualified(resource, group)} "{name}" is forbidden: {why}',
        _details(name=name, group=group, kind=resource),
    )


def injected(code: int, retry_after: int) -> ApiError:
    """An error produced by fault injection (500 InternalError, 429 TooManyRequests, ...)."""
    if code == 429:
        return ApiError(
            429,
            "TooManyRequests",
            "Too many requests, please try again later.",
            {"retryAfterSeconds": retry_after},
            {"Retry-After": str(retry_after)},
        )
    if code == 503:
        return ApiError(
            503, "ServiceUnavailable", "the server is currently unable to handle the request"
        )
    if code == 504:
        return ApiError(
            504, "Timeout", "the server was unable to return a response in the time allotted"
        )
    return ApiError(
        code,
        "InternalError",
        "Internal error occurred: injected fault",
        {"causes": [{"message": "injected fault"}]},
    )


def internal(message: str) -> ApiError:
    return ApiError(
        500,
        "InternalError",
        f"Internal error occurred: {message}",
        {"causes": [{"message": message}]},
    )


def uid_precondition(
    resource: str, group: str, *, name: str, wanted: object, actual: object
) -> ApiError:
    return conflict(
        resource,
        group,
        name=name,
        why=f"Precondition failed: UID in precondition: {wanted}, UID in object meta: {actual}",
    )


def rv_precondition(
    resource: str, group: str, *, name: str, wanted: object, actual: object
) -> ApiError:
    return conflict(
        resource,
        group,
        name=name,
        why=f"Precondition failed: ResourceVersion in precondition: {wanted}, "
        f"ResourceVersion in object meta: {actual}",
    )


def namespace_mismatch() -> ApiError:
    return bad_request(
        "the namespace of the provided object does not match the namespace sent on the request"
    )
