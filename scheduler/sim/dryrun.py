"""Dry-run requests (``?dryRun=All``): the whole request runs, nothing is kept.

The real server sends a dry-run request through decoding, defaulting, validation and admission
exactly like the real one and stops right before storage, answering with the object it would
have stored. We get the same by running the ordinary handler with the store in dry-run mode:
``Store.commit`` then answers with the change it would make, without storing it, taking a
resourceVersion, recording history or telling watchers and the KWOK-like lifecycle. Every verb
gets it for free (create, update, patch, delete, deletecollection, status, binding, eviction,
namespace deletion), because all of them end in ``Store.commit``.

A dry run must not shift what later real requests see either: the registry's random generator
(``generateName`` suffixes) and the node address allocator are restored afterwards. The write
log leaves dry-run requests out (``pumice.sim.server`` reads the request's ``DRY_RUN`` mark).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import orjson
from aiohttp import web
from multidict import MultiMapping

from pumice.sim.errors import invalid

if TYPE_CHECKING:
    from pumice.sim.registry import Registry

ALL = "All"
DRY_RUN = web.RequestKey("pumice.dry_run", bool)
"""The key a dry-run request is marked with (aiohttp request state)."""

_OPTIONS_KIND = {
    "create": "CreateOptions",
    "update": "UpdateOptions",
    "patch": "PatchOptions",
    "delete": "DeleteOptions",
    "deletecollection": "DeleteOptions",
}


def requested(query: MultiMapping[str], *, verb: str, raw: bytes, subresource: str) -> bool:
    """Whether the request asks for a dry run (in the query, or for deletions and evictions
    in the DeleteOptions of the body, where kubectl puts it); 422 for a value but ``All``."""
    values = list(query.getall("dryRun", [])) + _in_body(raw, verb, subresource)
    if not values:
        return False
    if any(v != ALL for v in values):
        shown = ", ".join(f'"{v}"' for v in values)
        raise invalid(
            _OPTIONS_KIND.get(verb, "CreateOptions"),
            "meta.k8s.io",
            name="",
            causes=[
                (
                    "dryRun",
                    "FieldValueNotSupported",
                    f'Unsupported value: []string{{{shown}}}: supported values: "{ALL}"',
                )
            ],
        )
    return True


def _in_body(raw: bytes, verb: str, subresource: str) -> list[str]:
    if not raw or not (verb in ("delete", "deletecollection") or subresource == "eviction"):
        return []
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return []  # the handler reports the malformed body
    if isinstance(body, dict) and subresource == "eviction":
        body = body.get("deleteOptions")
    values = body.get("dryRun") if isinstance(body, dict) else None
    return [str(v) for v in values] if isinstance(values, list) else []


@contextmanager
def dry_run(registry: Registry) -> Iterator[None]:
    """Run the body against ``registry`` with every write answered but none kept."""
    store = registry.store
    if store.dry_run:
        yield
        return
    rng_state = registry.rng.getstate()
    next_ip = registry.admission.next_node_ip
    store.dry_run = True
    try:
        yield
    finally:
        store.dry_run = False
        registry.rng.setstate(rng_state)
        registry.admission.next_node_ip = next_ip
