"""``pumice run --sim``: the simulated cluster that the command starts in its own process.

The simulated API server is seeded from cluster files (default: the bundled
``conf/examples/cluster.yaml``) and served on loopback; the daemon then schedules it through
the same client code path as a real cluster. Objects of a kind the sim does not serve are
skipped with the note ``pumice simulate`` prints; a file that cannot be read, or an object the
sim refuses, is a ``ManifestError`` (``pumice run`` exits 2 with one line).

Only ``pumice run --sim`` imports this module, and with it ``pumice.sim``: the daemon run
against a real cluster never loads the simulated API server.
"""

from __future__ import annotations

import logging
import sys
from importlib import resources
from pathlib import Path

from pumice.commands.cluster_input import read_cluster
from pumice.manifests import ManifestError
from pumice.plain import Obj
from pumice.sim import SimConfig, SimServer
from pumice.sim.errors import ApiError
from pumice.sim.resources import for_object

log = logging.getLogger("pumice.run")


def example_cluster() -> Path:
    return Path(str(resources.files("pumice.conf") / "examples" / "cluster.yaml"))


def _served(obj: Obj) -> bool:
    """Does the simulated API server serve this object's kind?"""
    return for_object(str(obj.get("apiVersion", "")), str(obj.get("kind", ""))) is not None


class SimulatedCluster:
    """The simulated cluster of one ``pumice run --sim``: read, started, summarised, stopped."""

    def __init__(self, files: list[Path], seeds: list[Obj]) -> None:
        self.files = files
        self.seeds = seeds
        self.server: SimServer | None = None

    @classmethod
    def read(cls, paths: list[str]) -> SimulatedCluster:
        """The cluster in ``paths`` (none: the bundled example); the notes about the kinds the
        sim does not serve go to stderr. Raises ``ManifestError``."""
        files = [Path(p) for p in paths] or [example_cluster()]
        given = read_cluster([str(f) for f in files], _served)
        for note in given.notes:  # the kinds the sim does not serve, as simulate says it
            print(note, file=sys.stderr)
        return cls(files, given.objects)

    async def start(self, workdir: Path) -> str:
        """Seed and start the server; the path of a kubeconfig for it, written in ``workdir``.
        Raises ``ManifestError`` for an object the server refuses."""
        # the simulated server's access log would drown the decisions
        logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
        server = SimServer(SimConfig())
        try:
            server.seed(self.seeds)
        except ApiError as exc:
            raise ManifestError(", ".join(map(str, self.files)), str(exc)) from None
        await server.start()
        self.server = server
        log.info("simulated cluster at %s (%s)", server.url, ", ".join(map(str, self.files)))
        return str(server.write_kubeconfig(workdir / "kubeconfig"))

    async def stop(self) -> None:
        if self.server is not None:
            await self.server.stop()
            self.server = None

    def summary(self, scheduler_name: str) -> str:
        """What the simulated cluster holds now: where each of our pods runs (pods being
        deleted, and finished ones, left out) and every PodGroup's phase, as ``kubectl get``
        would show them."""
        assert self.server is not None, "the simulated cluster is not running"
        store = self.server.store
        lines = ["simulated cluster at the end:"]
        for (namespace, name), pod in sorted(store.table(_table("v1", "Pod")).items()):
            spec = pod.get("spec") or {}
            if spec.get("schedulerName") != scheduler_name or not spec.get("nodeName"):
                continue
            if (pod.get("metadata") or {}).get("deletionTimestamp"):
                continue
            if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue
            lines.append(f"  pod {namespace}/{name} on {spec['nodeName']}")
        groups = store.table(_table("scheduling.volcano.sh/v1beta1", "PodGroup"))
        for (namespace, name), group in sorted(groups.items()):
            phase = (group.get("status") or {}).get("phase") or "Pending"
            lines.append(f"  podgroup {namespace}/{name} {phase}")
        return "\n".join(lines)


def _table(api_version: str, kind: str) -> str:
    rtype = for_object(api_version, kind)
    assert rtype is not None
    return rtype.table
