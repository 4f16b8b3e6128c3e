"""Builders shared by the PodTopologySpread tables (``tests/plugins/test_podtopologyspread_*``):
kube-scheduler's unit tables build their clusters the same few ways, so the rows here do too."""

from __future__ import annotations

from support.constraint_cases import (
    HOST,
    NO_SCHEDULE,
    FilterCase,
    ScoreCase,
    exists,
    node,
    pod,
    sel,
    spread,
)

Obj = dict[str, object]

FILTERING = "podtopologyspread/filtering_test.go"
SCORING = "podtopologyspread/scoring_test.go"
INTEGRATION = "integration/scheduler/filters/filters_test.go"

FOO = sel(exists("foo"))
BAR = sel(exists("bar"))
ZONE_1 = spread(1, "zone", FOO)
NODE_1 = spread(1, "node", FOO)
ALL4 = {"node-a", "node-b", "node-x", "node-y"}


def zn(name: str, zone: str, **extra: str) -> Obj:
    """A node with labels zone and node (= its name), as the unit tables build them."""
    return node(name, {"zone": zone, "node": name, **extra})


def four(**extra: dict[str, str]) -> list[Obj]:
    """node-a, node-b in zone1; node-x, node-y in zone2 (extra labels per node name)."""
    zones = {"node-a": "zone1", "node-b": "zone1", "node-x": "zone2", "node-y": "zone2"}
    return [zn(n, z, **extra.get(n.replace("-", "_"), {})) for n, z in zones.items()]


def foo(name: str, on: str, **labels: str) -> Obj:
    return pod(name, {"foo": "", **labels}, on=on)


def pods(spec: str, **labels: str) -> list[Obj]:
    """``"a2 b1 y3"``: two pods labelled foo on node-a, one on node-b, three on node-y."""
    out = []
    for part in spec.split():
        where, count = part[0], int(part[1:])
        out += [foo(f"p-{where}{i}", f"node-{where}", **labels) for i in range(1, count + 1)]
    return out


def p(*spreads: Obj, labels: dict[str, str] | None = None, **kwargs: object) -> Obj:
    """The incoming pod (labelled foo unless told otherwise)."""
    return pod("p", {"foo": ""} if labels is None else labels, spreads=spreads, **kwargs)  # type: ignore[arg-type]


def soft(max_skew: int, key: str, selector: Obj | None, **kwargs: object) -> Obj:
    """A ScheduleAnyway constraint."""
    return spread(max_skew, key, selector, when="ScheduleAnyway", **kwargs)  # type: ignore[arg-type]


def case(
    test: str,
    name: str,
    nodes: list[Obj],
    existing: list[Obj],
    incoming: Obj,
    feasible: set[str],
    reasons: dict[str, int] | None = None,
    *,
    source: str = FILTERING,
    note: str = "",
) -> FilterCase:
    return FilterCase(
        source=f"{source}: {test}: '{name}'",
        nodes=nodes,
        existing=existing,
        incoming=incoming,
        feasible=frozenset(feasible),
        reasons=reasons or {},
        note=note,
    )


def hosts(*names: str, unfit: tuple[str, ...] = (), **extra: dict[str, str]) -> list[Obj]:
    """Nodes labelled kubernetes.io/hostname; ``unfit`` ones are tainted (the table's failed
    nodes); ``extra`` adds labels per node (node_a=...)."""
    return [
        node(
            n,
            {HOST: n, **extra.get(n.replace("-", "_"), {})},
            taints=[NO_SCHEDULE] if n in unfit else (),
        )
        for n in names
    ]


def zoned(**unfit: bool) -> list[Obj]:
    """node-a, node-b in zone1 and node-x, node-y in zone2, with hostnames; ``unfit`` ones
    (by last letter) are tainted."""
    zones = {"node-a": "zone1", "node-b": "zone1", "node-x": "zone2", "node-y": "zone2"}
    return [
        node(n, {"zone": z, HOST: n}, taints=[NO_SCHEDULE] if unfit.get(n[-1]) else ())
        for n, z in zones.items()
    ]


def score(
    name: str,
    nodes: list[Obj],
    existing: list[Obj],
    incoming: Obj,
    scores: dict[str, int],
    *,
    config: str | None = None,
    note: str = "",
    test: str = "TestPodTopologySpreadScore",
) -> ScoreCase:
    return ScoreCase(
        source=f"{SCORING}: {test}: '{name}'",
        nodes=nodes,
        existing=existing,
        incoming=incoming,
        scores=scores,
        config=config,
        note=note,
    )
