"""Namespaces as the cache keeps them: name -> labels, for ``namespaceSelector``.

Pod affinity terms may select the namespaces they count pods in by label; the cache therefore
keeps every Namespace's labels in the snapshot it owns (``ClusterSnapshot.namespaces``), from
the daemon's Namespace informer (list and watch only) or, in ``pumice simulate``, from the
Namespace manifests. The API server sets ``kubernetes.io/metadata.name`` to the name on every
Namespace; it is set here as well, so a namespace read from a file without it matches the same
selectors as one read from a cluster. A namespace that pods name but that is not known is taken
to exist with only that label (``pumice.model.snapshot.namespace_labels``).
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any

from pumice.model.snapshot import NAMESPACE_NAME_LABEL
from pumice.plain import Obj, ObjectError


def namespace_entry(namespace: Mapping[str, Any]) -> tuple[str, dict[str, str]]:
    """A Namespace object's name and labels, the name label included."""
    meta = namespace.get("metadata") or {}
    name = str(meta.get("name") or "")
    if not name:
        raise ObjectError("a Namespace without metadata.name")
    labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
    labels[NAMESPACE_NAME_LABEL] = name
    return name, labels


class NamespaceStore:
    """Keeps ``into`` (a snapshot's ``namespaces``) equal to the Namespaces seen."""

    def __init__(self, into: MutableMapping[str, Mapping[str, str]]) -> None:
        self._into = into

    def upsert(self, namespace: Obj) -> None:
        name, labels = namespace_entry(namespace)
        self._into[name] = labels  # a new mapping: clones holding the old one keep it

    def delete(self, namespace: Obj) -> None:
        name = str((namespace.get("metadata") or {}).get("name") or "")
        self._into.pop(name, None)
