"""Quantities as the API server decodes and stores them: the canonical form it writes back,
the three decode errors in its wording, and (as a property) that canonicalizing keeps the value
and is idempotent."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pumice.sim.quantities import FORMAT_WRONG, NUMERIC_WRONG, SUFFIX_WRONG, BadQuantity, canonical
from pumice.sim.quantities import decode as decode_quantity


@pytest.mark.parametrize(
    ("written", "stored"),
    [
        ("1000m", "1"),
        ("1500m", "1500m"),
        ("0.5", "500m"),
        (0.5, "500m"),
        (2, "2"),
        ("1024Mi", "1Gi"),
        ("1536Mi", "1536Mi"),
        ("1.5Ki", "1536"),
        ("512", "512"),
        ("1000000k", "1G"),
        ("1e3", "1e3"),
        ("12e-3", "12e-3"),
        ("1E", "1E"),
        ("0.1n", "1n"),  # nano precision, rounded up
        ("+5.", "5"),
        (".25", "250m"),
        ("0Gi", "0"),
        ("-1", "-1"),
        ("100u", "100u"),
    ],
)
def test_canonical_form(written: object, stored: str) -> None:
    assert canonical(written) == stored


@pytest.mark.parametrize(
    ("written", "why"),
    [
        ("lots", FORMAT_WRONG),
        ("8 cores", FORMAT_WRONG),
        ("", FORMAT_WRONG),
        ("1Qi", FORMAT_WRONG),
        (True, FORMAT_WRONG),
        (None, FORMAT_WRONG),
        ("1.2.3", NUMERIC_WRONG),
        ("1ki", SUFFIX_WRONG),
        ("1e", SUFFIX_WRONG),
    ],
)
def test_decode_errors_use_the_real_wording(written: object, why: str) -> None:
    with pytest.raises(BadQuantity) as caught:
        canonical(written)
    assert str(caught.value) == why


SUFFIXES = ["", "m", "k", "M", "G", "Ki", "Mi", "Gi", "e3", "e-2", "n", "u"]


@given(
    whole=st.integers(min_value=0, max_value=10**12),
    fraction=st.sampled_from(["", ".5", ".25", ".125", ".001"]),
    suffix=st.sampled_from(SUFFIXES),
)
def test_canonical_keeps_the_value_and_is_idempotent(
    whole: int, fraction: str, suffix: str
) -> None:
    text = f"{whole}{fraction}{suffix}"
    value, _ = decode_quantity(text)
    stored = canonical(text)
    assert decode_quantity(stored)[0] == value
    # A binary amount that is a whole number of bytes but no multiple of 1024 is written
    # without a suffix ('4458828.125Ki' -> '4565840000'), and a number without a suffix reads
    # back as decimal ('4565840k'), as the API server's resource.Quantity does: the value is
    # kept every time, and the text is fixed from the second write on.
    again = canonical(stored)
    assert decode_quantity(again)[0] == value
    assert canonical(again) == again
    assert again == stored or (stored.isdigit() and suffix.endswith("i"))
    assert value >= Fraction(0)
