"""What ``bench_daemon.py`` runs its schedulers against, and the bare greedy binder.

* the cluster file a ``pumice sim-cluster`` process serves (nodes, pending pods, running pods
  of another scheduler; optionally a third of those with a claim and an anti-affinity term);
* the sim's write log, read a little at a time: pod creates and binds with the server's time;
* processes: started with their whole command line printed, their CPU time and peak RSS read
  from ``/proc``, stopped by pid; busy loops that load the machine, started and stopped by pid;
* the bare greedy binder: an informer of its pending pods binds each pod as it arrives to the
  first node that fits, through the same ``pumice.kube`` Binder as the daemon (no scheduling).
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import signal
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp

from pumice.kube import PODS, Binder, Conflict, Informer, KubeSettings, connect
from pumice.model import Resource, pod_requests

Obj = dict[str, Any]
PYTHON = (sys.executable, "-P")


def pending_pod(scheduler: str, namespace: str, i: int) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"{scheduler}-{i:05d}", "namespace": namespace},
        "spec": {
            "schedulerName": scheduler,
            "containers": [
                {
                    "name": "main",
                    "image": "busybox:1.36",
                    "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}},
                }
            ],
        },
    }


def running_pod(i: int, nodes: int, claims: bool) -> list[Obj]:
    """A pod of another scheduler running on node ``i % nodes``; with ``claims``, every third
    one mounts a claim of its own (bound to a volume) and keeps away from its app's other pods
    (required anti-affinity per hostname): the objects to create, the pod last."""
    node = f"node-{i % nodes:05d}"
    spec: Obj = {
        "schedulerName": "default-scheduler",
        "nodeName": node,
        "containers": [
            {
                "name": "main",
                "image": "busybox:1.36",
                "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
            }
        ],
    }
    meta: Obj = {"name": f"running-{i:06d}", "namespace": "running"}
    out: list[Obj] = []
    if claims and i % 3 == 0:
        app = f"app-{i % 500:03d}"
        meta["labels"] = {"app": app}
        spec["affinity"] = {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": {"app": app}},
                        "topologyKey": "kubernetes.io/hostname",
                    }
                ]
            }
        }
        claim, volume = f"data-{i:06d}", f"pv-{i:06d}"
        spec["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]
        size = {"storage": "1Gi"}
        out.append(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {"name": volume},
                "spec": {
                    "capacity": size,
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": "local",
                    "claimRef": {"namespace": "running", "name": claim},
                    "hostPath": {"path": f"/data/{volume}"},
                },
                "status": {"phase": "Bound"},
            }
        )
        out.append(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": claim, "namespace": "running"},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": size},
                    "storageClassName": "local",
                    "volumeName": volume,
                },
                "status": {"phase": "Bound", "accessModes": ["ReadWriteOnce"], "capacity": size},
            }
        )
    out.append(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": meta,
            "spec": spec,
            "status": {"phase": "Running"},
        }
    )
    return out


def write_cluster(
    path: Path,
    nodes: int,
    pending: dict[str, tuple[str, int]] | None = None,
    running: int = 0,
    claims: bool = False,
) -> None:
    """``nodes`` nodes; ``pending``: namespace -> (scheduler, count) pods waiting for a node;
    ``running`` pods of another scheduler already on the nodes (round robin)."""
    docs: list[Obj] = []
    for i in range(nodes):
        name = f"node-{i:05d}"
        capacity = {"cpu": "32", "memory": "128Gi", "pods": "110"}
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                "status": {"capacity": capacity, "allocatable": capacity},
            }
        )
    for namespace, (scheduler, count) in (pending or {}).items():
        docs.extend(pending_pod(scheduler, namespace, i) for i in range(count))
    for i in range(running):
        docs.extend(running_pod(i, nodes, claims))
    path.write_text("\n---\n".join(json.dumps(d) for d in docs))  # JSON is YAML, and fast


def command_line(argv: tuple[str, ...] | list[str]) -> str:
    """How a process was started, for the reader to run it again (paths shortened)."""
    short = [Path(a).name if a.startswith("/tmp/") else a for a in argv]
    return " ".join(shlex.quote(a) for a in short)


async def spawn(argv: list[str], **kwargs: Any) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(*argv, **kwargs)


class Sim:
    """One ``pumice sim-cluster`` process serving a cluster file (a fresh copy each time)."""

    ARGS = ("--history-size", "100000", "--pod-start-delay", "3600")

    def __init__(self, cluster: Path) -> None:
        self.cluster = cluster
        self.kubeconfig = cluster.with_suffix(".kubeconfig")
        self.proc: asyncio.subprocess.Process | None = None
        self.url = ""

    def argv(self) -> list[str]:
        return [
            *PYTHON, "-m", "pumice.cli", "sim-cluster", "--cluster", str(self.cluster),
            "--kubeconfig-out", str(self.kubeconfig), *self.ARGS,
        ]  # fmt: skip

    async def __aenter__(self) -> Sim:
        self.proc = await spawn(self.argv(), stdout=asyncio.subprocess.PIPE)
        assert self.proc.stdout is not None
        # ``async with`` calls __aexit__ only once __aenter__ has returned: a sim that fails to
        # come up (or a timeout) must be stopped here, or it outlives the bench.
        try:
            line = (await asyncio.wait_for(self.proc.stdout.readline(), 600)).decode()
            if "serving" not in line:
                raise SystemExit(f"sim-cluster did not start: {line!r}")
            self.url = line.split("serving ", 1)[1].split(" ", 1)[0]
            await self.proc.stdout.readline()
        except BaseException:
            await stop(self.proc)
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.proc is not None:
            await stop(self.proc)


class WriteLog:
    """The sim's write log, read a little at a time (``?since=``): the accepted pod creates and
    binds per namespace, with the server's timestamps (``time.time()``)."""

    def __init__(self, http: aiohttp.ClientSession, url: str) -> None:
        self.http = http
        self.url = url
        self.cursor = 0
        self.created: dict[str, list[float]] = {}
        self.bound: dict[str, list[float]] = {}
        self.other: dict[str, int] = {}
        """Other accepted writes by namespace (events, status) while pods were bound."""

    async def poll(self) -> None:
        async with self.http.get(f"{self.url}/sim/writes", params={"since": self.cursor}) as resp:
            items = (await resp.json())["items"]
        self.cursor += len(items)
        for w in items:
            if w["code"] != 201:
                continue
            if w["resource"] == "pods/binding":
                self.bound.setdefault(w["namespace"], []).append(w["time"])
            elif w["resource"] == "pods" and w["verb"] == "create":
                self.created.setdefault(w["namespace"], []).append(w["time"])
            else:
                self.other[w["namespace"]] = self.other.get(w["namespace"], 0) + 1

    def binds(self, namespace: str) -> int:
        return len(self.bound.get(namespace, ()))

    def span(self, namespace: str, since: float | None = None) -> float:
        """Seconds from ``since`` (default: the first pod created) to the last pod bound."""
        created, bound = self.created.get(namespace), self.bound.get(namespace)
        start = since if since is not None else (min(created) if created else None)
        if start is None or not bound:
            return float("nan")
        return max(bound) - start


async def create_pods(
    kubeconfig: Path, scheduler: str, namespace: str, count: int, concurrency: int
) -> float:
    """Create ``count`` pending pods naming ``scheduler``, ``concurrency`` at a time; seconds."""
    kube = await connect(KubeSettings(kubeconfig=str(kubeconfig), qps=1e9, burst=10**9))
    try:
        try:
            body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
            await kube.request("POST", "/api/v1/namespaces", body=body)
        except Conflict:
            pass
        indices = iter(range(count))
        start = time.perf_counter()

        async def creator() -> None:
            for i in indices:
                await kube.request(
                    "POST", PODS.path(namespace), body=pending_pod(scheduler, namespace, i)
                )

        await asyncio.gather(*(creator() for _ in range(concurrency)))
        return time.perf_counter() - start
    finally:
        await kube.close()


async def wait_bound(
    writes: WriteLog, namespace: str, pods: int, limit: float, proc: asyncio.subprocess.Process
) -> None:
    deadline = time.perf_counter() + limit
    while time.perf_counter() < deadline and proc.returncode is None:
        await writes.poll()
        if writes.binds(namespace) >= pods:
            return
        await asyncio.sleep(0.1)


async def stop(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), 30)
        except TimeoutError:
            proc.kill()
            await proc.wait()


def peak_rss_mib(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def cpu_seconds(pid: int) -> float:
    """User + system CPU the process used so far (the machine's other load does not count)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f}"


class BusyLoops:
    """``count`` processes spinning on a core each, to load the machine; stopped by pid."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.procs: list[asyncio.subprocess.Process] = []

    async def __aenter__(self) -> BusyLoops:
        for _ in range(self.count):
            self.procs.append(await spawn([*PYTHON, "-c", "while True: pass"]))
        if self.procs:
            pids = ", ".join(str(p.pid) for p in self.procs)
            print(f"machine loaded with {self.count} busy loop(s) (python -c 'while True: pass'),"
                  f" pids {pids}")  # fmt: skip
        return self

    async def __aexit__(self, *exc: object) -> None:
        for proc in self.procs:
            proc.kill()
            await proc.wait()


# -- the bare greedy binder ------------------------------------------------------------------


class GreedyBinder:
    """Binds each pending pod as its informer sees it to the first node that fits."""

    def __init__(self, nodes: list[Obj], binder: Binder) -> None:
        self.names = [n["metadata"]["name"] for n in nodes]
        self.free = [
            Resource.from_k8s({k: v for k, v in n["status"]["allocatable"].items() if k != "pods"})
            for n in nodes
        ]
        self.binder = binder
        self.cursor = 0
        self.tasks: set[asyncio.Task[Any]] = set()

    def on_add(self, pod: Obj) -> None:
        if pod["spec"].get("nodeName"):
            return
        need = pod_requests(pod)
        for _ in range(len(self.names)):
            if need.less_equal(self.free[self.cursor]):
                break
            self.cursor = (self.cursor + 1) % len(self.names)
        self.free[self.cursor] = self.free[self.cursor].sub(need, clip=True)
        meta = pod["metadata"]
        node = self.names[self.cursor]
        task = asyncio.get_running_loop().create_task(
            self.binder.bind(
                namespace=meta["namespace"], name=meta["name"], uid=meta["uid"], node=node
            )
        )
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def on_update(self, old: Obj, new: Obj) -> None:
        pass

    def on_delete(self, obj: Obj) -> None:
        pass


async def greedy_binder(kubeconfig: str) -> int:
    """The greedy binder process: prints ``ready`` once its informer synced, then binds until
    SIGTERM."""
    done = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, done.set)
    kube = await connect(KubeSettings(kubeconfig=kubeconfig, qps=1e9, burst=10**9))
    try:
        nodes = (await kube.request("GET", "/api/v1/nodes"))["items"]
        handler = GreedyBinder(nodes, Binder(kube, concurrency=64))
        informer = Informer(
            kube,
            PODS,
            handler,
            name="greedy",
            field_selector="spec.schedulerName=greedy,spec.nodeName=",
        )
        runner = asyncio.get_running_loop().create_task(informer.run())
        await informer.synced.wait()
        print("ready", flush=True)
        await done.wait()
        runner.cancel()
        await asyncio.gather(runner, *handler.tasks, return_exceptions=True)
    finally:
        await kube.close()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(greedy_binder(sys.argv[1])))
