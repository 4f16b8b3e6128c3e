"""Kubernetes quantity grammar, exact values, and canonical units."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pumice.model.quantity import (
    QuantityError,
    canonical_amount,
    is_byte_resource,
    parse_quantity,
)

BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", 0),
        ("1", 1),
        ("007", 7),
        ("1Ki", 1024),
        ("1k", 1000),
        ("1.5Gi", 3 * 2**29),
        ("100m", Fraction(1, 10)),
        ("500m", Fraction(1, 2)),
        ("1e3", 1000),
        ("1E3", 1000),
        ("1e+3", 1000),
        ("1e-3", Fraction(1, 1000)),
        ("12E-3", Fraction(12, 1000)),
        ("2.5e2", 250),
        ("-1", -1),
        ("+5", 5),
        ("-1.5Mi", -3 * 2**19),
        (".5", Fraction(1, 2)),
        ("5.", 5),
        ("+.5k", 500),
        ("1n", Fraction(1, 10**9)),
        ("3u", Fraction(3, 10**6)),
        ("1M", 10**6),
        ("1Mi", 2**20),
        ("1E", 10**18),
        ("1Ei", 2**60),
        ("2P", 2 * 10**15),
        ("1Ti", 2**40),
        ("0.1", Fraction(1, 10)),
        ("123456789012345678901234567890", 123456789012345678901234567890),
        ("0.000000001", Fraction(1, 10**9)),
    ],
)
def test_valid_quantities_have_exact_values(text: str, expected: int | Fraction) -> None:
    value = parse_quantity(text)
    assert isinstance(value, Fraction)
    assert value == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        " ",
        "1 ",
        " 1",
        "1 Gi",
        "1\n",
        "1.2.3",
        "1Gb",
        "1gi",
        "1ki",
        "1K",
        "1KiB",
        "Mi",
        "m",
        "--1",
        "+-1",
        "-",
        "+",
        ".",
        "-.",
        "1e",
        "e3",
        "1e1.5",
        "1ee3",
        "1e3Mi",
        "1Mi3",
        "0x10",
        "1_000",
        "1,5",
        "inf",
        "NaN",
        "Infinity",
        "1µ",
        "\u0661",  # ARABIC-INDIC DIGIT ONE: only ASCII digits make quantities
        "1e2000",
    ],
)
def test_invalid_quantities_are_errors_that_name_the_string(text: str) -> None:
    with pytest.raises(QuantityError) as info:
        parse_quantity(text)
    assert repr(text) in str(info.value)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "empty"),
        ("1 Gi", "whitespace"),
        ("1.2.3", "decimal point"),
        ("--1", "sign"),
        ("1Gb", "suffix 'Gb'"),
        ("Mi", "no digits"),
        ("1e", "without digits"),
        ("1e1.5", "exponent"),
        ("1e2000", "out of range"),
    ],
)
def test_error_messages_say_why(text: str, why: str) -> None:
    with pytest.raises(QuantityError, match=why):
        parse_quantity(text)


def test_quantity_error_is_a_value_error() -> None:
    assert issubclass(QuantityError, ValueError)


@pytest.mark.parametrize(
    ("number", "expected"),
    [
        (0, 0),
        (3, 3),
        (-2, -2),
        (0.1, Fraction(1, 10)),
        (1.5, Fraction(3, 2)),
        (1e20, 10**20),
        (2.5e-7, Fraction(25, 10**8)),
        (Fraction(1, 3), Fraction(1, 3)),
    ],
)
def test_numbers_are_taken_exactly_by_their_decimal_form(
    number: int | float, expected: int | Fraction
) -> None:
    assert parse_quantity(number) == expected


@pytest.mark.parametrize("bad", [True, False, math.nan, math.inf, -math.inf, None, [1], b"1"])
def test_non_quantity_values_are_rejected(bad: object) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(bad)  # type: ignore[arg-type]


def test_numpy_numbers_are_accepted() -> None:
    np = pytest.importorskip("numpy")
    assert parse_quantity(np.int64(4)) == 4  # type: ignore[arg-type]
    assert parse_quantity(np.float64(0.25)) == Fraction(1, 4)


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("cpu", "500m", 500.0),
        ("cpu", "2", 2000.0),
        ("cpu", 2, 2000.0),
        ("cpu", 0.25, 250.0),
        ("cpu", "1.5", 1500.0),
        ("cpu", "100u", 1.0),  # rounded up to a whole millicore, as Kubernetes does
        ("cpu", "0.5m", 1.0),
        ("cpu", "1001u", 2.0),
        ("cpu", "-0.5m", -1.0),  # away from zero: a negative amount stays negative
        ("memory", "1Gi", float(2**30)),
        ("memory", "1G", 1e9),
        ("memory", "1.5", 2.0),  # rounded up to a whole byte
        ("memory", "1500m", 2.0),
        ("memory", 128974848, 128974848.0),
        ("memory", "129e6", 129e6),
        ("ephemeral-storage", "10Gi", float(10 * 2**30)),
        ("hugepages-2Mi", "4Mi", float(4 * 2**20)),
        ("hugepages-1Gi", "2Gi", float(2 * 2**30)),
        ("nvidia.com/gpu", "2", 2.0),
        ("nvidia.com/gpu", 2, 2.0),
        ("nvidia.com/gpu", "500m", 0.5),
        ("pods", "110", 110.0),
        ("example.com/foo", "1n", 0.001),  # counts keep thousandths, rounded up
        ("example.com/foo", "1k", 1000.0),
        ("cpu", "0", 0.0),
    ],
)
def test_canonical_amount(name: str, value: str | int | float, expected: float) -> None:
    assert canonical_amount(name, value) == expected


def test_canonical_amount_rejects_bad_quantities_and_overflow() -> None:
    with pytest.raises(QuantityError, match="'1Gb'"):
        canonical_amount("memory", "1Gb")
    with pytest.raises(QuantityError, match="too large"):
        canonical_amount("memory", "1e400")
    with pytest.raises(QuantityError):
        canonical_amount("cpu", True)


def test_byte_resources() -> None:
    assert is_byte_resource("memory")
    assert is_byte_resource("ephemeral-storage")
    assert is_byte_resource("hugepages-2Mi")
    assert not is_byte_resource("cpu")
    assert not is_byte_resource("nvidia.com/gpu")
    assert not is_byte_resource("storage-class")


@given(
    n=st.integers(min_value=-(10**12), max_value=10**12),
    suffix=st.sampled_from(sorted(BINARY) + sorted(DECIMAL)),
)
def test_integer_with_suffix_round_trips(n: int, suffix: str) -> None:
    multiplier = BINARY.get(suffix) or DECIMAL[suffix]
    assert parse_quantity(f"{n}{suffix}") == n * multiplier


@given(
    n=st.integers(min_value=0, max_value=10**9),
    exponent=st.integers(min_value=-30, max_value=30),
    letter=st.sampled_from(["e", "E"]),
    sign=st.sampled_from(["", "+", "-"]),
)
def test_integer_with_exponent_round_trips(n: int, exponent: int, letter: str, sign: str) -> None:
    text = f"{sign}{n}{letter}{exponent}"
    expected = n * Fraction(10) ** exponent
    assert parse_quantity(text) == (-expected if sign == "-" else expected)


@given(
    whole=st.integers(min_value=0, max_value=10**6),
    frac=st.text(alphabet="0123456789", min_size=1, max_size=9),
    suffix=st.sampled_from(sorted(BINARY) + sorted(DECIMAL)),
)
def test_decimal_with_suffix_is_exact(whole: int, frac: str, suffix: str) -> None:
    multiplier = BINARY.get(suffix) or DECIMAL[suffix]
    expected = (whole + Fraction(int(frac), 10 ** len(frac))) * multiplier
    assert parse_quantity(f"{whole}.{frac}{suffix}") == expected


@given(st.floats(allow_nan=False, allow_infinity=False, width=64))
def test_floats_parse_to_the_same_float(x: float) -> None:
    assert float(parse_quantity(x)) == x


@given(n=st.integers(min_value=0, max_value=10**7))
def test_canonical_cpu_of_millicores_is_exact(n: int) -> None:
    assert canonical_amount("cpu", f"{n}m") == float(n)
    assert canonical_amount("nvidia.com/gpu", f"{n}m") == n / 1000
