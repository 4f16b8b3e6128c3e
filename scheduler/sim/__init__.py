"""A simulated Kubernetes API server for tests, demos and benchmarks.

``pumice.sim`` serves the subset of the Kubernetes REST API that pumice and kubectl use (nodes,
pods with binding/status/eviction, namespaces, events in both API groups, leases,
priority classes, Volcano podgroups and queues) over HTTP on 127.0.0.1, with the real
server's semantics: one global resourceVersion, list+watch with bookmarks and 410 Gone,
selectors, optimistic concurrency, graceful deletion and Status errors. Fake nodes run pods
KWOK-style, faults can be injected at run time, and every write is logged.

Entry points: ``SimServer`` / ``SimConfig`` (in-process), ``pumice sim-cluster`` (``cli``).
"""

from pumice.sim.server import SimConfig, SimServer

__all__ = ["SimConfig", "SimServer"]
