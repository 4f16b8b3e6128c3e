"""VolumeRestrictions' Filter, and the index of pods on nodes that use claims or disks: a
private helper of ``predicates`` (kube-scheduler's ``volumerestrictions``).

``PlacedVolumes`` knows, for the pods the session has on nodes (running, bound, assumed,
placed by this session; terminating ones too, as kube-scheduler counts them), which use claims
or in-tree disks. It is built on first use and follows ``place`` / ``unplace``; every answer
reads ``node.tasks`` at the time of the question, so a node asked about as it will be once
its victims have gone (``predicate_once_gone``) is answered without them.

Two checks, both Unschedulable (evicting pods may cure them):

1. an in-tree disk the pod mounts that a pod on the node already mounts →
   ``node(s) had no available disk``: a GCE PD of the same name, an EBS volume of the same id,
   an iSCSI target of the same IQN, an RBD image of the same pool and name on an overlapping
   monitor; except for EBS, two read-only mounts do not conflict;
2. a claim with the ReadWriteOncePod access mode that a pod on any node already uses →
   ``node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode
   already in-use by another pod``, on every node (kube-scheduler 1.35's words; releases
   before 1.27 said ``node has pod using PersistentVolumeClaim with the same name and
   ReadWriteOncePod access mode``).
"""

from __future__ import annotations

from collections.abc import Iterator

from pumice import COMPLETED_STATUSES, NodeInfo, SessionView, TaskInfo
from pumice.plugins._volume_claims import PodVolumes
from pumice.volumes import ObjView

DISK_CONFLICT = "node(s) had no available disk"
RWOP_CONFLICT = (
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode "
    "already in-use by another pod"
)


class PlacedVolumes:
    """Pods on nodes that use claims or in-tree disks (see the module docstring)."""

    def __init__(self, session: SessionView) -> None:
        self.session = session
        self.by_node: dict[str, dict[str, PodVolumes]] = {}
        self.claim_users: dict[str, dict[str, str]] = {}
        """Claim key -> uid -> node of the pods using it."""
        for node in session.nodes.values():
            for task in node.tasks.values():
                self.place(task)

    def place(self, task: TaskInfo) -> None:
        node = task.node_name
        if node is None:
            return
        pv = PodVolumes.of(task)
        if pv.empty:
            return
        self.by_node.setdefault(node, {})[task.uid] = pv
        for key in pv.claim_keys(ephemeral=False):
            self.claim_users.setdefault(key, {})[task.uid] = node

    def unplace(self, task: TaskInfo) -> None:
        """The task left its node, or is being evicted (then it stays counted while it is
        still on the node: a terminating pod still holds its volumes)."""
        node = task.node_name
        info = self.session.nodes.get(node or "")
        if node is None or (info is not None and task.uid in info.tasks):
            return
        pv = self.by_node.get(node, {}).pop(task.uid, None)
        if pv is None:
            return
        for key in pv.claim_keys(ephemeral=False):
            users = self.claim_users.get(key)
            if users is not None:
                users.pop(task.uid, None)

    def on(self, node: NodeInfo, exclude: str = "") -> Iterator[tuple[str, PodVolumes]]:
        """The pods with volumes on ``node`` now (not finished)."""
        for uid, pv in self.by_node.get(node.name, {}).items():
            task = node.tasks.get(uid)
            if task is not None and uid != exclude and not task.status & COMPLETED_STATUSES:
                yield uid, pv

    def users(self, key: str, exclude: str) -> int:
        """How many pods on nodes now use the claim ``key`` (besides ``exclude``)."""
        count = 0
        for uid, node_name in self.claim_users.get(key, {}).items():
            node = self.session.nodes.get(node_name)
            task = node.tasks.get(uid) if node is not None else None
            if task is not None and uid != exclude and not task.status & COMPLETED_STATUSES:
                count += 1
        return count


def _read_only(source: ObjView) -> bool:
    return bool(source.get("readOnly"))


def disks_conflict(kind: str, mine: ObjView, theirs: ObjView) -> bool:
    """Do two mounts of in-tree disks of the same ``kind`` conflict (kube's
    ``isVolumeConflict``)?"""
    both_read_only = _read_only(mine) and _read_only(theirs)
    if kind == "gcePersistentDisk":
        return mine.get("pdName") == theirs.get("pdName") and not both_read_only
    if kind == "awsElasticBlockStore":
        return bool(mine.get("volumeID") == theirs.get("volumeID"))
    if kind == "iscsi":
        return mine.get("iqn") == theirs.get("iqn") and not both_read_only
    if kind == "rbd":
        monitors = set(mine.get("monitors") or ()) & set(theirs.get("monitors") or ())
        return (
            bool(monitors)
            and mine.get("pool") == theirs.get("pool")
            and mine.get("image") == theirs.get("image")
            and not both_read_only
        )
    return False


def disk_conflict(pv: PodVolumes, placed: PlacedVolumes, node: NodeInfo, uid: str) -> bool:
    """Does a disk of the pod conflict with one mounted by a pod on ``node``?"""
    for _, other in placed.on(node, exclude=uid):
        for kind, mine in pv.disks:
            for other_kind, theirs in other.disks:
                if kind == other_kind and disks_conflict(kind, mine, theirs):
                    return True
    return False
