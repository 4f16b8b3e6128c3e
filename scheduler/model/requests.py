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

The sums are exact (``Fraction``); only the pod's total is converted to canonical units, so
rounding up to a whole millicore or byte happens once, as in kube-scheduler.

``non_zero=True`` is for scoring only: a container (app, sidecar or init) that omits a cpu
request counts as 100m and one that omits a memory request as 200Mi; an explicit 0 stays 0.
Fitting a pod on a node uses the real requests (``non_zero=False``).

The result holds only the resources the pod needs a non-zero amount of. A malformed or negative
quantity raises ``QuantityError`` naming the container (or pod field) and the resource.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from pumice.model.quantity import QuantityError, canonical_from_fraction, parse_quantity
from pumice.model.resource import Resource

__all__ = ["NON_ZERO_CPU_MILLI", "NON_ZERO_MEMORY_BYTES", "pod_requests"]

NON_ZERO_CPU_MILLI = 100.0
"""Scoring default for a container that omits its cpu request (millicores)."""

NON_ZERO_MEMORY_BYTES = 200 * 1024 * 1024
"""Scoring default for a container that omits its memory request (bytes)."""

_NON_ZERO = {"cpu": Fraction(1, 10), "memory": Fraction(NON_ZERO_MEMORY_BYTES)}

Amounts = dict[str, Fraction]


def pod_requests(pod: Mapping[str, Any], *, non_zero: bool = False) -> Resource:
    """The resources ``pod`` (a plain dict with ``spec``) requests, in canonical units."""
    spec = pod.get("spec") or {}
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
