"""What a pod requests, computed the way Kubernetes does.

Per resource, from the plain-dict pod's ``spec``:

1. the sum of the app containers' ``resources.requests``;
2. plus every sidecar (an init container with ``restartPolicy: Always``), since sidecars keep
   running beside the app containers;
3. each regular init container runs alone with the sidecars started before it, so it needs its
   own request plus theirs; the pod needs the larger of (1 + 2) and the largest such need;
4. if the pod sets ``spec.resources.requests`` (pod-level resources), each of cpu, memory and
   hugepages-* named there replaces the container aggregate;
5. plus ``spec.overhead`` (the RuntimeClass overhead).

The sums are exact; only the pod's total is converted to canonical units, so rounding up to a
whole millicore or byte happens once, as in kube-scheduler. On the hot path they are integers:
every quantity is read as a whole number of nano-units (10⁻⁹ of its Kubernetes unit; every
suffix down to ``n`` gives one), parsed once per distinct string and remembered. A pod with a
quantity finer than that (``1e-12``) is summed again with ``Fraction``; both give the same
result. A pod with app containers only (no init containers, overhead or pod-level resources)
gets the answer remembered for the same container requests, written as strings: a gang's pods
share one immutable ``Resource``.

``non_zero=True`` is for scoring only: a container (app, sidecar or init) that omits a cpu
request counts as 100m and one that omits a memory request as 200Mi; an explicit 0 stays 0.
Fitting a pod on a node uses the real requests (``non_zero=False``). These defaults are
``NON_ZERO_DEFAULTS``, the only place they are written; ``with_non_zero_defaults`` applies them
to a request known only as a whole (a task without a pod).

The result holds only the resources the pod needs a non-zero amount of. A malformed or negative
quantity raises ``QuantityError`` naming the container (or pod field) and the resource.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from types import MappingProxyType
from typing import Any

from pumice.model.quantity import (
    QuantityError,
    canonical_from_fraction,
    is_byte_resource,
    parse_quantity,
)
from pumice.model.resource import Resource, _wrap

__all__ = [
    "NON_ZERO_CPU_MILLI",
    "NON_ZERO_DEFAULTS",
    "NON_ZERO_MEMORY_BYTES",
    "non_zero_request",
    "pod_requests",
    "with_non_zero_defaults",
]

NON_ZERO_CPU_MILLI = 100.0
"""Scoring default for a container that omits its cpu request (millicores)."""

NON_ZERO_MEMORY_BYTES = 200 * 1024 * 1024
"""Scoring default for a container that omits its memory request (bytes)."""

NON_ZERO_DEFAULTS: Mapping[str, float] = MappingProxyType(
    {"cpu": NON_ZERO_CPU_MILLI, "memory": float(NON_ZERO_MEMORY_BYTES)}
)
"""The scoring defaults, in canonical units."""

_NON_ZERO = {"cpu": Fraction(1, 10), "memory": Fraction(NON_ZERO_MEMORY_BYTES)}

_NANO = 10**9
_NON_ZERO_CPU_NANOS = 10**8  # 100m
_NON_ZERO_MEMORY_NANOS = NON_ZERO_MEMORY_BYTES * _NANO
_MILLI_IN_NANOS = 10**6

_nanos_of_text: dict[str, int] = {}
"""Quantity text -> its exact value in nano-units, for every text seen that has a whole one."""
_CACHE_LIMIT = 1 << 16

Amounts = dict[str, Fraction]
Nanos = dict[str, int]


class _Inexact(Exception):
    """A quantity is not a whole number of nano-units: the pod is summed exactly instead."""


def pod_requests(pod: Mapping[str, Any], *, non_zero: bool = False) -> Resource:
    """The resources ``pod`` (a plain dict with ``spec``) requests, in canonical units."""
    spec = pod.get("spec") or {}
    key = _requests_key(spec, non_zero)
    if key is not None:
        try:
            known = _by_requests.get(key)
        except TypeError:  # an unhashable quantity (a list, say): reported below
            known = key = None
        if known is not None:
            return known
    try:
        result = _pod_requests_nanos(spec, non_zero)
    except _Inexact:
        result = _pod_requests_exact(spec, non_zero)
    if key is not None and _all_text(key[1]):
        if len(_by_requests) >= _CACHE_LIMIT:
            _by_requests.clear()
        _by_requests[key] = result
    return result


_by_requests: dict[tuple[bool, tuple[Any, ...]], Resource] = {}
"""The answer for pods with app containers only, by each container's request items (a
Deployment's or a gang's pods repeat the same few): ``Resource`` is immutable, so it is
shared."""


def _requests_key(spec: Mapping[str, Any], non_zero: bool) -> tuple[bool, tuple[Any, ...]] | None:
    """What the answer depends on, for a pod without init containers, overhead or pod-level
    resources; None for any other pod."""
    if spec.get("initContainers") or spec.get("overhead") or spec.get("resources"):
        return None
    parts = []
    for container in spec.get("containers") or ():
        resources = container.get("resources")
        requests = resources.get("requests") if resources else None
        parts.append(tuple(requests.items()) if requests else ())
    return (non_zero, tuple(parts))


def _all_text(parts: tuple[Any, ...]) -> bool:
    """Only string (or null) quantities: a key equal to such a key is one (``1 == 1.0 ==
    True`` never meets a string), so a cached answer is never given to a pod it is wrong for."""
    return all(
        type(quantity) is str or quantity is None for items in parts for _, quantity in items
    )


def non_zero_request(pod: Mapping[str, Any] | None, request: Resource) -> Resource:
    """The request scoring uses for a task: ``pod_requests(pod, non_zero=True)``, or, for a
    task without a pod (or with one whose requests do not parse: a task built in code),
    ``with_non_zero_defaults(request)``."""
    if pod is not None:
        try:
            return pod_requests(pod, non_zero=True)
        except QuantityError:
            pass
    return with_non_zero_defaults(request)


def with_non_zero_defaults(request: Resource) -> Resource:
    """``request`` with cpu and memory at their scoring defaults where they are zero: the
    non-zero request of a task known only by its total (no pod to read containers from)."""
    values = request.to_dict()
    for name, default in NON_ZERO_DEFAULTS.items():
        if values.get(name, 0.0) <= 0:
            values[name] = default
    return Resource(values)


# -- the integer path ----------------------------------------------------------------------------


def _pod_requests_nanos(spec: Mapping[str, Any], non_zero: bool) -> Resource:
    running: Nanos = {}  # app containers and sidecars, all running together
    for container in spec.get("containers") or ():
        _add_container(running, container, "container", non_zero)

    init_containers = spec.get("initContainers")
    if init_containers:
        sidecars: Nanos = {}  # sidecars started so far
        init_peak: Nanos = {}  # the largest need of any regular init container
        for container in init_containers:
            own: Nanos = {}
            _add_container(own, container, "init container", non_zero)
            if container.get("restartPolicy") == "Always":
                _add_nanos(sidecars, own)
                _add_nanos(running, own)
            else:
                need = dict(sidecars)
                _add_nanos(need, own)
                _max_nanos(init_peak, need)
        _max_nanos(running, init_peak)

    total = running
    pod_level = (spec.get("resources") or {}).get("requests")
    if pod_level:
        for name, amount in _nanos_list(pod_level, "spec.resources.requests").items():
            if name in ("cpu", "memory") or name.startswith("hugepages-"):
                total[name] = amount
    overhead = spec.get("overhead")
    if overhead:
        _add_nanos(total, _nanos_list(overhead, "spec.overhead"))

    values: dict[str, float] = {}
    for name, nanos in total.items():
        if nanos:
            values[name] = _canonical(name, nanos)
    return _wrap(values)


def _add_container(into: Nanos, container: Mapping[str, Any], kind: str, non_zero: bool) -> None:
    """Add one container's requests (with the scoring defaults when ``non_zero``)."""
    resources = container.get("resources")
    requests = resources.get("requests") if resources else None
    if requests:
        for name, quantity in requests.items():
            if quantity is None:
                continue
            nanos = _nanos_of_text.get(quantity) if type(quantity) is str else None
            if nanos is None:
                nanos = _nanos(quantity, lambda: f"{kind} {container.get('name', '?')!r}", name)
            into[name] = into.get(name, 0) + nanos
    if non_zero:
        if not requests or requests.get("cpu") is None:
            into["cpu"] = into.get("cpu", 0) + _NON_ZERO_CPU_NANOS
        if not requests or requests.get("memory") is None:
            into["memory"] = into.get("memory", 0) + _NON_ZERO_MEMORY_NANOS


def _nanos_list(resource_list: Mapping[str, Any], where: str) -> Nanos:
    """A resource list (pod level or overhead) in nano-units; null entries left out."""
    out: Nanos = {}
    for name, quantity in resource_list.items():
        if quantity is not None:
            out[name] = _nanos(quantity, lambda: where, name)
    return out


def _nanos(quantity: object, where: Any, name: str) -> int:
    """The exact value of a request in nano-units; ``where()`` names its place in errors."""
    try:
        value = parse_quantity(quantity)  # type: ignore[arg-type]  # checked at run time
    except QuantityError as err:
        raise QuantityError(f"{where()}, resource {name!r}: {err}") from err
    if value < 0:
        raise QuantityError(
            f"{where()}, resource {name!r}: invalid quantity {quantity!r}: negative request"
        )
    scaled = value * _NANO
    if scaled.denominator != 1:
        raise _Inexact(quantity)
    nanos = int(scaled.numerator)
    if type(quantity) is str and len(_nanos_of_text) < _CACHE_LIMIT:
        _nanos_of_text[quantity] = nanos
    return nanos


def _add_nanos(into: Nanos, more: Nanos) -> None:
    for name, nanos in more.items():
        into[name] = into.get(name, 0) + nanos


def _max_nanos(into: Nanos, other: Nanos) -> None:
    for name, nanos in other.items():
        if nanos > into.get(name, 0):
            into[name] = nanos


def _canonical(name: str, nanos: int) -> float:
    """A positive total in nano-units as a canonical amount, rounded up to its grain."""
    try:
        if name == "cpu":
            return float(-(-nanos // _MILLI_IN_NANOS))
        if is_byte_resource(name):
            return float(-(-nanos // _NANO))
        return -(-nanos // _MILLI_IN_NANOS) / 1000
    except OverflowError:
        raise QuantityError(f"quantity of {name} is too large to represent") from None


# -- the exact path (quantities finer than a nano-unit) ------------------------------------------


def _pod_requests_exact(spec: Mapping[str, Any], non_zero: bool) -> Resource:
    running: Amounts = {}  # app containers and sidecars, all running together
    for container in spec.get("containers") or ():
        _add(running, _container_requests(container, "container", non_zero))

    sidecars: Amounts = {}  # sidecars started so far
    init_peak: Amounts = {}  # the largest need of any regular init container
    for container in spec.get("initContainers") or ():
        own = _container_requests(container, "init container", non_zero)
        if container.get("restartPolicy") == "Always":
            _add(sidecars, own)
            _add(running, own)
        else:
            need = dict(sidecars)
            _add(need, own)
            _max(init_peak, need)

    total = running
    _max(total, init_peak)

    pod_level = (spec.get("resources") or {}).get("requests")
    if pod_level:
        for name, amount in _parse_list(pod_level, "spec.resources.requests").items():
            if name in ("cpu", "memory") or name.startswith("hugepages-"):
                total[name] = amount

    overhead = spec.get("overhead")
    if overhead:
        _add(total, _parse_list(overhead, "spec.overhead"))

    values = {}
    for name, amount in total.items():
        if amount:
            values[name] = canonical_from_fraction(name, amount)
    return Resource(values)


def _container_requests(container: Mapping[str, Any], kind: str, non_zero: bool) -> Amounts:
    """One container's requests, with the scoring defaults when ``non_zero``."""
    where = f"{kind} {container.get('name', '?')!r}"
    requests = (container.get("resources") or {}).get("requests") or {}
    amounts = _parse_list(requests, where)
    if non_zero:
        for name, default in _NON_ZERO.items():
            if name not in amounts:
                amounts[name] = default
    return amounts


def _parse_list(resource_list: Mapping[str, Any], where: str) -> Amounts:
    """A Kubernetes resource list as exact amounts; entries set to null are left out."""
    amounts: Amounts = {}
    for name, quantity in resource_list.items():
        if quantity is None:
            continue
        try:
            amount = parse_quantity(quantity)
        except QuantityError as err:
            raise QuantityError(f"{where}, resource {name!r}: {err}") from err
        if amount < 0:
            raise QuantityError(
                f"{where}, resource {name!r}: invalid quantity {quantity!r}: negative request"
            )
        amounts[name] = amount
    return amounts


def _add(into: Amounts, more: Mapping[str, Fraction]) -> None:
    for name, amount in more.items():
        into[name] = into.get(name, 0) + amount


def _max(into: Amounts, other: Mapping[str, Fraction]) -> None:
    for name, amount in other.items():
        if amount > into.get(name, 0):
            into[name] = amount
