"""StatusWriter: what pumice tells users through the API, written once and only on change;
and ``nominate``, the preemptor's nominated node.

* Events about pods and other objects (``Scheduled``, ``FailedScheduling``, bad PodGroups...),
  through the de-duplicating, rate-limited ``EventRecorder``.
* The pod condition ``PodScheduled=False`` with reason ``Unschedulable`` and the session's
  ``0/N nodes are available: ...`` message, as kube-scheduler writes it: a strategic merge
  patch of ``pods/{name}/status``, skipped when the pod already shows exactly that condition
  (or we wrote it last); ``lastTransitionTime`` moves only when the status flips.
* PodGroup and Queue ``status`` through their status subresource as JSON merge patches,
  skipped when equal to what we wrote last; keys we wrote before and no longer send are
  removed (``null``), so the server ends up with exactly the status given.

Every method returns whether it wrote something and never raises KubeError (status is
advice to users; a failed write is logged and counted, and the next cycle writes it again).
Writes run at most ``max_inflight`` at once, paced further by the client's QPS bucket.

``nominate`` writes a preemptor's ``status.nominatedNodeName``: where it waits for the room its
victims free. It is no advice to users but scheduling state (the allocate action reads it back
from the pod and places the preemptor there first), so it stays outside the ``StatusWriter``
surface: a merge patch of the pod's status subresource, skipped when the pod already says so;
its failures are logged (logger ``pumice.kube.nomination``) and reported as False.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections import OrderedDict
from dataclasses import dataclass

from pumice.kube.client import MERGE_PATCH, STRATEGIC_MERGE_PATCH, Kube
from pumice.kube.events import CACHE_SIZE, EventRecorder, micro_time
from pumice.kube.rest import PODGROUPS, PODS, QUEUES, Kind, KubeError, NotFound
from pumice.plain import Obj

log = logging.getLogger("pumice.kube.status")


POD_SCHEDULED = "PodScheduled"
UNSCHEDULABLE = "Unschedulable"


@dataclass
class StatusStats:
    conditions_written: int = 0
    conditions_skipped: int = 0
    statuses_written: int = 0
    statuses_skipped: int = 0
    failed: int = 0


def _meta(obj: Obj) -> Obj:
    value = obj.get("metadata")
    return value if isinstance(value, dict) else {}


def _condition(pod: Obj, kind: str) -> Obj | None:
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if isinstance(cond, dict) and cond.get("type") == kind:
            return cond
    return None


def _merge_patch(previous: Obj | None, new: Obj) -> Obj:
    """A merge patch turning ``previous`` (what the server has, as far as we know) into ``new``."""
    patch: Obj = dict(new)
    for key in previous or {}:
        if key not in new:
            patch[key] = None
    return patch


class StatusWriter:
    def __init__(
        self,
        kube: Kube,
        *,
        scheduler_name: str,
        instance: str,
        max_inflight: int = 16,
        series_interval: float = 30.0,
        core_events: bool = False,
    ) -> None:
        self.kube = kube
        self.scheduler_name = scheduler_name
        self.instance = instance
        self.stats = StatusStats()
        self.events = EventRecorder(
            kube,
            controller=scheduler_name,
            instance=instance,
            max_inflight=max_inflight,
            series_interval=series_interval,
            core_events=core_events,
        )
        self._inflight = asyncio.Semaphore(max(1, max_inflight))
        self._conditions: OrderedDict[str, str] = OrderedDict()
        self._statuses: OrderedDict[tuple[str, str, str], Obj] = OrderedDict()

    # -- events --------------------------------------------------------------------------

    async def pod_event(
        self, pod: Obj, *, reason: str, note: str, type: str = "Normal", action: str | None = None
    ) -> bool:
        """An event about a pod (``Scheduled``, ``FailedScheduling``...), de-duplicated."""
        return await self.events.record(
            {"kind": "Pod", "apiVersion": "v1", **pod},
            reason=reason,
            note=note,
            type=type,
            action=action,
        )

    async def object_event(
        self, obj: Obj, *, reason: str, note: str, type: str = "Warning", action: str | None = None
    ) -> bool:
        """An event about any object (a PodGroup naming an unknown queue...)."""
        return await self.events.record(obj, reason=reason, note=note, type=type, action=action)

    async def flush(self) -> None:
        """Write event repeats that are counted but not yet on the server."""
        await self.events.flush()

    # -- pod condition -------------------------------------------------------------------

    async def pod_unschedulable(self, pod: Obj, message: str) -> bool:
        """Set ``PodScheduled=False``/``Unschedulable`` with ``message`` unless already so."""
        metadata = _meta(pod)
        namespace, name, uid = metadata.get("namespace"), metadata.get("name"), metadata.get("uid")
        if not namespace or not name or (pod.get("spec") or {}).get("nodeName"):
            return False  # a bound pod is scheduled, whatever a stale decision says
        cache_key = str(uid or f"{namespace}/{name}")
        current = _condition(pod, POD_SCHEDULED)
        same = (
            current is not None
            and current.get("status") == "False"
            and current.get("reason") == UNSCHEDULABLE
            and current.get("message") == message
        )
        if same or self._conditions.get(cache_key) == message:
            self.stats.conditions_skipped += 1
            return False
        now = micro_time()[:19] + "Z"
        transition = now
        if current is not None and current.get("status") == "False":
            transition = current.get("lastTransitionTime") or now
        condition = {
            "type": POD_SCHEDULED,
            "status": "False",
            "reason": UNSCHEDULABLE,
            "message": message,
            "lastProbeTime": None,
            "lastTransitionTime": transition,
        }
        patch = {"status": {"conditions": [condition]}}
        try:
            async with self._inflight:
                await self.kube.request(
                    "PATCH",
                    PODS.path(namespace, name, "status"),
                    body=patch,
                    content_type=STRATEGIC_MERGE_PATCH,
                )
        except NotFound:
            self._conditions.pop(cache_key, None)
            return False
        except KubeError as exc:
            self.stats.failed += 1
            log.info("condition of pod %s/%s not written: %s", namespace, name, exc)
            return False
        self._conditions[cache_key] = message
        self._conditions.move_to_end(cache_key)
        while len(self._conditions) > CACHE_SIZE:
            self._conditions.popitem(last=False)
        self.stats.conditions_written += 1
        return True

    def forget_pod(self, uid: str) -> None:
        """Drop what we remember about a pod (it was bound or deleted)."""
        self._conditions.pop(uid, None)

    # -- PodGroup and Queue status -------------------------------------------------------

    async def podgroup_status(self, namespace: str, name: str, status: Obj) -> bool:
        """Merge-patch a PodGroup's status subresource to ``status``, unless unchanged."""
        return await self._status(PODGROUPS, namespace, name, status)

    async def queue_status(self, name: str, status: Obj) -> bool:
        """Merge-patch a Queue's status subresource to ``status``, unless unchanged."""
        return await self._status(QUEUES, "", name, status)

    async def _status(self, kind: Kind, namespace: str, name: str, status: Obj) -> bool:
        key = (kind.plural, namespace, name)
        previous = self._statuses.get(key)
        if previous == status:
            self.stats.statuses_skipped += 1
            return False
        path = kind.path(namespace or None, name, "status")
        try:
            async with self._inflight:
                await self.kube.request(
                    "PATCH",
                    path,
                    body={"status": _merge_patch(previous, status)},
                    content_type=MERGE_PATCH,
                )
        except NotFound:
            self._statuses.pop(key, None)
            return False
        except KubeError as exc:
            self.stats.failed += 1
            log.info("status of %s %s not written: %s", kind.kind, path, exc)
            return False
        self._statuses[key] = copy.deepcopy(status)
        self._statuses.move_to_end(key)
        while len(self._statuses) > CACHE_SIZE:
            self._statuses.popitem(last=False)
        self.stats.statuses_written += 1
        return True


nomination_log = logging.getLogger("pumice.kube.nomination")


async def nominate(kube: Kube, pod: Obj, node: str) -> bool:
    """Set the pod's ``status.nominatedNodeName`` to ``node``; True when written."""
    meta = pod.get("metadata") or {}
    namespace, name = meta.get("namespace"), meta.get("name")
    if not namespace or not name or (pod.get("status") or {}).get("nominatedNodeName") == node:
        return False
    try:
        await kube.request(
            "PATCH",
            PODS.path(str(namespace), str(name), "status"),
            body={"status": {"nominatedNodeName": node}},
            content_type=MERGE_PATCH,
        )
    except NotFound:
        return False
    except KubeError as exc:
        nomination_log.info("nominated node of pod %s/%s not written: %s", namespace, name, exc)
        return False
    return True
