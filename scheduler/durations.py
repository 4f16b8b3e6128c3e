"""Durations, one rule for every place pumice reads one (configuration, the simulated server).

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

import re

from pumice.plain import PumiceError

__all__ = ["DurationError", "parse_duration"]

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
