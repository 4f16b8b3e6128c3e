"""The daemon on a cluster without Volcano's CRDs (a sim started with ``volcano=False``).

Discovery says the group is not served, so the PodGroup and Queue informers are skipped with
one warning: every pod of ours is a job of its own in the implicit queue ``default`` (a group
annotation naming a PodGroup that cannot exist does not hold it back), and nothing of Volcano's
is ever requested again or written.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from daemon.workload import node, pod, seed
from support.daemonrun import Ledger, running_daemon, wait_for, write_config

pytestmark = pytest.mark.slow

VOLCANO = "/apis/scheduling.volcano.sh"
WARNING = "Volcano's PodGroup and Queue resources are not served"
STORAGE_INFORMERS = (
    "persistentvolumeclaims",
    "persistentvolumes",
    "storageclasses",
    "csinodes",
    "csidrivers",
)


def is_running(pod: dict[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running"


async def readyz(address: str) -> int:
    async with aiohttp.ClientSession() as client, client.get(f"http://{address}/readyz") as r:
        return r.status


async def test_without_volcano_every_pod_is_its_own_job_in_the_default_queue(
    make_sim: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="pumice")
    sim = await make_sim(volcano=False)
    seed(sim, [node(f"n{i}", cpu="4", memory="16Gi") for i in range(4)])
    others = [
        pod(f"other-{i}", cpu="1", scheduler="default-scheduler", node_name=f"n{i}")
        for i in range(4)
    ] + [pod("other-waiting", scheduler="default-scheduler")]
    loose = [pod(f"loose-{i}", cpu="500m") for i in range(10)]
    # "ghost" names a PodGroup, which this cluster cannot even store: ignored, not waited on
    grouped = [pod(f"ghost-{i}", cpu="500m", group="ghost") for i in range(6)]
    seed(sim, others + loose + grouped)
    ours = {(p["metadata"]["namespace"], p["metadata"]["name"]) for p in loose + grouped}
    ledger = Ledger(sim)
    async with running_daemon(sim.kubeconfig, write_config(tmp_path)) as daemon:
        await wait_for(lambda: daemon.synced, timeout=60)
        assert daemon.health is not None
        assert await readyz(daemon.health.address) == 200
        await wait_for(lambda: len(ledger.bound("pumice")) == len(ours), timeout=120)
        cache = daemon.cache
        assert cache is not None and not cache.volcano
        assert {i.name for i in daemon.informers} == {
            "nodes",
            "pending-pods",
            "assigned-pods",
            "priorityclasses",
            "namespaces",
            *STORAGE_INFORMERS,
        }
        snapshot = cache.snapshot()
        jobs = {
            (t.namespace, t.name): job
            for job in snapshot.jobs.values()
            for t in job.tasks.values()
            if (t.namespace, t.name) in ours
        }
        assert set(jobs) == ours
        assert all(len(job.tasks) == 1 and job.queue == "default" for job in jobs.values())
        assert len({id(job) for job in jobs.values()}) == len(ours)
        assert list(snapshot.queues) == ["default"]
        # the loop keeps turning a while (pods start running meanwhile): still nothing else
        turned = daemon.ticks
        await wait_for(lambda: daemon.ticks >= turned + 10)
        await wait_for(lambda: all(is_running(p) for p in ledger.pods("pumice")))
    ledger.close()

    warnings = [r for r in caplog.records if WARNING in r.getMessage()]
    assert len(warnings) == 1 and warnings[0].levelno == logging.WARNING

    # every pod of ours bound once, never moved; no node over its allocatable
    bound = {(p["metadata"]["namespace"], p["metadata"]["name"]) for p in ledger.bound()}
    assert bound == ours
    accepted = ledger.accepted_binds()
    assert set(accepted) == ours and set(accepted.values()) == {1}
    assert ledger.rebinds() == {}
    assert ledger.overcommitted() == {}

    # the other scheduler's pods: never written to, the pending one still pending
    written = {(w.namespace, w.name) for w in ledger.mutating()}
    assert not any(name.startswith("other-") for _, name in written)
    assert not sim.store.table("/pods")[("batch", "other-waiting")]["spec"].get("nodeName")

    # nothing of Volcano's after the discovery probe: only GETs of the group version
    assert sim.server.unserved, "the daemon never probed for Volcano's group"
    assert {(method, path) for method, path in sim.server.unserved} == {
        ("GET", f"{VOLCANO}/v1beta1")
    }
    assert not [w for w in sim.writes if w.path.startswith(VOLCANO)]
    assert not [w for w in sim.writes if w.resource.startswith(("podgroups", "queues"))]
