"""KWOK-like pod lifecycle: the simulated kubelets of the fake nodes.

There are no kubelets, so this controller plays their part, driven by store changes:

* a pod bound to an existing node (or created with ``spec.nodeName``) turns Running after
  ``start_delay`` seconds: podIP/hostIP, startTime, Ready conditions, running container
  statuses;
* a running pod annotated ``pumice.sim/complete-after: <duration>`` ("30s", "1m30s", "2"; see
  ``pumice.model.quantity``) turns
  Succeeded after that long, or Failed when ``pumice.sim/exit-code`` is non-zero; its
  containers terminate with that exit code;
* a pod being deleted gracefully disappears after ``min(grace period, termination_delay)``
  seconds (if it still has finalizers it is only marked with a zero grace period);
* nodes are registered Ready by admission and stay Ready (nothing here turns them NotReady).
"""

from __future__ import annotations

import asyncio
import itertools
import time
from dataclasses import dataclass
from typing import Any

from pumice.model.quantity import parse_duration
from pumice.sim.objects import (
    Key,
    Obj,
    get_path,
    meta,
    now_rfc3339,
    parse_time,
    set_condition,
    with_meta,
)
from pumice.sim.resources import NODES, PODS
from pumice.sim.store import DELETED, Change, Store

COMPLETE_AFTER = "pumice.sim/complete-after"
EXIT_CODE = "pumice.sim/exit-code"


@dataclass(frozen=True)
class LifecycleConfig:
    start_delay: float = 0.2
    termination_delay: float = 0.5


class Lifecycle:
    def __init__(self, store: Store, config: LifecycleConfig) -> None:
        self.store = store
        self.config = config
        self._timers: dict[tuple[Key, str], asyncio.TimerHandle] = {}
        self._ips = itertools.count(1)
        self._running = False

    # -- wiring --------------------------------------------------------------------------

    def start(self) -> None:
        """Begin reacting to changes and take over the pods already stored."""
        if self._running:
            return
        self._running = True
        self.store.subscribe(self._on_change)
        for pod in list(self.store.table(PODS.table).values()):
            self._consider(pod)

    def stop(self) -> None:
        self._running = False
        self.store.unsubscribe(self._on_change)
        for handle in self._timers.values():
            handle.cancel()
        self._timers.clear()

    def _on_change(self, change: Change) -> None:
        if change.table == NODES.table and change.type != DELETED:
            # a node that (re)appears may let pods bound to it start
            name = change.key[1]
            for pod in list(self.store.table(PODS.table).values()):
                if get_path(pod, "spec", "nodeName") == name:
                    self._consider(pod)
            return
        if change.table != PODS.table:
            return
        if change.type == DELETED:
            for what in ("start", "complete", "remove"):
                handle = self._timers.pop((change.key, what), None)
                if handle is not None:
                    handle.cancel()
            return
        self._consider(change.obj)

    def _schedule(self, key: Key, what: str, uid: str, delay: float) -> None:
        if (key, what) in self._timers:
            return
        loop = asyncio.get_running_loop()
        self._timers[(key, what)] = loop.call_later(max(delay, 0.0), self._fire, key, what, uid)

    def _consider(self, pod: Obj) -> None:
        m = meta(pod)
        key = (str(m.get("namespace") or ""), str(m.get("name")))
        uid = str(m.get("uid"))
        phase = get_path(pod, "status", "phase")
        node = get_path(pod, "spec", "nodeName")
        if m.get("deletionTimestamp"):
            grace = float(m.get("deletionGracePeriodSeconds") or 0)
            if grace > 0:
                self._schedule(key, "remove", uid, min(grace, self.config.termination_delay))
            return
        if not node or self.store.get(NODES.table, ("", str(node))) is None:
            return
        if phase in (None, "", "Pending"):
            self._schedule(key, "start", uid, self.config.start_delay)
        elif phase == "Running":
            text = (m.get("annotations") or {}).get(COMPLETE_AFTER)
            if text is None:
                return
            try:
                duration = parse_duration(str(text))
            except ValueError:
                return
            started = get_path(pod, "status", "startTime")
            elapsed = time.time() - parse_time(started) if started else 0.0
            self._schedule(key, "complete", uid, duration - max(elapsed, 0.0))

    def _fire(self, key: Key, what: str, uid: str) -> None:
        self._timers.pop((key, what), None)
        if not self._running:
            return
        pod = self.store.get(PODS.table, key)
        if pod is None or meta(pod).get("uid") != uid:
            return
        if what == "start":
            updated = self._started(pod)
        elif what == "complete":
            updated = self._completed(pod)
        else:
            updated = self._terminated(pod)
        if updated is not pod:
            self.store.commit(PODS.table, key, updated)

    # -- transitions ---------------------------------------------------------------------

    def _started(self, pod: Obj) -> Obj | None:
        if meta(pod).get("deletionTimestamp") or get_path(pod, "status", "phase") not in (
            None,
            "",
            "Pending",
        ):
            return pod
        node = self.store.get(NODES.table, ("", str(get_path(pod, "spec", "nodeName"))))
        if node is None:
            return pod
        host_ip = next(
            (
                a.get("address")
                for a in get_path(node, "status", "addresses") or []
                if a.get("type") == "InternalIP"
            ),
            "10.0.0.1",
        )
        n = next(self._ips)
        pod_ip = f"10.244.{(n >> 8) & 255}.{n & 255}"
        now = now_rfc3339()
        status: Obj = dict(pod.get("status") or {})
        conditions = status.get("conditions")
        for cond_type in (
            "PodReadyToStartContainers",
            "Initialized",
            "Ready",
            "ContainersReady",
            "PodScheduled",
        ):
            conditions = set_condition(
                conditions, {"type": cond_type, "status": "True", "lastProbeTime": None}, now
            )
        spec = pod.get("spec") or {}
        status.update(
            phase="Running",
            hostIP=host_ip,
            hostIPs=[{"ip": host_ip}],
            podIP=pod_ip,
            podIPs=[{"ip": pod_ip}],
            startTime=now,
            conditions=conditions,
            containerStatuses=[_running(c, meta(pod), now) for c in spec.get("containers") or []],
        )
        if spec.get("initContainers"):
            status["initContainerStatuses"] = [
                _terminated(c, meta(pod), now, now, 0) for c in spec["initContainers"]
            ]
        return {**pod, "status": status}

    def _completed(self, pod: Obj) -> Obj | None:
        if get_path(pod, "status", "phase") != "Running" or meta(pod).get("deletionTimestamp"):
            return pod
        try:
            code = int((meta(pod).get("annotations") or {}).get(EXIT_CODE, 0))
        except ValueError:
            code = 1
        now = now_rfc3339()
        status: Obj = dict(pod.get("status") or {})
        started = str(status.get("startTime") or now)
        conditions = status.get("conditions")
        for cond_type in ("Ready", "ContainersReady"):
            conditions = set_condition(
                conditions,
                {
                    "type": cond_type,
                    "status": "False",
                    "reason": "PodCompleted",
                    "lastProbeTime": None,
                },
                now,
            )
        conditions = set_condition(
            conditions,
            {"type": "PodReadyToStartContainers", "status": "False", "lastProbeTime": None},
            now,
        )
        status.update(
            phase="Succeeded" if code == 0 else "Failed",
            conditions=conditions,
            containerStatuses=[
                _terminated(c, meta(pod), started, now, code)
                for c in (pod.get("spec") or {}).get("containers") or []
            ],
        )
        return {**pod, "status": status}

    def _terminated(self, pod: Obj) -> Obj | None:
        if meta(pod).get("finalizers"):
            if meta(pod).get("deletionGracePeriodSeconds") == 0:
                return pod
            return with_meta(pod, deletionGracePeriodSeconds=0)
        return None


def _container_id(pod_meta: Obj, name: Any) -> str:
    return f"sim://{pod_meta.get('uid')}/{name}"


def _running(container: Any, pod_meta: Obj, now: str) -> Obj:
    return {
        "name": container.get("name"),
        "image": container.get("image"),
        "imageID": "",
        "containerID": _container_id(pod_meta, container.get("name")),
        "ready": True,
        "started": True,
        "restartCount": 0,
        "state": {"running": {"startedAt": now}},
    }


def _terminated(container: Any, pod_meta: Obj, started: str, finished: str, code: int) -> Obj:
    return {
        "name": container.get("name"),
        "image": container.get("image"),
        "imageID": "",
        "containerID": _container_id(pod_meta, container.get("name")),
        "ready": False,
        "started": False,
        "restartCount": 0,
        "state": {
            "terminated": {
                "exitCode": code,
                "reason": "Completed" if code == 0 else "Error",
                "startedAt": started,
                "finishedAt": finished,
                "containerID": _container_id(pod_meta, container.get("name")),
            }
        },
    }
