"""Object uids whose string order is the order the objects were made in.

Volcano orders jobs of equal priority by creation time, then by uid. A real API server's uids
are random and its creation times whole seconds, so two pods created in the same second are
ordered at random there. ``pumice simulate`` and the simulated API server (``pumice.sim``) must
decide alike on the same manifests, so both make uids with this module: the simulated server for
every object it creates, ``pumice simulate`` for an object given without one, in input order.

The form is an RFC 9562 UUID of version 7 (48 bits of milliseconds, then a per-process counter,
then random bits), so any client takes it as an ordinary uid. Python 3.11's ``uuid`` has no
version 7, hence this module; the counter keeps the order within one millisecond and the random
tail keeps two processes' uids apart.
"""

from __future__ import annotations

import itertools
import secrets
import threading
import time

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
