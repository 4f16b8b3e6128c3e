"""pumice.kube: the Kubernetes API boundary, and the only importer of kubernetes_asyncio.

Objects are plain dicts parsed with orjson; failures are the typed errors of
``pumice.kube.rest``. See ``client`` (connection, QPS limit, ``served``), ``informer`` (list +
watch), ``binder`` (Binder, Evictor, volume writes), ``status`` (events, conditions,
PodGroup/Queue status), ``rest`` (the kinds and their paths, typed errors), ``lease`` (leader
election).
"""

from pumice.kube.binder import Binder, BindOutcome, BindResult, Evictor, EvictOutcome
from pumice.kube.client import Kube, KubeSettings, connect, served
from pumice.kube.events import EventRecorder
from pumice.kube.informer import Informer, InformerHandler, InformerStats
from pumice.kube.lease import LeaderElector
from pumice.kube.rest import (
    CORE_EVENTS,
    CSIDRIVERS,
    CSINODES,
    EVENTS,
    LEASES,
    NAMESPACES,
    NODES,
    PERSISTENTVOLUMECLAIMS,
    PERSISTENTVOLUMES,
    PODGROUPS,
    PODS,
    PRIORITYCLASSES,
    QUEUES,
    STORAGE_KINDS,
    STORAGECLASSES,
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    Kind,
    KubeConfigError,
    KubeError,
    NotFound,
    ServerError,
    TooManyRequests,
    Unreachable,
)
from pumice.kube.status import StatusWriter

__all__ = [
    "CORE_EVENTS",
    "CSIDRIVERS",
    "CSINODES",
    "EVENTS",
    "LEASES",
    "NAMESPACES",
    "NODES",
    "PERSISTENTVOLUMECLAIMS",
    "PERSISTENTVOLUMES",
    "PODGROUPS",
    "PODS",
    "PRIORITYCLASSES",
    "QUEUES",
    "STORAGECLASSES",
    "STORAGE_KINDS",
    "BindOutcome",
    "BindResult",
    "Binder",
    "Conflict",
    "EventRecorder",
    "EvictOutcome",
    "Evictor",
    "Forbidden",
    "Gone",
    "Informer",
    "InformerHandler",
    "InformerStats",
    "Invalid",
    "Kind",
    "Kube",
    "KubeConfigError",
    "KubeError",
    "KubeSettings",
    "LeaderElector",
    "NotFound",
    "ServerError",
    "StatusWriter",
    "TooManyRequests",
    "Unreachable",
    "connect",
    "served",
]
