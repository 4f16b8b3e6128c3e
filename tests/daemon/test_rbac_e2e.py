"""Least privilege, proven through the daemon: a whole scheduling story runs as pumice's
ServiceAccount against a sim that enforces conf/deploy's RBAC — never refused anything and
using every grant — and, for each (group, resource, verb) granted, the same story with only
that grant removed is refused exactly that request somewhere along the way.

The story, two daemons one after the other (each a real ``Daemon``, in this process, against
an in-process sim, with short periods and a short Lease):

* replica A takes the Lease (create, renew), binds four low-priority pods (Scheduled events
  through ``events.k8s.io``), leaves a 64-cpu gang pending (its pod's condition, a
  FailedScheduling event, PodGroup and Queue status), evicts two pods for an urgent one and
  nominates it (on the way, a claim the sim binds shows up bound in the cache through the
  storage informers); a node comes and goes, so the pending pod's message changes and comes back:
  a repeat of its first event, whose series count A writes (patch) as it stops and hands the
  Lease back;
* the cluster stops serving ``events.k8s.io`` (fault injection: discovery and the first event
  create answer 404), replica B takes the released Lease (get, update), falls back to core
  events, resolves a bind answered 409 by reading the pod (get), binds the volumes of two pods
  before binding them (a claim's selected node for one to provision, a local volume's claimRef
  for the other: patch), and, after the same node churn, patches a core event's count as it
  stops.

A removed grant usually stops the story at its first use (the daemon cannot list, watch,
write...). The story gives up at the first refusal rather than waiting for what can no longer
happen, which keeps the whole matrix to a few seconds per grant.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import sys
import traceback
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client as k8s_client
from sim.volumekit import claim, storage_class, volume

from daemon.test_leader_e2e import holder, lease
from daemon.test_preemption_e2e import ACTIONS, prioritised, priority_class, running
from daemon.workload import condition, events_about, gang, node, pod, seed
from pumice.commands.config_commands import load_checked
from pumice.daemon import Daemon, DaemonOptions
from pumice.kube import KubeSettings
from support.daemonrun import Ledger, wait_for, write_config
from support.deploy_rbac import (
    PUMICE_ACCOUNT,
    Grant,
    accesses_of,
    grants,
    rbac_objects,
    run_as_pumice,
    without_grant,
)

pytestmark = pytest.mark.slow

ELECTION = "{enabled: true, leaseDuration: 3s, renewDeadline: 2s, retryPeriod: 100ms}"
STEP_TIMEOUT = 60.0
"""Generous: a step normally takes well under a second; only a broken daemon waits this long."""


class Refused(Exception):
    """The ServiceAccount was refused a request: the story cannot go on as told."""


@dataclass
class Story:
    steps: list[str] = field(default_factory=list)
    """The steps completed, in order."""
    exit_codes: list[int] = field(default_factory=list)
    """Each daemon's exit status; -1: it did not end within STEP_TIMEOUT of being told to."""
    stuck: str = ""
    """Where a daemon that did not end was waiting (every task's and thread's stack)."""


class Teller:
    """Runs the story's steps against one sim, giving up at the first refusal."""

    def __init__(self, sim: Any, config: Path) -> None:
        self.sim = sim
        self.config = config
        self.story = Story()

    def refused(self) -> bool:
        return bool(accesses_of(self.sim)[0])

    async def until(self, step: str, done: Callable[[], Any]) -> None:
        try:
            await wait_for(lambda: self.refused() or done(), timeout=STEP_TIMEOUT)
        except AssertionError as exc:
            raise AssertionError(f"step {step!r} not done; done: {self.story.steps}") from exc
        if self.refused():
            raise Refused(step)
        self.story.steps.append(step)

    @contextlib.asynccontextmanager
    async def replica(self, identity: str) -> AsyncIterator[Daemon]:
        cfg, host = load_checked(str(self.config))
        stop = asyncio.Event()
        daemon = Daemon(
            DaemonOptions(
                config=cfg,
                host=host,
                kube=KubeSettings(kubeconfig=str(self.sim.kubeconfig_for(PUMICE_ACCOUNT))),
                stop=stop,
                identity=identity,
            )
        )
        task = asyncio.get_running_loop().create_task(daemon.run())
        try:
            await self.until(f"{identity} leads", lambda: daemon.leading and daemon.cycles)
            yield daemon
        finally:
            stop.set()
            try:
                code = await asyncio.wait_for(asyncio.shield(task), STEP_TIMEOUT)
            except TimeoutError:
                self.story.stuck = where_stuck()
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
                code = -1
            self.story.exit_codes.append(code)

    async def node_churn(self, name: str, pending: str) -> None:
        """A node joins and leaves: ``pending``'s message changes, then is what it was, so
        its event repeats (counted; written when the daemon stops)."""
        first = message(self.sim, pending)
        seed(self.sim, [node(name, cpu="1")])
        await self.until(f"{pending} sees {name}", lambda: message(self.sim, pending) != first)
        async with await self.sim.client() as admin:
            await k8s_client.CoreV1Api(admin).delete_node(name)
        await self.until(f"{pending} without {name}", lambda: message(self.sim, pending) == first)


def where_stuck() -> str:
    out = io.StringIO()
    for task in asyncio.all_tasks():
        if not task.done():
            task.print_stack(limit=6, file=out)
    for frame in sys._current_frames().values():
        traceback.print_stack(frame, limit=8, file=out)
    return out.getvalue()


def message(sim: Any, name: str) -> str:
    found = condition(sim, name)
    return str((found or {}).get("message") or "")


def claim_cached(daemon: Daemon) -> bool:
    """The claim, bound by the sim's volume controllers, as the storage informers show it."""
    cache = daemon.cache
    found = cache.storage.claims.get("batch/data") if cache is not None else None
    return bool(found) and (found or {}).get("spec", {}).get("volumeName") == "pv-data"


def picky() -> dict[str, Any]:
    """A small pod no node will ever take (its message counts the nodes that refuse it)."""
    p = pod("picky", cpu="100m")
    p["spec"]["nodeSelector"] = {"disk": "ssd"}
    return p


async def tell(sim: Any, config: Path) -> Story:
    teller = Teller(sim, config)
    # (the sim serves the "default" Queue already, as Volcano's controller creates it)
    seed(sim, [priority_class("low", 10), priority_class("high", 1000), node("n1", cpu="4")])
    try:
        async with teller.replica("replica-a") as daemon:
            seed(sim, [picky()])
            await teller.until("unschedulable", lambda: message(sim, "picky"))
            await teller.until("event", lambda: events_about(sim, "picky"))
            await teller.node_churn("n2", "picky")
            seed(sim, [prioritised(f"low-{i}", "low", "1") for i in range(4)])
            await teller.until("bound", lambda: all(running(sim, f"low-{i}") for i in range(4)))
            seed(sim, [volume("pv-data", "5Gi"), claim("data", namespace="batch")])
            await teller.until("claim bound, in the cache", lambda: claim_cached(daemon))
            seed(sim, gang("huge", 1, cpu="64"))  # more than the queue's share: gang status
            await teller.until("gang refused", lambda: message(sim, "huge-0"))
            seed(sim, [prioritised("urgent", "high", "2")])  # evicts two of the low ones
            await teller.until("preempted", lambda: running(sim, "urgent"))
        await teller.until("lease released", lambda: lease(sim) and holder(sim) == "")
        # Room in the queue's share for what follows, and picky the only pod waiting: the
        # cluster no longer serves events.k8s.io, and B's first event (about picky) finds out.
        async with await sim.client() as admin:
            core = k8s_client.CoreV1Api(admin)
            for name in [f"low-{i}" for i in range(4) if running(sim, f"low-{i}")]:
                await core.delete_namespaced_pod(name, "batch")
            await core.delete_namespaced_pod("huge-0", "batch")
            await k8s_client.CustomObjectsApi(admin).delete_namespaced_custom_object(
                "scheduling.volcano.sh", "v1beta1", "batch", "podgroups", "huge"
            )
        sim.faults.fail(404, verb="get", resource="/apis/events.k8s.io/v1")
        sim.faults.fail(404, verb="create", resource="events", count=1)
        async with teller.replica("replica-b"):
            sim.faults.fail(409, verb="create", resource="pods/binding", count=1)
            seed(sim, [pod("late", cpu="100m")])
            await teller.until("bound after a conflict", lambda: running(sim, "late"))
            seed(sim, volume_pods())
            await teller.until(
                "volumes bound, then their pods",
                lambda: running(sim, "writer") and running(sim, "reader"),
            )
            await teller.node_churn("n3", "picky")
    except Refused:
        pass
    return teller.story


def volume_pods() -> list[dict[str, Any]]:
    """A pod whose claim is provisioned once pumice selects its node, and one whose claim
    pumice binds to a local volume on n1."""
    local = volume("pv-local", "1Gi", "local")
    local["spec"]["nodeAffinity"] = {
        "required": {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": [
                        {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1"]}
                    ]
                }
            ]
        }
    }
    pods = []
    for name, claimed in (("writer", "scratch"), ("reader", "local-data")):
        p = pod(name, cpu="100m")
        p["spec"]["volumes"] = [{"name": "v", "persistentVolumeClaim": {"claimName": claimed}}]
        pods.append(p)
    return [
        storage_class("fast", mode="WaitForFirstConsumer"),
        storage_class("local", "kubernetes.io/no-provisioner", "WaitForFirstConsumer"),
        local,
        claim("scratch", "1Gi", "fast", namespace="batch"),
        claim("local-data", "1Gi", "local", namespace="batch"),
        *pods,
    ]


FULL_STORY = [
    "replica-a leads",
    "unschedulable",
    "event",
    "picky sees n2",
    "picky without n2",
    "bound",
    "claim bound, in the cache",
    "gang refused",
    "preempted",
    "lease released",
    "replica-b leads",
    "bound after a conflict",
    "volumes bound, then their pods",
    "picky sees n3",
    "picky without n3",
]


def series_counts(sim: Any) -> dict[str, int]:
    """Event name -> its count, for events that repeated (core ``count`` or ``series``)."""
    out = {}
    for (_, name), event in sim.store.table("/events").items():
        count = (event.get("series") or {}).get("count") or event.get("count") or 1
        if count > 1:
            out[name] = count
    return out


async def test_the_daemon_needs_every_grant_of_the_deploy_rbac_and_nothing_more(
    make_sim: Any, tmp_path: Path
) -> None:
    config = write_config(tmp_path, actions=ACTIONS, leaderElection=ELECTION)
    run = await run_as_pumice(make_sim, lambda sim: tell(sim, config))
    story: Story = run.result
    assert run.refused == [], run.refused
    assert story.steps == FULL_STORY and story.exit_codes == [0, 0], story
    assert run.used == grants(rbac_objects()), grants(rbac_objects()) ^ run.used
    ledger = Ledger(run.sim)
    assert ledger.accepted_binds()[("batch", "urgent")] == 1
    ledger.close()
    # both event APIs wrote a repeat's count: events.k8s.io by A, core v1 by B
    assert len(series_counts(run.sim)) == 2


@pytest.mark.parametrize("grant", sorted(grants(rbac_objects())), ids="/".join)
async def test_without_any_one_grant_the_story_is_refused_that_request(
    make_sim: Any, tmp_path: Path, grant: Grant
) -> None:
    config = write_config(tmp_path, actions=ACTIONS, leaderElection=ELECTION)
    run = await run_as_pumice(
        make_sim, lambda sim: tell(sim, config), without_grant(rbac_objects(), grant)
    )
    # refused that request and nothing else (the other grants are all there)
    assert run.refused and set(run.refused) == {grant}, (run.refused, run.result)
    # told to stop, every daemon ended by itself, even one still waiting for a list
    assert -1 not in run.result.exit_codes, run.result
