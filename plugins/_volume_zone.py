"""VolumeZone's Filter: a private helper of ``predicates`` (kube-scheduler's ``volumezone``).

For every named claim that names a volume, the volume's zone and region labels
(``topology.kubernetes.io/zone`` and ``/region``, and their ``failure-domain.beta`` forms; a
value may list several, separated by ``__``) must hold on the node: the node's value for the
same key (for a beta key, the GA key's value when the node lacks the beta one) must be one of
them. A node with none of the four labels passes. Otherwise
``node(s) had no available volume zone`` (UnschedulableAndUnresolvable).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from pumice.plugins._k8s_terms import NodeTerms
from pumice.plugins._volume_claims import PodVolumes
from pumice.volumes import StorageObjects, meta, spec_of

BoolVector = npt.NDArray[np.bool_]

ZONE_CONFLICT = "node(s) had no available volume zone"

BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
TOPOLOGY_LABELS = (BETA_ZONE, BETA_REGION, ZONE, REGION)
GA_OF = {BETA_ZONE: ZONE, BETA_REGION: REGION}


def zone_constraints(pv: PodVolumes, storage: StorageObjects) -> list[tuple[str, tuple[str, ...]]]:
    """(label key, allowed values) from the zone labels of the volumes the pod's named claims
    name (claims or volumes that are missing were turned away before)."""
    out: list[tuple[str, tuple[str, ...]]] = []
    for use in pv.uses:
        if use.ephemeral:
            continue
        claim = storage.claims.get(pv.key(use))
        name = str(spec_of(claim).get("volumeName") or "") if claim is not None else ""
        volume = storage.volumes.get(name) if name else None
        if volume is None:
            continue
        labels: Mapping[str, Any] = meta(volume).get("labels") or {}
        for key in TOPOLOGY_LABELS:
            value = labels.get(key)
            if value is None:
                continue
            items = [part.strip() for part in str(value).split("__")]
            if not items or any(not item for item in items):
                continue  # an empty item: the label is not taken into account
            out.append((key, tuple(sorted(set(items)))))
    return out


def zone_mask(terms: NodeTerms, constraints: list[tuple[str, tuple[str, ...]]]) -> BoolVector:
    """Nodes that meet every constraint (or carry none of the four labels)."""
    labelled = np.zeros(terms.size, dtype=np.bool_)
    for key in TOPOLOGY_LABELS:
        labelled |= terms.requirement("label", (key, "Exists", ()))
    ok = np.ones(terms.size, dtype=np.bool_)
    for key, values in constraints:
        inside = terms.requirement("label", (key, "In", values))
        ga = GA_OF.get(key)
        if ga is not None:
            lacks = ~terms.requirement("label", (key, "Exists", ()))
            inside = inside | (lacks & terms.requirement("label", (ga, "In", values)))
        ok &= inside
    return ok | ~labelled
