"""Pod requests as Kubernetes computes them: containers, init containers, sidecars, overhead."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pumice.model.quantity import QuantityError, canonical_from_fraction, parse_quantity
from pumice.model.requests import (
    NON_ZERO_CPU_MILLI,
    NON_ZERO_DEFAULTS,
    NON_ZERO_MEMORY_BYTES,
    _pod_requests_exact,
    pod_requests,
    with_non_zero_defaults,
)
from pumice.model.resource import Resource

MI = 2**20
GI = 2**30
GPU = "nvidia.com/gpu"


def c(name: str, restart: str | None = None, **requests: Any) -> dict[str, Any]:
    """A container; keyword ``gpu`` stands for nvidia.com/gpu, ``None`` values are left out."""
    reqs = {(GPU if k == "gpu" else k): v for k, v in requests.items() if v is not None}
    container: dict[str, Any] = {"name": name, "image": "busybox"}
    if reqs:
        container["resources"] = {"requests": reqs}
    if restart:
        container["restartPolicy"] = restart
    return container


def sidecar(name: str, **requests: Any) -> dict[str, Any]:
    return c(name, "Always", **requests)


def pod(
    containers: list[dict[str, Any]],
    init: list[dict[str, Any]] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {"containers": containers, **spec}
    if init is not None:
        body["initContainers"] = init
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": body}


def r(**values: float) -> Resource:
    return Resource({(GPU if k == "gpu" else k): v for k, v in values.items()})


def test_constants() -> None:
    assert NON_ZERO_CPU_MILLI == 100.0
    assert NON_ZERO_MEMORY_BYTES == 209715200


def test_containers_are_summed() -> None:
    p = pod([c("a", cpu="500m", memory="1Gi"), c("b", cpu="250m", memory="512Mi")])
    assert pod_requests(p) == r(cpu=750, memory=GI + 512 * MI)


def test_no_requests_is_empty() -> None:
    assert pod_requests(pod([c("a")])).is_empty()
    assert pod_requests({"spec": {}}) == Resource()
    assert pod_requests({}) == Resource()
    nulls = {"spec": {"containers": [{"name": "a", "resources": None}], "initContainers": None}}
    assert pod_requests(nulls) == Resource()
    null_requests = pod([{"name": "a", "resources": {"requests": None, "limits": {"cpu": "1"}}}])
    assert pod_requests(null_requests) == Resource()


def test_init_container_bigger_than_containers_wins_per_dimension() -> None:
    p = pod(
        [c("a", cpu="500m", memory="1Gi"), c("b", cpu="500m", memory="1Gi")],
        init=[c("i1", cpu="2", memory="256Mi"), c("i2", cpu="1500m", memory="3Gi")],
    )
    # cpu: max(1000, 2000, 1500); memory: max(2Gi, 256Mi, 3Gi)
    assert pod_requests(p) == r(cpu=2000, memory=3 * GI)


def test_init_container_smaller_than_containers_changes_nothing() -> None:
    p = pod([c("a", cpu="1", memory="1Gi")], init=[c("i", cpu="100m", memory="10Mi")])
    assert pod_requests(p) == r(cpu=1000, memory=GI)


def test_sidecars_add_to_the_containers() -> None:
    p = pod([c("a", cpu="1", memory="1Gi")], init=[sidecar("log", cpu="200m", memory="64Mi")])
    assert pod_requests(p) == r(cpu=1200, memory=GI + 64 * MI)


def test_sidecar_before_an_init_container_counts_in_its_need() -> None:
    p = pod(
        [c("a", cpu="1")],
        init=[sidecar("proxy", cpu="500m"), c("migrate", cpu="1")],
    )
    # migrate runs beside proxy (1000m + 500m), as much as a and proxy running together
    assert pod_requests(p) == r(cpu=1500)
    p = pod(
        [c("a", cpu="100m")],
        init=[sidecar("proxy", cpu="500m"), c("migrate", cpu="2")],
    )
    assert pod_requests(p) == r(cpu=2500)  # 2000m + 500m beside it > 600m running


def test_sidecar_after_an_init_container_does_not_count_in_its_need() -> None:
    p = pod(
        [c("a", cpu="100m")],
        init=[c("migrate", cpu="2"), sidecar("proxy", cpu="500m")],
    )
    assert pod_requests(p) == r(cpu=2000)  # migrate alone; running is 600m


def test_only_earlier_sidecars_count_for_each_init_container() -> None:
    p = pod(
        [c("a", cpu="100m")],
        init=[
            sidecar("s1", cpu="1"),
            c("i1", cpu="1"),  # 1 + s1 = 2
            sidecar("s2", cpu="1"),
            c("i2", cpu="1500m"),  # 1.5 + s1 + s2 = 3.5
        ],
    )
    assert pod_requests(p) == r(cpu=3500)  # running: 0.1 + 1 + 1 = 2.1


def test_init_restart_policy_other_than_always_is_a_regular_init_container() -> None:
    p = pod([c("a", cpu="1")], init=[c("i", "OnFailure", cpu="500m")])
    assert pod_requests(p) == r(cpu=1000)


def test_overhead_is_added_after_the_max() -> None:
    p = pod(
        [c("a", cpu="1", memory="1Gi")],
        init=[c("i", cpu="3")],
        overhead={"cpu": "250m", "memory": "120Mi"},
    )
    assert pod_requests(p) == r(cpu=3250, memory=GI + 120 * MI)


def test_pod_level_requests_replace_cpu_memory_and_hugepages() -> None:
    p = pod(
        [c("a", cpu="1", memory="1Gi", gpu="1", **{"hugepages-2Mi": "4Mi"})],
        init=[c("i", cpu="4")],
        resources={
            "requests": {
                "cpu": "2",
                "memory": "3Gi",
                "hugepages-2Mi": "8Mi",
                GPU: "5",  # not a pod-level resource: ignored
            }
        },
        overhead={"cpu": "100m"},
    )
    assert pod_requests(p) == Resource(
        {"cpu": 2100.0, "memory": float(3 * GI), "hugepages-2Mi": float(8 * MI), GPU: 1.0}
    )


def test_pod_level_requests_replace_only_what_they_name() -> None:
    p = pod([c("a", cpu="1", memory="1Gi")], resources={"requests": {"memory": "2Gi"}})
    assert pod_requests(p) == r(cpu=1000, memory=2 * GI)
    p = pod([c("a", cpu="1")], resources={"limits": {"cpu": "2"}})
    assert pod_requests(p) == r(cpu=1000)


def test_scalar_resources_sum_and_max_like_the_others() -> None:
    p = pod(
        [c("a", gpu=1, cpu="1"), c("b", gpu="2", **{"example.com/foo": "500m"})],
        init=[c("i", gpu="4"), sidecar("s", **{"example.com/foo": "1"})],
    )
    assert pod_requests(p) == Resource({"cpu": 1000.0, GPU: 4.0, "example.com/foo": 1.5})


def test_explicit_zero_requests_leave_no_dimension() -> None:
    p = pod([c("a", cpu="0", memory="0", gpu="0")])
    result = pod_requests(p)
    assert result.dimensions() == frozenset()


def test_sums_are_exact_and_rounded_once() -> None:
    # 0.4m + 0.4m + 0.4m = 1.2m -> 2 millicores (rounding each would give 3)
    p = pod([c("a", cpu="0.4m"), c("b", cpu="0.4m"), c("c", cpu="0.4m")])
    assert pod_requests(p) == r(cpu=2)
    p = pod([c("a", cpu="0.1"), c("b", cpu="0.2")])
    assert pod_requests(p)["cpu"] == 300.0


# -- non-zero defaults (scoring only) -----------------------------------------------------------


def test_non_zero_defaults_apply_to_omitted_requests_only() -> None:
    p = pod([c("a"), c("b", cpu="0", memory="0"), c("c", cpu="1")])
    assert pod_requests(p) == r(cpu=1000)
    assert pod_requests(p, non_zero=True) == r(
        cpu=100 + 0 + 1000, memory=NON_ZERO_MEMORY_BYTES + 0 + NON_ZERO_MEMORY_BYTES
    )


def test_non_zero_is_keyword_only() -> None:
    with pytest.raises(TypeError):
        pod_requests(pod([c("a")]), True)  # type: ignore[misc]


def test_non_zero_defaults_apply_to_sidecars_and_init_containers() -> None:
    p = pod(
        [c("a", cpu="1", memory="1Gi")],
        init=[sidecar("s", cpu="200m"), c("i", memory="4Gi")],
    )
    assert pod_requests(p) == r(cpu=1200, memory=4 * GI)
    # with defaults: running = a + s = 1200m, 1Gi + 200Mi; i needs 100m + 4Gi plus s beside it,
    # 300m + 4Gi + 200Mi
    assert pod_requests(p, non_zero=True) == r(cpu=1200, memory=4 * GI + 200 * MI)


def test_non_zero_for_a_pod_without_requests() -> None:
    assert pod_requests(pod([c("a"), c("b")]), non_zero=True) == r(
        cpu=200, memory=2 * NON_ZERO_MEMORY_BYTES
    )
    assert pod_requests(pod([c("a", gpu="1")]), non_zero=True) == r(
        cpu=100, memory=NON_ZERO_MEMORY_BYTES, gpu=1
    )


def test_non_zero_does_not_touch_other_resources_or_pod_level_requests() -> None:
    p = pod([c("a")], resources={"requests": {"cpu": "2"}})
    assert pod_requests(p, non_zero=True) == r(cpu=2000, memory=NON_ZERO_MEMORY_BYTES)


# -- errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("p", "where", "resource"),
    [
        (pod([c("ok", cpu="1"), c("web", memory="1Gb")]), "container 'web'", "memory"),
        (pod([c("a")], init=[c("setup", cpu="1..5")]), "init container 'setup'", "cpu"),
        (pod([c("a")], init=[sidecar("proxy", gpu="x")]), "init container 'proxy'", GPU),
        (pod([c("a")], overhead={"cpu": "lots"}), "spec.overhead", "cpu"),
        (pod([c("a")], resources={"requests": {"memory": "1 Gi"}}), "spec.resources", "memory"),
        (pod([c("neg", cpu="-1")]), "container 'neg'", "cpu"),
    ],
)
def test_bad_quantity_names_container_and_resource(
    p: dict[str, Any], where: str, resource: str
) -> None:
    with pytest.raises(QuantityError) as info:
        pod_requests(p)
    message = str(info.value)
    assert where in message
    assert repr(resource) in message


# -- properties -------------------------------------------------------------------------------

millicores = st.integers(0, 64_000)


@given(
    app=st.lists(millicores, min_size=1, max_size=5),
    init=st.lists(st.tuples(st.booleans(), millicores), max_size=5),
    overhead=millicores,
)
def test_cpu_matches_a_step_by_step_reading_of_the_rules(
    app: list[int], init: list[tuple[bool, int]], overhead: int
) -> None:
    running = sum(app)
    sidecars = 0
    peak = 0
    for is_sidecar, m in init:
        if is_sidecar:
            sidecars += m
            running += m
        else:
            peak = max(peak, m + sidecars)
    expected = max(running, peak) + overhead
    p = pod(
        [c(f"a{i}", cpu=f"{m}m") for i, m in enumerate(app)],
        init=[
            sidecar(f"s{i}", cpu=f"{m}m") if is_sidecar else c(f"i{i}", cpu=f"{m}m")
            for i, (is_sidecar, m) in enumerate(init)
        ],
        overhead={"cpu": f"{overhead}m"},
    )
    assert pod_requests(p)["cpu"] == float(expected)
    # the requests never fall below what the app containers alone need
    assert pod_requests(p)["cpu"] >= sum(app)
    assert pod_requests(p, non_zero=True)["cpu"] == float(expected)  # nothing omitted


# -- the integer path and its caches ------------------------------------------------------------

RESOURCES = ("cpu", "memory", GPU, "hugepages-2Mi", "ephemeral-storage")
quantities = st.builds(
    lambda digits, frac, suffix: f"{digits}{frac}{suffix}",
    st.integers(0, 5000).map(str),
    st.sampled_from(["", ".5", ".25", ".001", ".3333"]),
    st.sampled_from(["", "n", "u", "m", "k", "M", "Ki", "Mi", "Gi", "e-3", "e-11", "E-13", "e2"]),
)
request_lists = st.dictionaries(st.sampled_from(RESOURCES), quantities, max_size=3)


@given(
    app=st.lists(request_lists, min_size=1, max_size=4),
    extra=st.lists(request_lists, max_size=2),
    non_zero=st.booleans(),
)
def test_integer_sums_equal_exact_sums_rounded_once(
    app: list[dict[str, str]], extra: list[dict[str, str]], non_zero: bool
) -> None:
    containers = [c(f"a{i}", **reqs) for i, reqs in enumerate(app)]
    p = pod(containers)
    exact: dict[str, Fraction] = {}
    for reqs in app:
        for name, text in reqs.items():
            exact[name] = exact.get(name, Fraction(0)) + parse_quantity(text)
        if non_zero:
            exact["cpu"] = exact.get("cpu", Fraction(0)) + (0 if "cpu" in reqs else Fraction(1, 10))
            exact["memory"] = exact.get("memory", Fraction(0)) + (
                0 if "memory" in reqs else NON_ZERO_MEMORY_BYTES
            )
    expected = Resource({n: canonical_from_fraction(n, v) for n, v in exact.items() if v})
    assert pod_requests(p, non_zero=non_zero) == expected
    assert list(pod_requests(p, non_zero=non_zero).items()) == list(
        _pod_requests_exact(p["spec"], non_zero).items()
    )
    # with init containers the pod takes the other path: the same answer, in the same order
    q = pod(containers, init=[c(f"i{i}", **reqs) for i, reqs in enumerate(extra)] or None)
    assert list(pod_requests(q, non_zero=non_zero).items()) == list(
        _pod_requests_exact(q["spec"], non_zero).items()
    )


def test_amounts_below_a_grain_are_summed_before_rounding() -> None:
    # 0.4m + 0.4m is 0.8m: one millicore, not two
    assert pod_requests(pod([c("a", cpu="0.4m"), c("b", cpu="0.4m")])) == r(cpu=1)
    # quantities finer than a nano-unit take the exact path: 3e-12 cores round up to 1m
    fine = pod([c("a", cpu="1e-12"), c("b", cpu="1e-12"), c("d", cpu="1e-12", memory="0.5")])
    assert pod_requests(fine) == r(cpu=1, memory=1)
    assert pod_requests(pod([c("a", memory="0.5"), c("b", memory="0.5")])) == r(memory=1)


def test_a_remembered_answer_is_never_given_to_a_pod_it_is_wrong_for() -> None:
    as_text = pod([c("a", cpu="1", memory="1Gi")])
    assert pod_requests(as_text) == r(cpu=1000, memory=GI)
    assert pod_requests(pod([c("a", cpu=1, memory="1Gi")])) == r(cpu=1000, memory=GI)
    assert pod_requests(pod([c("a", cpu=1.5, memory="1Gi")])) == r(cpu=1500, memory=GI)
    with pytest.raises(QuantityError, match="boolean"):
        pod_requests(pod([c("a", cpu=True, memory="1Gi")]))
    with pytest.raises(QuantityError, match="container 'b'"):
        pod_requests(pod([c("b", cpu="1", memory="1 Gi")]))
    with pytest.raises(QuantityError, match=r"container 'l'.*not list"):
        pod_requests(pod([c("l", cpu=["1"])]))
    # the same requests again give the same (shared, immutable) answer
    assert pod_requests(pod([c("z", cpu="1", memory="1Gi")])) is pod_requests(as_text)
    assert pod_requests(as_text, non_zero=True) == r(cpu=1000, memory=GI)


def test_non_zero_defaults_live_in_one_place() -> None:
    assert dict(NON_ZERO_DEFAULTS) == {"cpu": NON_ZERO_CPU_MILLI, "memory": NON_ZERO_MEMORY_BYTES}
    assert with_non_zero_defaults(r(gpu=1)) == r(
        cpu=NON_ZERO_CPU_MILLI, memory=NON_ZERO_MEMORY_BYTES, gpu=1
    )
    assert with_non_zero_defaults(r(cpu=5, memory=7)) == r(cpu=5, memory=7)
