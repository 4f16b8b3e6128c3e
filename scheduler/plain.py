"""What every layer of pumice shares, importing nothing of pumice itself: the root of its
errors, Kubernetes objects as plain dicts, as orjson or YAML parsed them, and the uids pumice
gives the objects it makes. Every layer (the model and the simulated API server included) can
use it.

pumice never turns an object into the API client's generated models (see ARCHITECTURE.md,
"Speed by design"); every layer passes the parsed JSON around as it came. ``Obj`` names that
type once, so a reader sees at a glance that a parameter is a whole object (a Pod, a Node, a
PodGroup...) and not any mapping.

Reading such an object into the model (``TaskInfo.from_pod``, ``JobInfo.from_podgroup``,
``QueueInfo.from_queue``) can fail on whatever the cluster holds: a missing name, a priority
that is not a number, a bad quantity. Those readers are ``@reads_object``, so what they raise
for a malformed object is always an ``ObjectError`` (the ``KeyError``, ``TypeError`` or
``ValueError`` behind it chained as its cause), which the cache turns into a reason on the
object instead of a crash (``ObjectError`` in the tree below).

**Uids** (``ordered_uid``) whose string order is the order the objects were made in. Volcano
orders jobs of equal priority by creation time, then by uid. A real API server's uids are random
and its creation times whole seconds, so two pods created in the same second are ordered at
random there. ``pumice simulate`` and the simulated API server (``pumice.sim``) must decide alike
on the same manifests, so both make uids here: the simulated server for every object it
creates, ``pumice simulate`` for an object given without one, in input order. The form is an
RFC 9562 UUID of version 7 (48 bits of milliseconds, then a per-process counter, then random
bits), so any client takes it as an ordinary uid. Python 3.11's ``uuid`` has no version 7,
hence this function; the counter keeps the order within one millisecond and the random tail
keeps two processes' uids apart.

**Errors.** ``PumiceError`` is the root of every exception pumice raises on purpose. Each
boundary has its own subclass, defined in the module that owns the boundary (so that its
name reads well where it is raised, and its old import path keeps working). ``except
PumiceError`` catches anything pumice raised deliberately; a bare ``Exception`` that is not one
of these is a bug, and no module raises a bare ``ValueError``, ``KeyError``, ``TypeError`` or
``RuntimeError`` (``tests/test_errors.py`` reads the sources for one). Classes that callers have
always caught as one of those mix it in::

    PumiceError
    ├── ConfigError                 pumice.framework.config      file, line, key: what is wrong
    ├── AddressError (ValueError)   pumice.framework.config      not a host:port to listen on
    ├── YamlSourceError (ValueError) pumice.framework.yamlsource  text is not YAML we accept
    ├── ManifestError (ValueError)  pumice.manifests             a manifest that cannot be used
    ├── ObjectError (ValueError)    pumice.plain                 an object the model cannot read
    ├── LiveError                   pumice.commands.cluster_input  a cluster that cannot be listed
    ├── QuantityError (ValueError)  pumice.model.quantity        not a Kubernetes quantity
    ├── ResourceError (ValueError)  pumice.model.resource        bad amount, scale or default
    │   └── ResourceUnderflow                                    ``a - b`` below zero
    ├── NodeAccountingError (ValueError)  pumice.model.node      a placement the node refuses
    ├── NodeTableError (ValueError)  pumice.model.table          a node already in the table
    ├── JobTaskError (KeyError)     pumice.model.objects         a task not of the job
    ├── SnapshotError (KeyError)    pumice.model.snapshot        an update the snapshot cannot apply
    ├── DurationError (ValueError)  pumice.model.quantity        not a Go duration
    ├── FlagError (ValueError)      pumice.framework.config      no such extension-point flag
    ├── ArgumentNameError (TypeError)  pumice.framework.arguments  an argument name not a string
    ├── ArgumentSpecError (ValueError)  pumice.framework.argspec  a declaration that cannot hold
    ├── PluginError                 pumice.framework.host        the plugin host
    │   ├── PluginConflictError                                  two packages, one name
    │   └── PluginLoadError                                      an entry point will not load
    ├── SessionError                pumice.framework.session     a plugin or action unknown
    │   └── PluginContractError                                  a plugin broke the contract
    ├── StatementError              pumice.framework.statement   an operation not applied
    ├── KubeError                   pumice.kube.rest             a failed API request (typed
    │                                                            by status: NotFound, Conflict,
    │                                                            Gone, TooManyRequests, ...)
    ├── LeaseTimingError (ValueError)  pumice.kube.lease         lease timings out of order
    └── the simulated API server (pumice.sim)
        ├── ApiError                pumice.sim.errors            one HTTP error + Status body
        ├── TemplateError (ValueError)  pumice.sim.defaults      a bad node template
        ├── BadQuantity (ValueError)    pumice.sim.quantities    a value the server cannot decode
        ├── BadTime (ValueError)        pumice.sim.objects       not an RFC 3339 time
        ├── SimSettingsError (ValueError)  pumice.sim.errors     a setting it cannot run with
        ├── StoreKeyError (KeyError)    pumice.sim.store         a delete of nothing stored
        └── BadInput                pumice.sim.cli               a bad flag or file (exit 2)
"""

from __future__ import annotations

import functools
import itertools
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, ParamSpec, TypeVar

__all__ = ["Obj", "ObjView", "ObjectError", "PumiceError", "ordered_uid", "reads_object"]


class PumiceError(Exception):
    """Something pumice refuses, with a one-line message naming what and where."""


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


_COUNTER = itertools.count()
_LOCK = threading.Lock()
_last_ms = 0


def ordered_uid(at: float | None = None) -> str:
    """A new uid that sorts after every uid this process made before it.

    ``at`` (seconds since the epoch) is the creation time to put in it; the clock is never
    allowed to go back, so a later call never sorts first."""
    global _last_ms
    with _LOCK:
        ms = int((time.time() if at is None else at) * 1000) & 0xFFFF_FFFF_FFFF
        ms = _last_ms = max(ms, _last_ms)
        count = next(_COUNTER) & 0xFFFF_FFFF
    tail = secrets.randbits(42)
    # 32 counter bits: 12 in the version-7 field rand_a, 20 atop rand_b; then 42 random bits.
    rand_a = count >> 20
    rand_b = ((count & 0xF_FFFF) << 42) | tail
    value = (ms << 80) | (0x7 << 76) | (rand_a << 64) | (0b10 << 62) | rand_b
    text = f"{value:032x}"
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"
