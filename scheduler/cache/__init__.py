"""The scheduler's cache: Kubernetes objects (plain dicts) as long-lived model objects.

No I/O: the daemon feeds it informer events and its own decisions; sessions get clones.
"""

from pumice.cache.cache import NO_QUEUE, ClusterCache
from pumice.cache.handlers import Handler
from pumice.cache.pods import PodEntry, PodState
from pumice.cache.slim import PodSlimmer, slim_pod
from pumice.cache.storage import StorageCache

__all__ = [
    "NO_QUEUE",
    "ClusterCache",
    "Handler",
    "PodEntry",
    "PodSlimmer",
    "PodState",
    "StorageCache",
    "slim_pod",
]
