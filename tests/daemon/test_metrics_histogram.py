"""The per-pod histograms expose what prometheus_client's Histogram would for the same
observations (the daemon counts them itself: bench/README.md, daemon)."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Histogram, generate_latest
from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from pumice.daemon.metrics import PerPodHistogram

BUCKETS = (0.01, 0.1, 1.0, 10.0)
VALUES = [0.0, 0.01, 0.05, 0.1, 0.5, 1.0, 3.0, 10.0, 11.0, 600.0]


class Exposed(Collector):
    def __init__(self, histogram: PerPodHistogram) -> None:
        self.histogram = histogram

    def collect(self) -> Iterator[Metric]:
        yield self.histogram.family()


def lines(registry: CollectorRegistry) -> list[str]:
    text = generate_latest(registry).decode()
    return [line for line in text.splitlines() if "_created" not in line]


def test_an_unlabelled_histogram_reads_as_prometheus_clients() -> None:
    theirs, ours_registry = CollectorRegistry(), CollectorRegistry()
    reference = Histogram("t_seconds", "help", buckets=BUCKETS, registry=theirs)
    ours = PerPodHistogram("t_seconds", "help", BUCKETS)
    ours_registry.register(Exposed(ours))
    assert lines(ours_registry) == lines(theirs)  # zero buckets before any observation
    for value in VALUES:
        reference.observe(value)
        ours.observe(value)
    assert lines(ours_registry) == lines(theirs)


def test_bulk_and_labelled_observations_read_as_one_at_a_time() -> None:
    theirs, ours_registry = CollectorRegistry(), CollectorRegistry()
    reference = Histogram("a_seconds", "help", ["result"], buckets=BUCKETS, registry=theirs)
    ours = PerPodHistogram("a_seconds", "help", BUCKETS, label="result")
    ours_registry.register(Exposed(ours))
    for value, count in [(0.5, 3), (20.0, 2), (0.01, 1)]:
        for _ in range(count):
            reference.labels("scheduled").observe(value)
        ours.observe(value, count, "scheduled")
    reference.labels("unschedulable").observe(2.0)
    ours.observe(2.0, 1, "unschedulable")
    ours.observe(5.0, 0, "never")  # no observation: no series
    assert lines(ours_registry) == lines(theirs)
