"""``Resource``: an immutable named resource vector in canonical units.

Canonical units (see ``pumice.model.quantity``): cpu in millicores; memory, ephemeral-storage and
hugepages-* in bytes; every other resource (``nvidia.com/gpu``, ``pods``, …) as a count.

A dimension whose amount is 0 may be stored explicitly or be absent. Arithmetic and ``==`` treat
an absent dimension as 0; the comparison family (``less`` … ``greater_equal_partly``) treats a
dimension missing on one side as its ``default``: 0 for ``"zero"``, +∞ for ``"infinity"``. An
explicit 0 is therefore meaningful under ``"infinity"`` (a queue capability of ``gpu: 0`` allows
no GPU, a missing ``gpu`` allows any).

Tolerance
---------
Two amounts ``l`` and ``r`` of one dimension are *equal* when::

    |l - r| <= ABSOLUTE_TOLERANCE + RELATIVE_TOLERANCE * max(l, r)

with ``ABSOLUTE_TOLERANCE = 1e-6`` and ``RELATIVE_TOLERANCE = 1e-14`` (about 45 float64 ulps).
The smallest step a Kubernetes quantity can take in canonical units is 1 millicore, 1 byte or
1/1000 of a count (``canonical_amount`` rounds up to these grains), so the absolute part is at
least a thousand times below any real difference yet far above the rounding of small sums
(``0.1 + 0.2`` against ``0.3``); the relative part absorbs the rounding of large amounts (a
cluster's memory times a queue's share) while staying under one byte below 64 TiB. ``≤`` is
``<`` or equal, and ``<`` is "``≤`` and not equal", so ``l < r`` exactly when ``not r <= l``.
The same rule decides underflow in ``-``, ``is_empty``, ``names``, ``in`` and ``insufficient``.
``==`` and ``hash`` are exact (a tolerant ``==`` could not have a consistent hash); use
``equal`` for the tolerant test.

Comparisons
-----------
Over the union of both sides' dimensions: ``less`` / ``less_equal``: every dimension of self is
< / ≤ that of other; ``less_partly`` / ``less_equal_partly``: at least one is; ``equal``: every
dimension is equal; ``greater`` = not ``less_equal_partly``, ``greater_equal`` = not
``less_partly``, ``greater_partly`` = not ``less_equal``, ``greater_equal_partly`` = not
``less``. Hence ``a.less(b)`` is always ``b.greater(a)`` (and likewise for the other three
pairs). With no dimension on either side, "every" holds and "at least one" does not: ``less``,
``less_equal``, ``equal``, ``greater`` and ``greater_equal`` are True, the partly forms False.

Errors::

    PumiceError, ValueError   (pumice.plain)
    └── ResourceError        a negative or non-finite amount, a bad scale factor or default
        └── ResourceUnderflow  ``a - b`` would take some dimension below zero
"""

from __future__ import annotations

import math
from collections.abc import ItemsView, Mapping
from typing import Any, ClassVar, Literal, NoReturn

from pumice.model.quantity import (
    QuantityError,
    canonical_amount,
    format_amount,
    is_byte_resource,
    is_whole,
    plain_quantity,
)
from pumice.plain import PumiceError

__all__ = [
    "ABSOLUTE_TOLERANCE",
    "RELATIVE_TOLERANCE",
    "Default",
    "Resource",
    "ResourceError",
    "ResourceUnderflow",
    "format_amount",
    "sum_within",
]

Default = Literal["zero", "infinity"]

ABSOLUTE_TOLERANCE = 1e-6
RELATIVE_TOLERANCE = 1e-14

_ABS = ABSOLUTE_TOLERANCE
_REL = RELATIVE_TOLERANCE


class ResourceError(PumiceError, ValueError):
    """A resource vector or an operation on one is invalid."""


class ResourceUnderflow(ResourceError):
    """``a - b`` would take dimensions below zero; ``deficits`` maps each to how far."""

    def __init__(self, deficits: Mapping[str, float]) -> None:
        self.deficits = dict(deficits)
        short = ", ".join(
            f"{name} by {format_amount(name, amount)}"
            for name, amount in sorted(self.deficits.items())
        )
        super().__init__(f"resource underflow: subtraction goes below zero in {short}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.deficits,))


def _infinite(default: str) -> bool:
    """True for ``"infinity"``, False for ``"zero"``; anything else is an error."""
    if default == "zero":
        return False
    if default == "infinity":
        return True
    raise ResourceError(f"default must be 'zero' or 'infinity', not {default!r}")


class Resource:
    """An immutable, hashable named resource vector in canonical units.

    ``Resource({"cpu": 500.0, "memory": 2**30})`` or
    ``Resource.from_k8s({"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": 2})``.
    See the module docstring for units, missing dimensions and the tolerance.
    """

    __slots__ = ("_hash", "_values")

    _values: dict[str, float]
    _hash: int  # set on first use

    __iter__: ClassVar[None] = None  # not a sequence: ``r[0]`` must not make it iterable

    def __init__(self, values: Mapping[str, float] | None = None, /) -> None:
        checked: dict[str, float] = {}
        if values:
            for name, amount in values.items():
                if not isinstance(name, str) or not name:
                    raise ResourceError(f"resource name must be a non-empty string: {name!r}")
                value = float(amount)
                if not value >= 0.0 or value == math.inf:
                    if -_ABS <= value < 0.0:
                        value = 0.0  # float noise around zero
                    else:
                        raise ResourceError(
                            f"amount of {name} must be finite and not negative: {amount!r}"
                        )
                checked[name] = value
        _set_values(self, checked)

    @classmethod
    def from_k8s(cls, resource_list: Mapping[str, str | int | float]) -> Resource:
        """From a Kubernetes resource list: ``{"cpu": "500m", "memory": "1Gi", "pods": 110}``.

        Explicit zeros are kept. A bad quantity raises ``QuantityError`` naming the resource.
        """
        values: dict[str, float] = {}
        for name, quantity in resource_list.items():
            try:
                values[name] = canonical_amount(name, quantity)
            except QuantityError as err:
                raise QuantityError(f"resource {name!r}: {err}") from err
        return cls(values)

    @classmethod
    def zero(cls) -> Resource:
        """The empty vector."""
        return _ZERO

    # -- immutability, copying, pickling -----------------------------------------------------

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError(f"Resource is immutable; cannot set {name!r}")

    def __delattr__(self, name: str) -> NoReturn:
        raise AttributeError(f"Resource is immutable; cannot delete {name!r}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (Resource, (self._values,))

    def __copy__(self) -> Resource:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Resource:
        return self

    # -- reading ----------------------------------------------------------------------------

    def __getitem__(self, name: str) -> float:
        return self._values.get(name, 0.0)

    def get(self, name: str, default: float = 0.0) -> float:
        """The amount of ``name``, or ``default`` if the dimension is not stored."""
        return self._values.get(name, default)

    def __contains__(self, name: object) -> bool:
        """True when the dimension has a non-zero amount (same as ``name in r.names()``)."""
        value = self._values.get(name) if isinstance(name, str) else None
        return value is not None and value > _ABS + _REL * value

    def names(self) -> frozenset[str]:
        """Dimensions with an amount above zero (beyond the tolerance)."""
        return frozenset(k for k, v in self._values.items() if v > _ABS + _REL * v)

    def dimensions(self) -> frozenset[str]:
        """Every stored dimension, explicit zeros included (what ``"infinity"`` looks at)."""
        return frozenset(self._values)

    def items(self) -> ItemsView[str, float]:
        """Stored ``(name, amount)`` pairs, explicit zeros included."""
        return self._values.items()

    def to_dict(self) -> dict[str, float]:
        """A new dict of the stored amounts, explicit zeros included."""
        return dict(self._values)

    def to_k8s(self) -> dict[str, str]:
        """A Kubernetes resource list: cpu as ``"NNNm"``, bytes as plain numbers, counts as
        plain numbers or ``"NNNm"`` when fractional. Parsing it back with ``from_k8s`` gives
        the same vector, except that fractional millicores and bytes round up."""
        out: dict[str, str] = {}
        for name, value in self._values.items():
            if name == "cpu":
                out[name] = plain_quantity(value) + "m"
            elif is_byte_resource(name) or is_whole(value):
                out[name] = plain_quantity(value)
            else:
                out[name] = plain_quantity(value * 1000) + "m"
        return out

    def is_empty(self) -> bool:
        """True when every dimension is zero (within the tolerance)."""
        for v in self._values.values():  # noqa: SIM110 - a loop: all(generator) costs more
            if v > _ABS + _REL * v:
                return False
        return True

    def __bool__(self) -> bool:
        return not self.is_empty()

    def __eq__(self, other: object) -> bool:
        """Exact equality, an absent dimension being 0. See ``equal`` for the tolerant test."""
        if not isinstance(other, Resource):
            return NotImplemented
        a, b = self._values, other._values
        if a == b:  # the common case, compared in C
            return True
        for name, value in a.items():
            if b.get(name, 0.0) != value:
                return False
        return all(value == 0.0 or name in a for name, value in b.items())

    def __hash__(self) -> int:
        try:
            return self._hash
        except AttributeError:
            h = hash(frozenset((k, v) for k, v in self._values.items() if v != 0.0))
            _set_hash(self, h)
            return h

    def __repr__(self) -> str:
        def order(name: str) -> tuple[int, str]:
            return ({"cpu": 0, "memory": 1}.get(name, 2), name)

        parts = (
            f"{k}={format_amount(k, self._values[k])}" for k in sorted(self._values, key=order)
        )
        return f"Resource({', '.join(parts)})"

    # -- arithmetic -------------------------------------------------------------------------

    def __add__(self, other: Resource) -> Resource:
        if not isinstance(other, Resource):
            return NotImplemented
        if not self._values:
            # the empty vector plus x is x: shared (immutable), not copied, so that a job of
            # one task (every pod without a PodGroup) holds no sums of its own
            return other
        out = dict(self._values)
        for name, value in other._values.items():
            out[name] = out.get(name, 0.0) + value
        return _wrap(out)

    def __sub__(self, other: Resource) -> Resource:
        if not isinstance(other, Resource):
            return NotImplemented
        return self.sub(other)

    def sub(self, other: Resource, *, clip: bool = False) -> Resource:
        """``self - other`` per dimension. A dimension going below zero beyond the tolerance
        raises ``ResourceUnderflow`` naming every such dimension, or, with ``clip=True``,
        becomes 0. Within the tolerance the result is 0."""
        out = dict(self._values)
        deficits: dict[str, float] | None = None
        for name, r in other._values.items():
            left = out.get(name, 0.0)
            diff = left - r
            if diff < 0.0:
                if not clip and -diff > _ABS + _REL * r:  # r > left, so max(left, r) == r
                    if deficits is None:
                        deficits = {}
                    deficits[name] = -diff
                diff = 0.0
            out[name] = diff
        if deficits:
            raise ResourceUnderflow(deficits)
        return _wrap(out)

    def scale(self, factor: float) -> Resource:
        """Every dimension times ``factor`` (finite, ≥ 0)."""
        k = float(factor)
        if not 0.0 <= k < math.inf:
            raise ResourceError(f"scale factor must be finite and not negative: {factor!r}")
        return _wrap({name: value * k for name, value in self._values.items()})

    def __mul__(self, factor: float) -> Resource:
        return self.scale(factor)

    __rmul__ = __mul__

    def min(self, other: Resource) -> Resource:
        """Per-dimension minimum over the union of dimensions (absent = 0)."""
        a, b = self._values, other._values
        out = {name: min(value, b.get(name, 0.0)) for name, value in a.items()}
        for name in b:
            if name not in a:
                out[name] = 0.0
        return _wrap(out)

    def max(self, other: Resource) -> Resource:
        """Per-dimension maximum over the union of dimensions (absent = 0)."""
        out = dict(self._values)
        for name, value in other._values.items():
            if name not in out or value > out[name]:
                out[name] = value
        return _wrap(out)

    def insufficient(self, available: Resource) -> list[str]:
        """Sorted names of the dimensions where ``self`` needs more than ``available`` has
        (absent in ``available`` = 0), beyond the tolerance: the "Insufficient <name>" list.
        Only dimensions where ``self`` is above zero can appear."""
        avail = available._values
        short = []
        for name, need in self._values.items():
            have = avail.get(name, 0.0)
            if need - have > _ABS + _REL * need:  # need > have, so max(need, have) == need
                short.append(name)
        short.sort()
        return short

    # -- comparisons ------------------------------------------------------------------------
    #
    # Each runs over the union of both sides' dimensions; a dimension missing on one side takes
    # the default. With "infinity" a finite amount is always < ∞, and ∞ is never ≤ a finite
    # amount. With no dimension at all, "every" holds (less, less_equal, equal are True) and
    # "at least one" does not (the *_partly forms are False).

    def less(self, other: Resource, default: Default = "zero") -> bool:
        """Every dimension of ``self`` is below that of ``other`` (beyond the tolerance)."""
        inf = _infinite(default)
        a, b = self._values, other._values
        for name, left in a.items():
            r = b.get(name)
            if r is None:
                if inf:
                    continue  # left < ∞
                r = 0.0
            if not r - left > _ABS + _REL * r:
                return False
        for name, r in b.items():
            if name not in a:
                if inf:
                    return False  # ∞ < r is false
                if not r > _ABS + _REL * r:  # 0 < r
                    return False
        return True

    def less_equal(self, other: Resource, default: Default = "zero") -> bool:
        """Every dimension of ``self`` is at most that of ``other`` (within the tolerance)."""
        inf = _infinite(default)
        a, b = self._values, other._values
        for name, left in a.items():
            r = b.get(name)
            if r is None:
                if inf:
                    continue  # left <= ∞
                r = 0.0
            if left - r > _ABS + _REL * left:
                return False
        # A dimension only in ``other``: 0 <= r always holds; ∞ <= r never does.
        return not (inf and any(name not in a for name in b))

    def sum_within(self, add: Resource, limit: Resource) -> bool:
        """``self + add <= limit`` (within the tolerance) on the dimensions ``add`` has above
        zero, a dimension ``limit`` lacks counting as 0: a queue's room for one more task,
        asked per task, without building the sum or the restricted resource."""
        return sum_within(self._values, add, limit)

    def less_partly(self, other: Resource, default: Default = "zero") -> bool:
        """At least one dimension of ``self`` is below that of ``other``."""
        inf = _infinite(default)
        a, b = self._values, other._values
        for name, left in a.items():
            r = b.get(name)
            if r is None:
                if inf:
                    return True  # left < ∞
                r = 0.0
            if r - left > _ABS + _REL * r:
                return True
        if not inf:
            for name, r in b.items():
                if r > _ABS + _REL * r and name not in a:  # 0 < r
                    return True
        return False

    def less_equal_partly(self, other: Resource, default: Default = "zero") -> bool:
        """At least one dimension of ``self`` is at most that of ``other``."""
        inf = _infinite(default)
        a, b = self._values, other._values
        for name, left in a.items():
            r = b.get(name)
            if r is None:
                if inf:
                    return True  # left <= ∞
                r = 0.0
            if not left - r > _ABS + _REL * left:
                return True
        # A dimension only in ``other``: 0 <= r always holds; ∞ <= r never does.
        return not inf and any(name not in a for name in b)

    def equal(self, other: Resource, default: Default = "zero") -> bool:
        """Every dimension is equal on both sides (within the tolerance)."""
        inf = _infinite(default)
        a, b = self._values, other._values
        for name, left in a.items():
            r = b.get(name)
            if r is None:
                if inf:
                    return False  # left == ∞ is false
                r = 0.0
            if abs(left - r) > _ABS + _REL * (left if left > r else r):
                return False
        # A dimension only in ``other``: ∞ never equals r; 0 equals r only when r is zero.
        return not any(name not in a and (inf or r > _ABS + _REL * r) for name, r in b.items())

    def greater(self, other: Resource, default: Default = "zero") -> bool:
        """Every dimension of ``self`` is above that of ``other``: not ``less_equal_partly``."""
        return not self.less_equal_partly(other, default)

    def greater_equal(self, other: Resource, default: Default = "zero") -> bool:
        """Every dimension of ``self`` is at least that of ``other``: not ``less_partly``."""
        return not self.less_partly(other, default)

    def greater_partly(self, other: Resource, default: Default = "zero") -> bool:
        """At least one dimension of ``self`` is above that of ``other``: not ``less_equal``."""
        return not self.less_equal(other, default)

    def greater_equal_partly(self, other: Resource, default: Default = "zero") -> bool:
        """At least one dimension of ``self`` is at least that of ``other``: not ``less``."""
        return not self.less(other, default)


def sum_within(held: Mapping[str, float], add: Resource, limit: Resource) -> bool:
    """``Resource.sum_within`` for a sum kept as a plain mapping (one that changes in place
    with every allocation, where a new ``Resource`` per change would cost more)."""
    lim = limit._values
    for name, amount in add._values.items():
        if not amount > _ABS + _REL * amount:
            continue
        left = held.get(name, 0.0) + amount
        if left - lim.get(name, 0.0) > _ABS + _REL * left:
            return False
    return True


# The slots' own setters: they bypass the immutability guard, for this module's use only.
_set_values = Resource.__dict__["_values"].__set__
_set_hash = Resource.__dict__["_hash"].__set__


def _wrap(values: dict[str, float]) -> Resource:
    """A Resource owning ``values``, a dict already known to be valid (no copy, no checks)."""
    r = object.__new__(Resource)
    _set_values(r, values)
    return r


_ZERO = Resource()


def resource_list(resource: Resource) -> dict[str, str]:
    """A Kubernetes resource list as people write it: names sorted, zero amounts left out,
    canonical quantities in whole millicores and bytes (``{"cpu": "8", "memory": "8Gi"}``)."""
    out: dict[str, str] = {}
    for name, value in sorted(resource.items()):
        if not value:
            continue
        if name == "cpu" or is_byte_resource(name):
            out[name] = format_amount(name, float(round(value)))
        else:
            out[name] = format_amount(name, round(value, 3))
    return out
