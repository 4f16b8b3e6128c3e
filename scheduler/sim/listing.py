"""Paged lists that cost each page its own size, not the table's.

A list with ``limit`` is answered page by page, every page at the resourceVersion of the first
(the continue token carries it). Filtering and sorting the whole table again for every page
makes a list of N objects in pages of L cost N²/L; at 150,000 pods that is minutes. Instead,
the first page (or the first page asked for with a token this server has not seen) computes
the table's matching keys in order once, as a ``Listing``, and remembers it under what defines
it — the table, the resourceVersion and the selector. The next pages find their start in it by
bisection. A remembered listing stays right for as long as it is kept: stored objects are
never mutated, and the resourceVersion pins the state it was taken from. Only a few are kept
(the newest ones), and the caller still answers 410 for versions older than the history.
The continue token itself is the API server's (``encode_continue``, ``decode_continue``).
"""

from __future__ import annotations

import base64
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import orjson

from pumice.sim.errors import ApiError
from pumice.sim.objects import Key, Obj
from pumice.sim.selectors import Selector

LISTINGS_KEPT = 16
"""Listings remembered for paged lists in progress (each a list of references)."""


@dataclass(frozen=True, slots=True)
class Listing:
    """The objects a selector matched in a table at one resourceVersion, in key order."""

    keys: list[Key]
    objects: list[Obj]

    def page(self, after: Key | None, limit: int) -> tuple[list[Obj], Key | None, int]:
        """Up to ``limit`` objects (all when 0) after the key ``after``: the objects, the key
        of the last one (None when there is none) and how many come after it."""
        start = 0 if after is None else bisect_right(self.keys, after)
        end = len(self.keys) if not limit else min(len(self.keys), start + limit)
        last = self.keys[end - 1] if end > start else None
        return self.objects[start:end], last, len(self.keys) - end


def listing(table: dict[Key, Obj], keys: Iterable[Key], selector: Selector) -> Listing:
    """The objects of ``table`` under ``keys`` that ``selector`` matches, in key order."""
    if selector.trivial:
        ordered = sorted(keys)
    else:
        matches = selector.matches
        ordered = sorted([k for k in keys if matches(table[k])])
    return Listing(ordered, [table[k] for k in ordered])


class Listings:
    """The few listings of paged lists in progress, newest last."""

    def __init__(self, kept: int = LISTINGS_KEPT) -> None:
        self.kept = kept
        self._recent: OrderedDict[tuple[str, int, Selector], Listing] = OrderedDict()

    def get(
        self, table: str, at: int, selector: Selector, compute: Callable[[], Listing]
    ) -> Listing:
        """The remembered listing of ``table`` at ``at`` for ``selector``, else ``compute()``
        (not remembered: call ``keep`` once a page needs a continue token)."""
        found = self._recent.get((table, at, selector))
        if found is not None:
            self._recent.move_to_end((table, at, selector))
            return found
        return compute()

    def keep(self, table: str, at: int, selector: Selector, result: Listing) -> None:
        key = (table, at, selector)
        self._recent[key] = result
        self._recent.move_to_end(key)
        while len(self._recent) > self.kept:
            self._recent.popitem(last=False)


def encode_continue(rv: int, key: Key) -> str:
    """The continue token of a page that ended at ``key``, listed at ``rv`` (the API server's
    form: base64 of its JSON)."""
    raw = orjson.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": f"{key[0]}/{key[1]}\x00"})
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_continue(token: str) -> tuple[int, Key]:
    """The resourceVersion and the last key of the page a continue token ended; 400 if the
    token is not one."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        data = orjson.loads(raw)
        rv = int(data["rv"])
        ns, _, name = str(data["start"]).rstrip("\x00").partition("/")
    except (ValueError, KeyError, TypeError, orjson.JSONDecodeError):
        raise ApiError(
            400,
            "BadRequest",
            "continue key is not valid: incorrect encoded start resourceVersion "
            "(version meta.k8s.io/v1)",
        ) from None
    return rv, (ns, name)
