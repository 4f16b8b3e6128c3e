"""The ephemeral-volume controller, played by the sim as the other volume controllers are.

For a pod (not being deleted) with a generic ephemeral volume, the claim ``<pod>-<volume>``
is created in the pod's namespace from the volume's ``volumeClaimTemplate`` (its labels,
annotations and spec), owned by the pod (``controller: true``, ``blockOwnerDeletion: true``),
through the API's create path, so admission gives it its default class and the pvc-protection
finalizer as it gives any claim. A claim of that name that the pod does not own is left alone
and the pod gets a ``Warning FailedBinding`` event, ``ephemeral volume VOL: PVC NS/NAME was
not created for pod NS/POD (pod is not owner)``. When the pod goes, the garbage collector's
part: the claims it owns are deleted (pvc-protection lets them go once no pod uses them).
"""

from __future__ import annotations

from pumice.model.volumes import not_owner_message, owned_by
from pumice.sim.errors import ApiError
from pumice.sim.objects import Obj, get_path, meta, new_uid, now_rfc3339
from pumice.sim.registry import Registry
from pumice.sim.resources import PERSISTENT_VOLUME_CLAIMS

CLAIMS = PERSISTENT_VOLUME_CLAIMS.table
SOURCE = "ephemeral_volume"


class EphemeralVolumes:
    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self.store = registry.store
        self._told: set[tuple[str, str]] = set()
        """(pod uid, claim) already told the claim is not the pod's."""

    def sync(self, pod: Obj) -> None:
        """Make the claims of the pod's ephemeral volumes that do not exist yet."""
        m = meta(pod)
        if m.get("deletionTimestamp"):
            return
        namespace = str(m.get("namespace") or "default")
        for volume in get_path(pod, "spec", "volumes") or []:
            if not isinstance(volume, dict):
                continue
            template = (volume.get("ephemeral") or {}).get("volumeClaimTemplate")
            if not isinstance(template, dict):
                continue
            vol_name = str(volume.get("name"))
            name = f"{m.get('name')}-{vol_name}"
            existing = self.store.get(CLAIMS, (namespace, name))
            if existing is not None:
                if not owned_by(existing, pod):
                    self._not_owner(pod, vol_name, name)
                continue
            self._create(pod, namespace, name, vol_name, template)

    def _create(self, pod: Obj, namespace: str, name: str, volume: str, template: Obj) -> None:
        m = meta(pod)
        claim_meta: Obj = {
            "name": name,
            "namespace": namespace,
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": m.get("name"),
                    "uid": m.get("uid"),
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        }
        template_meta = template.get("metadata") or {}
        for key in ("labels", "annotations"):
            if template_meta.get(key):
                claim_meta[key] = dict(template_meta[key])
        body = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": claim_meta,
            "spec": dict(template.get("spec") or {}),
        }
        try:
            self.registry.create(PERSISTENT_VOLUME_CLAIMS, namespace, body)
        except ApiError as exc:
            self._event(pod, f"ephemeral volume {volume}: create PVC {name}: {exc}")

    def _not_owner(self, pod: Obj, volume: str, claim: str) -> None:
        mark = (str(meta(pod).get("uid")), claim)
        if mark not in self._told:
            self._told.add(mark)
            self._event(pod, f"ephemeral volume {volume}: {not_owner_message(claim, pod)}")

    def _event(self, pod: Obj, message: str) -> None:
        m = meta(pod)
        now = now_rfc3339()
        self.registry.create_object(
            {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {
                    "name": f"{m['name']}.{new_uid().replace('-', '')[:16]}",
                    "namespace": m.get("namespace"),
                },
                "involvedObject": {
                    "kind": "Pod",
                    "namespace": m.get("namespace"),
                    "name": m["name"],
                    "uid": m.get("uid"),
                    "apiVersion": "v1",
                },
                "reason": "FailedBinding",
                "message": message,
                "type": "Warning",
                "source": {"component": SOURCE},
                "firstTimestamp": now,
                "lastTimestamp": now,
                "count": 1,
            }
        )

    def gone(self, pod: Obj) -> None:
        """The pod was deleted: its claims go too (the garbage collector's part)."""
        namespace = str(meta(pod).get("namespace") or "default")
        for volume in get_path(pod, "spec", "volumes") or []:
            if not isinstance(volume, dict) or volume.get("ephemeral") is None:
                continue
            name = f"{meta(pod).get('name')}-{volume.get('name')}"
            claim = self.store.get(CLAIMS, (namespace, name))
            if claim is not None and owned_by(claim, pod):
                self.registry.remove_or_finalize(PERSISTENT_VOLUME_CLAIMS, claim, 0)
