"""``Handler``: one informer's events into the cache, as ``InformerHandler`` wants them."""

from __future__ import annotations

import logging
from collections.abc import Callable

from pumice.plain import Obj

log = logging.getLogger("pumice.cache")


class Handler:
    """One informer's events, as the ``pumice.kube.informer.InformerHandler`` protocol wants.

    An object the cache cannot take is logged and skipped: one bad object never stops the
    informer that delivered it.
    """

    def __init__(
        self,
        upsert: Callable[[Obj], None],
        delete: Callable[[Obj], None],
        changed: Callable[[], None],
    ) -> None:
        self._upsert = upsert
        self._delete = delete
        self._changed = changed

    def on_add(self, obj: Obj) -> None:
        self._guarded(self._upsert, obj)

    def on_update(self, old: Obj, new: Obj) -> None:
        self._guarded(self._upsert, new)

    def on_delete(self, obj: Obj) -> None:
        self._guarded(self._delete, obj)

    def _guarded(self, apply: Callable[[Obj], None], obj: Obj) -> None:
        self._changed()
        try:
            apply(obj)
        except Exception:
            meta = obj.get("metadata") or {}
            log.exception(
                "cannot apply %s %s/%s to the cache; skipped",
                obj.get("kind") or "object",
                meta.get("namespace") or "",
                meta.get("name"),
            )
