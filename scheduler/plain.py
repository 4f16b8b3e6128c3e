"""Kubernetes objects as pumice holds them: plain dicts, as orjson or YAML parsed them.

pumice never turns an object into the API client's generated models (see ARCHITECTURE.md,
"Speed by design"); every layer passes the parsed JSON around as it came. ``Obj`` names that
type once, so a reader sees at a glance that a parameter is a whole object (a Pod, a Node, a
PodGroup...) and not any mapping.

Reading such an object into the model (``TaskInfo.from_pod``, ``JobInfo.from_podgroup``,
``QueueInfo.from_queue``) can fail on whatever the cluster holds: a missing name, a priority
that is not a number, a bad quantity. Those readers are ``@reads_object``, so what they raise
for a malformed object is always an ``ObjectError`` (the ``KeyError``, ``TypeError`` or
``ValueError`` behind it chained as its cause), which the cache turns into a reason on the
object instead of a crash. Errors::

    ObjectError  (PumiceError, ValueError) an object the model cannot read

Like ``pumice.errors``, the only module of pumice it imports, this module can be used by every
layer (the model and the simulated API server included).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any, ParamSpec, TypeVar

from pumice.errors import PumiceError

__all__ = ["Obj", "ObjView", "ObjectError", "reads_object"]

Obj = dict[str, Any]
"""One Kubernetes object (or a part of one, such as its ``metadata``) as a plain dict."""
ObjView = Mapping[str, Any]
"""An object only read, never changed (what a function of a claim or a volume takes)."""

P = ParamSpec("P")
R = TypeVar("R")


class ObjectError(PumiceError, ValueError):
    """A Kubernetes object that cannot be read: a field missing or of the wrong type, or a
    value the model refuses. The message is the underlying error's."""


def reads_object(read: Callable[P, R]) -> Callable[P, R]:
    """``read``, raising ``ObjectError`` where a malformed object makes it raise ``KeyError``,
    ``TypeError`` or ``ValueError`` (a ``QuantityError`` included)."""

    @functools.wraps(read)
    def checked(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return read(*args, **kwargs)
        except (KeyError, TypeError, ValueError) as exc:
            raise ObjectError(str(exc)) from exc

    return checked
