"""The numbers pumice reads as text: Kubernetes quantities (exact parsing, conversion to
pumice's canonical units, and back to text for people: ``format_amount``) and durations.

A quantity is written ``[sign] number [suffix]`` where the number is ``123``, ``1.5``, ``5.`` or
``.5`` and the suffix is one of

* a binary SI suffix: ``Ki Mi Gi Ti Pi Ei`` (powers of 1024);
* a decimal SI suffix: ``n u m`` (nano, micro, milli), none, ``k M G T P E`` (powers of 1000);
* a decimal exponent: ``e`` or ``E`` followed by an optionally signed integer (``1e3``,
  ``12E-3``). ``1E`` alone is the exa suffix, ``1e`` alone is an error.

``parse_quantity`` returns the exact value as a ``Fraction``. ``canonical_amount`` converts a
quantity of a named resource to the canonical unit the resource model uses, rounding up (away
from zero) to the unit's grain the way Kubernetes' own accounting does:

============================================================  ==============  ===========
resource                                                       unit            grain
============================================================  ==============  ===========
``cpu``                                                        millicores      1 millicore
``memory``, ``ephemeral-storage``, ``hugepages-*``             bytes           1 byte
everything else (``nvidia.com/gpu``, ``pods``, …)              count           1/1000
============================================================  ==============  ===========

So ``"0.5m"`` of cpu is 1 millicore, and ``"1.5"`` bytes of memory is 2 bytes, as in
kube-scheduler; counts keep thousandths so that ``"500m"`` of a device is ``0.5``.

Errors::

    PumiceError, ValueError   (pumice.plain)
    ├── QuantityError   the text is not a quantity, or its value is out of range
    └── DurationError   the text is neither a Go duration nor a bare number of seconds

**Durations** (``parse_duration``), one rule for every place pumice reads one (configuration,
the simulated server, what-if traces).

A duration is either

* a Go duration string (``time.ParseDuration``): an optional sign, then one or more
  ``<number><unit>`` parts, the number a decimal with an optional fraction (``1``, ``1.5``,
  ``.5``, ``5.``) and the unit one of ``ns``, ``us`` (or ``µs`` / ``μs``), ``ms``, ``s``, ``m``,
  ``h`` — ``"1h2m3.5s"``, ``"500ms"``, ``"1us"``, ``"-2s"``; or
* a bare decimal number, meaning seconds — ``"3"``, ``"0.25"``, ``"-1"`` (Go allows only
  ``"0"`` without a unit; pumice reads every bare number as seconds, so ``period: "5"`` and
  ``period: 5`` agree).

Surrounding whitespace is ignored. Anything else (``"1sec"``, ``"5d"``, ``"1 s"``, ``""``,
``"inf"``) is a ``DurationError`` (a ``ValueError``) whose message starts ``bad duration``.
Numbers that are not strings are seconds already and need no parsing.
"""

from __future__ import annotations

import functools
import math
import numbers
import re
from fractions import Fraction

from pumice.plain import PumiceError

__all__ = [
    "BYTE_RESOURCES",
    "DurationError",
    "QuantityError",
    "canonical_amount",
    "canonical_from_fraction",
    "format_amount",
    "is_byte_resource",
    "is_whole",
    "parse_duration",
    "parse_quantity",
    "plain_quantity",
]

MAX_EXPONENT = 1000
"""Largest decimal exponent magnitude accepted; beyond it a quantity is rejected as absurd (and
expensive to hold exactly)."""

BYTE_RESOURCES = frozenset({"memory", "ephemeral-storage"})
"""Resources counted in bytes, besides every ``hugepages-<size>``."""

_BINARY = {"Ki": 1024, "Mi": 1024**2, "Gi": 1024**3, "Ti": 1024**4, "Pi": 1024**5, "Ei": 1024**6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}

_QUANTITY = re.compile(
    r"(?P<sign>[+-]?)"
    r"(?P<int>[0-9]*)(?:(?P<point>\.)(?P<frac>[0-9]*))?"
    r"(?:(?P<binary>[KMGTPE]i)|[eE](?P<exp>[+-]?[0-9]+)|(?P<decimal>[numkMGTPE]?))",
    re.ASCII,
)
_SPLIT = re.compile(r"([+-]*)([0-9.]*)(.*)", re.ASCII | re.DOTALL)


class QuantityError(PumiceError, ValueError):
    """A value is not a Kubernetes quantity; the message names the value and says why."""


def parse_quantity(value: str | int | float) -> Fraction:
    """The exact value of a Kubernetes quantity (``"1.5Gi"``, ``"100m"``, ``"1e3"``, ``2``).

    Integers are taken as they are, floats by their shortest decimal form (so ``0.1`` is
    exactly 1/10). ``bool``, NaN, infinities, and any string outside the grammar in this
    module's docstring are a ``QuantityError``.
    """
    v: object = value  # checked at run time too: resource lists come from untyped YAML/JSON
    if isinstance(v, str):
        return _parse_text(v)
    if isinstance(v, bool):
        raise QuantityError(f"invalid quantity {v!r}: a boolean is not a quantity")
    if isinstance(v, numbers.Rational):
        return Fraction(int(v.numerator), int(v.denominator))
    if isinstance(v, float):
        if not math.isfinite(v):
            raise QuantityError(f"invalid quantity {v!r}: not a finite number")
        return Fraction(float.__repr__(v))
    raise QuantityError(
        f"invalid quantity {value!r}: expected a string or a number, not {type(value).__name__}"
    )


@functools.lru_cache(maxsize=4096)
def _parse_text(text: str) -> Fraction:
    m = _QUANTITY.fullmatch(text)
    if m is None or not (m["int"] or m["frac"]):
        raise QuantityError(f"invalid quantity {text!r}: {_diagnose(text)}")
    digits = m["int"] + (m["frac"] or "")
    number = Fraction(int(digits), 10 ** len(m["frac"] or ""))
    if m["sign"] == "-":
        number = -number
    if m["binary"]:
        return number * _BINARY[m["binary"]]
    if m["exp"] is not None:
        exponent = int(m["exp"])
        if abs(exponent) > MAX_EXPONENT:
            raise QuantityError(
                f"invalid quantity {text!r}: exponent {exponent} is out of range "
                f"(at most ±{MAX_EXPONENT})"
            )
    else:
        exponent = _DECIMAL[m["decimal"]]
    return number * Fraction(10) ** exponent


def _diagnose(text: str) -> str:
    """Why ``text`` is not a quantity, in words."""
    if not text:
        return "empty string"
    if any(c.isspace() for c in text):
        return "contains whitespace"
    m = _SPLIT.fullmatch(text)
    assert m is not None  # the pattern matches every string
    signs, number, suffix = m.groups()
    if len(signs) > 1:
        return "more than one sign"
    if not any(c.isdigit() for c in number):
        return "no digits before the suffix" if suffix else "no digits"
    if number.count(".") > 1:
        return "more than one decimal point"
    if suffix == "e":
        return "exponent 'e' without digits (expected e.g. 1e3; the exa suffix is 'E')"
    if suffix[:1] in ("e", "E") and len(suffix) > 1:
        return f"bad exponent {suffix[1:]!r} (expected an integer such as e3 or E-3)"
    return (
        f"unknown suffix {suffix!r} (expected Ki Mi Gi Ti Pi Ei, n u m k M G T P E, "
        "or an exponent such as e3)"
    )


def is_byte_resource(resource_name: str) -> bool:
    """True for resources measured in bytes: memory, ephemeral-storage, hugepages-*."""
    return resource_name in BYTE_RESOURCES or resource_name.startswith("hugepages-")


def canonical_from_fraction(resource_name: str, value: Fraction) -> float:
    """An exact amount of ``resource_name`` (in its Kubernetes unit) in pumice's canonical unit.

    cpu → millicores, byte resources → bytes (both rounded up to a whole unit), other resources
    → counts rounded up to a thousandth. Rounding is away from zero, so a tiny positive amount
    never becomes 0 and a negative one stays negative.
    """
    if resource_name == "cpu":
        scaled, grain = value * 1000, 1
    elif is_byte_resource(resource_name):
        scaled, grain = value, 1
    else:
        scaled, grain = value * 1000, 1000
    whole = -(-abs(scaled.numerator) // scaled.denominator)  # ceil of the magnitude
    if scaled < 0:
        whole = -whole
    try:
        amount = whole / grain
    except OverflowError:
        amount = math.inf
    if not math.isfinite(amount):
        raise QuantityError(f"quantity of {resource_name} is too large to represent")
    return amount


def canonical_amount(resource_name: str, value: str | int | float) -> float:
    """A quantity of ``resource_name`` in canonical units: ``("cpu", "500m")`` → 500.0,
    ``("memory", "1Ki")`` → 1024.0, ``("nvidia.com/gpu", "2")`` → 2.0.

    Raises ``QuantityError`` for a bad quantity (see ``parse_quantity``).
    """
    if type(value) is str:
        return _canonical_text(resource_name, value)
    return canonical_from_fraction(resource_name, parse_quantity(value))


@functools.lru_cache(maxsize=8192)
def _canonical_text(resource_name: str, text: str) -> float:
    return canonical_from_fraction(resource_name, _parse_text(text))


# -- formatting ---------------------------------------------------------------------------------


def is_whole(value: float) -> bool:
    """No fractional part."""
    return value == math.floor(value)


def plain_quantity(value: float) -> str:
    """A number as a Kubernetes quantity without suffix: ``"3"``, ``"0.5"``, ``"1.5e-07"``."""
    if is_whole(value):
        return str(int(value))
    nearest = round(value)
    if abs(value - nearest) <= 1e-9 * max(1.0, abs(value)):
        return str(int(nearest))  # float noise from scaling, e.g. 0.7 * 1000
    return float.__repr__(value)


_SUFFIXES = tuple((f"{p}i", 1024 ** (n + 1)) for n, p in reversed(list(enumerate("KMGTPE"))))
_SUFFIXES += tuple((p, 1000 ** (n + 1)) for n, p in reversed(list(enumerate("kMGTPE"))))


def format_amount(name: str, value: float) -> str:
    """An amount of ``name`` for people: cpu ``2`` or ``500m``, memory ``1Gi`` / ``1G`` / bytes,
    counts ``2`` or ``500m``."""
    if name == "cpu":
        return (
            plain_quantity(value / 1000) if is_whole(value / 1000) else plain_quantity(value) + "m"
        )
    if is_byte_resource(name):
        if value >= 1024 and is_whole(value):
            whole = int(value)
            for suffix, size in _SUFFIXES:
                if whole % size == 0:
                    return f"{whole // size}{suffix}"
        return plain_quantity(value)
    return plain_quantity(value) if is_whole(value) else plain_quantity(value * 1000) + "m"


_NUMBER = r"(?:[0-9]+\.?[0-9]*|\.[0-9]+)"
_BARE = re.compile(rf"[+-]?{_NUMBER}", re.ASCII)
_PART = re.compile(rf"({_NUMBER})(ns|us|µs|μs|ms|s|m|h)")
_UNIT_SECONDS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,  # U+00B5 micro sign
    "μs": 1e-6,  # U+03BC Greek mu
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}


class DurationError(PumiceError, ValueError):
    """A text that is neither a Go duration nor a bare number of seconds."""


def parse_duration(text: str) -> float:
    """Seconds in a duration (see the module docstring): ``"1m30s"`` → 90.0, ``"3"`` → 3.0."""
    body = text.strip()
    if _BARE.fullmatch(body):
        return float(body)
    sign = 1.0
    if body[:1] in ("+", "-"):
        sign = -1.0 if body[0] == "-" else 1.0
        body = body[1:]
    if not body:
        raise DurationError(f"bad duration {text!r}")
    total, pos = 0.0, 0
    while pos < len(body):
        match = _PART.match(body, pos)
        if match is None:
            raise DurationError(f"bad duration {text!r}")
        total += float(match[1]) * _UNIT_SECONDS[match[2]]
        pos = match.end()
    return sign * total
