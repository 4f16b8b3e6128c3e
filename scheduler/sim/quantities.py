"""Quantities as the API server decodes and re-encodes them (``resource.Quantity``).

The real server refuses a malformed quantity while *decoding* the request (400, before any
validation), and stores every quantity of a built-in kind in canonical form: ``1000m`` becomes
``1``, ``1024Mi`` becomes ``1Gi``, ``0.5`` becomes ``500m``, ``1e3`` stays in exponent form.
Values are kept to nano precision, rounded up. Custom resources (PodGroup, Queue) are not
decoded into Go types, so their quantities are checked against the CRD's pattern instead and
stored as written (``pumice.sim.validation``).
"""

from __future__ import annotations

import functools
import re
from fractions import Fraction
from typing import Any

from pumice.model.quantity import QuantityError, parse_quantity
from pumice.plain import PumiceError

FORMAT_WRONG = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
NUMERIC_WRONG = "unable to parse numeric part of quantity"
SUFFIX_WRONG = "unable to parse quantity's suffix"

_SHAPE = re.compile(r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$")
_NUMBER = re.compile(r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)$")
_DECIMAL_SUFFIX = {
    -9: "n",
    -6: "u",
    -3: "m",
    0: "",
    3: "k",
    6: "M",
    9: "G",
    12: "T",
    15: "P",
    18: "E",
}
_BINARY_SUFFIX = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
_NANO = Fraction(1, 10**9)


class BadQuantity(PumiceError, ValueError):
    """A value that does not decode as a quantity; the message is the real server's."""


def _text(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise BadQuantity(FORMAT_WRONG)
    if isinstance(value, str):
        return value
    return str(value) if isinstance(value, int) else repr(value)


def decode(value: Any) -> tuple[Fraction, str]:
    """The exact value (rounded up to a nano) and the format (``BinarySI``, ``DecimalSI``,
    ``DecimalExponent``) of a quantity; ``BadQuantity`` with the real wording otherwise."""
    return _decode_text(_text(value))


# every pod carries a few quantities and they repeat across pods: decode each text once
@functools.lru_cache(maxsize=8192)
def _decode_text(text: str) -> tuple[Fraction, str]:
    shape = _SHAPE.match(text)
    if shape is None:
        raise BadQuantity(FORMAT_WRONG)
    number, suffix = shape.groups()
    if not _NUMBER.match(number):
        raise BadQuantity(NUMERIC_WRONG)
    try:
        exact = parse_quantity(text)
    except QuantityError:
        raise BadQuantity(SUFFIX_WRONG) from None
    if suffix.endswith("i"):
        fmt = "BinarySI"
    elif suffix[:1] in ("e", "E") and len(suffix) > 1:
        fmt = "DecimalExponent"
    else:
        fmt = "DecimalSI"
    scaled = exact / _NANO
    if scaled.denominator != 1:
        exact = Fraction(-(-scaled.numerator // scaled.denominator)) * _NANO
    return exact, fmt


def canonical(value: Any) -> str:
    """The canonical text of a quantity, as the real server stores it."""
    return _canonical_text(_text(value))


@functools.lru_cache(maxsize=8192)
def _canonical_text(text: str) -> str:
    exact, fmt = _decode_text(text)
    return format_quantity(exact, fmt)


def format_quantity(exact: Fraction, fmt: str) -> str:
    if exact == 0:
        return "0"
    if fmt == "BinarySI":
        if -1024 < exact < 1024 or exact.denominator != 1:
            fmt = "DecimalSI"
        else:
            whole, power = exact.numerator, 0
            while power < len(_BINARY_SUFFIX) - 1 and whole % 1024 == 0:
                whole //= 1024
                power += 1
            return f"{whole}{_BINARY_SUFFIX[power]}"
    # mantissa * 10**exponent with the mantissa's trailing zeros removed, then the exponent
    # lowered to a multiple of three
    exponent = -9
    mantissa = exact.numerator * (10**9 // exact.denominator)
    while mantissa % 10 == 0:
        mantissa //= 10
        exponent += 1
    while exponent % 3:
        mantissa *= 10
        exponent -= 1
    if fmt == "DecimalSI" and exponent in _DECIMAL_SUFFIX:
        return f"{mantissa}{_DECIMAL_SUFFIX[exponent]}"
    return f"{mantissa}e{exponent}" if exponent else str(mantissa)
