"""The Resource vector: construction, arithmetic, and the comparison family."""

from __future__ import annotations

import copy
import math
import pickle
from collections.abc import Callable

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from pumice.model.quantity import QuantityError
from pumice.model.resource import (
    ABSOLUTE_TOLERANCE,
    RELATIVE_TOLERANCE,
    Default,
    Resource,
    ResourceError,
    ResourceUnderflow,
)

CORE = 1000.0  # millicores
G = 1e9  # bytes, "mem 1G" in the issue's table
GIB = float(2**30)
DEFAULTS: tuple[Default, ...] = ("zero", "infinity")


def res(**values: float) -> Resource:
    """Shorthand: res(cpu=1000, gpu=2); "gpu" is spelled as the real extended resource."""
    return Resource({("nvidia.com/gpu" if k == "gpu" else k): v for k, v in values.items()})


# -- the issue's table ------------------------------------------------------------------------

TABLE = [
    # L, R, default, less, less_equal, less_partly, less_equal_partly
    (res(cpu=1 * CORE, memory=1 * G), res(cpu=2 * CORE, memory=2 * G, gpu=2), "zero",
     True, True, True, True),
    (res(cpu=1 * CORE, memory=1 * G), res(cpu=2 * CORE, memory=2 * G, gpu=2), "infinity",
     False, False, True, True),
    (res(cpu=1 * CORE, memory=1 * G, gpu=1), res(cpu=2 * CORE, memory=2 * G), "zero",
     False, False, True, True),
    (res(cpu=1 * CORE, memory=1 * G, gpu=1), res(cpu=2 * CORE, memory=2 * G), "infinity",
     True, True, True, True),
    (res(cpu=1 * CORE, memory=1 * G), res(gpu=2), "zero",
     False, False, True, True),
    (res(cpu=1 * CORE, memory=1 * G), res(gpu=2), "infinity",
     False, False, True, True),
]  # fmt: skip


@pytest.mark.parametrize(
    ("left", "right", "default", "less", "less_equal", "less_partly", "less_equal_partly"),
    TABLE,
    ids=[f"row{i + 1}-{row[2]}" for i, row in enumerate(TABLE)],
)
def test_issue_table(
    left: Resource,
    right: Resource,
    default: Default,
    less: bool,
    less_equal: bool,
    less_partly: bool,
    less_equal_partly: bool,
) -> None:
    assert left.less(right, default) is less
    assert left.less_equal(right, default) is less_equal
    assert left.less_partly(right, default) is less_partly
    assert left.less_equal_partly(right, default) is less_equal_partly
    # and the greater family is the stated negation, row by row
    assert left.greater(right, default) is not less_equal_partly
    assert left.greater_equal(right, default) is not less_partly
    assert left.greater_partly(right, default) is not less_equal
    assert left.greater_equal_partly(right, default) is not less


def test_table_also_holds_when_built_from_kubernetes_quantities() -> None:
    left = Resource.from_k8s({"cpu": "1", "memory": "1G"})
    right = Resource.from_k8s({"cpu": "2", "memory": "2G", "nvidia.com/gpu": 2})
    assert left.less(right)
    assert not left.less(right, "infinity")
    assert left.less_partly(right, "infinity")


# -- construction and reading -----------------------------------------------------------------


def test_from_k8s_uses_canonical_units() -> None:
    r = Resource.from_k8s({"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": 2, "pods": "110"})
    assert r.to_dict() == {"cpu": 500.0, "memory": GIB, "nvidia.com/gpu": 2.0, "pods": 110.0}
    assert r["cpu"] == 500.0
    assert r["ephemeral-storage"] == 0.0
    assert r.get("ephemeral-storage") == 0.0
    assert r.get("ephemeral-storage", -1.0) == -1.0
    assert r.get("cpu", -1.0) == 500.0


def test_from_k8s_bad_quantity_names_resource_and_string() -> None:
    with pytest.raises(QuantityError, match=r"'memory'.*'1Gb'"):
        Resource.from_k8s({"cpu": "1", "memory": "1Gb"})


def test_from_k8s_negative_is_a_resource_error() -> None:
    with pytest.raises(ResourceError, match="cpu"):
        Resource.from_k8s({"cpu": "-1"})


@pytest.mark.parametrize("bad", [-1.0, -0.001, math.nan, math.inf, -math.inf])
def test_negative_or_non_finite_amounts_are_rejected(bad: float) -> None:
    with pytest.raises(ResourceError, match="cpu"):
        Resource({"cpu": bad})


def test_bad_names_are_rejected() -> None:
    with pytest.raises(ResourceError):
        Resource({"": 1.0})


def test_float_noise_below_zero_is_clamped() -> None:
    r = Resource({"cpu": -1e-9})
    assert r["cpu"] == 0.0
    assert r.is_empty()


def test_zero_and_empty() -> None:
    assert Resource.zero().is_empty()
    assert Resource().is_empty()
    assert Resource(None).is_empty()
    assert Resource({"cpu": 0.0, "memory": 0.0}).is_empty()
    assert Resource({"cpu": 1e-9}).is_empty()  # below any Kubernetes step
    assert not Resource({"nvidia.com/gpu": 0.001}).is_empty()
    assert not Resource.zero()
    assert Resource({"cpu": 1.0})


def test_names_contains_and_dimensions() -> None:
    r = Resource({"cpu": 100.0, "memory": 0.0, "nvidia.com/gpu": 1.0, "x": 1e-9})
    assert r.names() == frozenset({"cpu", "nvidia.com/gpu"})
    assert "cpu" in r
    assert "memory" not in r  # explicit zero: nothing to offer or ask
    assert "pods" not in r
    assert r.dimensions() == frozenset({"cpu", "memory", "nvidia.com/gpu", "x"})
    assert dict(r.items()) == {"cpu": 100.0, "memory": 0.0, "nvidia.com/gpu": 1.0, "x": 1e-9}


def test_to_dict_is_a_copy() -> None:
    r = Resource({"cpu": 1.0})
    d = r.to_dict()
    d["cpu"] = 5.0
    assert r["cpu"] == 1.0


def test_not_iterable_by_index() -> None:
    with pytest.raises(TypeError):
        iter(Resource({"cpu": 1.0}))  # type: ignore[misc]


def test_to_k8s() -> None:
    r = Resource(
        {"cpu": 1500.0, "memory": GIB, "nvidia.com/gpu": 2.0, "example.com/half": 0.5, "pods": 0.0}
    )
    assert r.to_k8s() == {
        "cpu": "1500m",
        "memory": "1073741824",
        "nvidia.com/gpu": "2",
        "example.com/half": "500m",
        "pods": "0",
    }
    assert Resource({"example.com/x": 0.7}).to_k8s() == {"example.com/x": "700m"}
    assert Resource({"example.com/x": 0.0005}).to_k8s() == {"example.com/x": "0.5m"}


@given(
    cpu=st.integers(0, 10**8),
    memory=st.integers(0, 2**50),
    milli=st.integers(0, 10**9),
)
def test_to_k8s_round_trips_through_from_k8s(cpu: int, memory: int, milli: int) -> None:
    r = Resource({"cpu": float(cpu), "memory": float(memory), "nvidia.com/gpu": milli / 1000})
    assert Resource.from_k8s(r.to_k8s()) == r


def test_repr() -> None:
    r = Resource.from_k8s({"nvidia.com/gpu": 2, "memory": "1Gi", "cpu": "500m"})
    assert repr(r) == "Resource(cpu=500m, memory=1Gi, nvidia.com/gpu=2)"
    assert repr(Resource()) == "Resource()"
    assert repr(Resource({"cpu": 2000.0, "memory": 1e9})) == "Resource(cpu=2, memory=1G)"
    assert repr(Resource({"memory": 1000.0, "x": 0.25})) == "Resource(memory=1000, x=250m)"


# -- identity: equality, hashing, immutability -------------------------------------------------


def test_eq_treats_absent_as_zero_and_hash_agrees() -> None:
    a = Resource({"cpu": 1.0})
    b = Resource({"cpu": 1.0, "memory": 0.0})
    assert a == b
    assert hash(a) == hash(b)
    assert len({a, b}) == 1
    assert a != Resource({"cpu": 2.0})
    assert a != Resource({"cpu": 1.0, "memory": 1.0})
    assert Resource({"cpu": 1.0, "memory": 1.0}) != a
    assert a != {"cpu": 1.0}


def test_eq_is_exact_and_equal_is_tolerant() -> None:
    a = Resource({"x": 0.1}) + Resource({"x": 0.2})
    b = Resource({"x": 0.3})
    assert a != b  # 0.30000000000000004
    assert a.equal(b)


def test_immutable() -> None:
    r = Resource({"cpu": 1.0})
    with pytest.raises(AttributeError):
        r._values = {}  # type: ignore[misc]
    with pytest.raises(AttributeError):
        r.extra = 1  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        del r._values
    assert not hasattr(r, "__dict__")
    assert not hasattr(r, "__setitem__")
    assert r["cpu"] == 1.0


def test_constructor_copies_its_input() -> None:
    values = {"cpu": 1.0}
    r = Resource(values)
    values["cpu"] = 99.0
    assert r["cpu"] == 1.0


def test_pickle_and_copy() -> None:
    r = Resource({"cpu": 1.0, "memory": 0.0})
    back = pickle.loads(pickle.dumps(r))
    assert back == r
    assert back.dimensions() == r.dimensions()
    assert copy.copy(r) is r
    assert copy.deepcopy(r) is r
    err = pickle.loads(pickle.dumps(ResourceUnderflow({"cpu": 5.0})))
    assert err.deficits == {"cpu": 5.0}


# -- arithmetic ---------------------------------------------------------------------------------


def test_add() -> None:
    a = res(cpu=500, memory=GIB)
    b = res(cpu=250, gpu=1)
    assert a + b == res(cpu=750, memory=GIB, gpu=1)
    assert a + Resource() == a
    assert a + b == b + a


def test_sub() -> None:
    a = res(cpu=500, memory=GIB, gpu=1)
    assert a - res(cpu=200) == res(cpu=300, memory=GIB, gpu=1)
    assert a - a == Resource()
    assert a.sub(res(cpu=200)) == a - res(cpu=200)


def test_sub_underflow_names_every_dimension_and_amount() -> None:
    a = res(cpu=500, memory=GIB)
    with pytest.raises(ResourceUnderflow) as info:
        _ = a - res(cpu=700, memory=GIB, gpu=2)
    assert info.value.deficits == {"cpu": 200.0, "nvidia.com/gpu": 2.0}
    message = str(info.value)
    assert "cpu by 200m" in message
    assert "nvidia.com/gpu by 2" in message
    assert "memory" not in message
    assert isinstance(info.value, ResourceError)
    assert isinstance(info.value, ValueError)


def test_sub_within_tolerance_is_zero_not_underflow() -> None:
    a = Resource({"x": 0.1}) + Resource({"x": 0.2})  # 0.30000000000000004
    b = Resource({"x": 0.3})
    assert (b - a)["x"] == 0.0
    assert (a - b)["x"] < 1e-15
    with pytest.raises(ResourceUnderflow):
        _ = Resource({"cpu": 999.0}) - Resource({"cpu": 1000.0})  # one millicore short


def test_sub_clip() -> None:
    a = res(cpu=500, memory=GIB)
    assert a.sub(res(cpu=700, gpu=2), clip=True) == res(memory=GIB)


def test_scale() -> None:
    a = res(cpu=500, memory=GIB)
    assert a * 2 == res(cpu=1000, memory=2 * GIB)
    assert 2 * a == a * 2
    assert a.scale(0.5) == res(cpu=250, memory=GIB / 2)
    assert a * 0 == Resource()
    for bad in (-1.0, math.nan, math.inf):
        with pytest.raises(ResourceError):
            a.scale(bad)


def test_min_max() -> None:
    a = res(cpu=500, memory=GIB)
    b = res(cpu=700, gpu=2)
    assert a.min(b) == res(cpu=500)
    assert a.max(b) == res(cpu=700, memory=GIB, gpu=2)
    assert a.min(b).dimensions() == {"cpu", "memory", "nvidia.com/gpu"}


def test_insufficient() -> None:
    need = res(cpu=500, memory=GIB, gpu=1, pods=1)
    available = res(cpu=400, memory=2 * GIB, pods=10)
    assert need.insufficient(available) == ["cpu", "nvidia.com/gpu"]
    assert need.insufficient(need) == []
    assert Resource({"cpu": 0.0}).insufficient(Resource()) == []
    assert res(gpu=1, cpu=1).insufficient(Resource()) == ["cpu", "nvidia.com/gpu"]


# -- comparisons: edge cases --------------------------------------------------------------------


@pytest.mark.parametrize("default", DEFAULTS)
def test_empty_union(default: Default) -> None:
    e = Resource()
    assert e.less(e, default)
    assert e.less_equal(e, default)
    assert e.equal(e, default)
    assert not e.less_partly(e, default)
    assert not e.less_equal_partly(e, default)
    assert e.greater(e, default)
    assert e.greater_equal(e, default)
    assert not e.greater_partly(e, default)
    assert not e.greater_equal_partly(e, default)


def test_explicit_zero_matters_only_under_infinity() -> None:
    capability = res(cpu=4 * CORE, gpu=0)  # a queue that allows no GPU at all
    task = res(cpu=CORE, gpu=1)
    assert not task.less_equal(capability, "infinity")
    assert not task.less_equal(capability, "zero")
    unlimited = res(cpu=4 * CORE)
    assert task.less_equal(unlimited, "infinity")
    assert not task.less_equal(unlimited, "zero")
    assert res(cpu=1).equal(res(cpu=1, gpu=0), "zero")
    assert not res(cpu=1).equal(res(cpu=1, gpu=0), "infinity")
    assert res(cpu=1, gpu=0).equal(res(cpu=1, gpu=0), "infinity")


def test_less_is_strict_and_less_equal_accepts_equality() -> None:
    a = res(cpu=CORE, memory=GIB)
    assert a.less_equal(a)
    assert not a.less(a)
    assert a.less_equal_partly(a)
    assert not a.less_partly(a)
    assert a.equal(a)
    assert a.greater_equal(a)
    assert not a.greater(a)


def test_one_step_is_never_within_tolerance() -> None:
    # one millicore, one byte of a TiB node, one thousandth of a device
    for name, value, step in [("cpu", 64 * CORE, 1.0), ("memory", 2.0**40, 1.0), ("x", 8.0, 1e-3)]:
        big, small = Resource({name: value + step}), Resource({name: value})
        assert small.less(big)
        assert not big.less_equal(small)
        assert not big.equal(small)
        assert big.insufficient(small) == [name]


def test_float_rounding_never_flips_a_comparison() -> None:
    total = Resource()
    for _ in range(10):
        total = total + Resource({"x": 0.1, "cpu": 0.1})
    one = Resource({"x": 1.0, "cpu": 1.0})
    assert total != one  # the floats differ ...
    assert total.less_equal(one)  # ... but not as resources
    assert one.less_equal(total)
    assert total.equal(one)
    assert not total.less(one)
    assert not total.greater(one)
    assert total.insufficient(one) == []
    third = Resource({"memory": 3 * 2.0**40}).scale(1 / 3)
    assert third.equal(Resource({"memory": 2.0**40}))


def test_bad_default_is_an_error() -> None:
    with pytest.raises(ResourceError, match="default"):
        res(cpu=1).less(res(cpu=2), "one")  # type: ignore[arg-type]


def test_documented_tolerance() -> None:
    assert ABSOLUTE_TOLERANCE == 1e-6
    assert RELATIVE_TOLERANCE * 2.0**46 < 1.0  # under one byte below 64 TiB


# -- property-based tests of the algebra ---------------------------------------------------------

NAMES = ["cpu", "memory", "nvidia.com/gpu", "pods", "ephemeral-storage"]

# Amounts on the grain of their unit (whole millicores and bytes, thousandths of a count), as
# Kubernetes quantities produce them, sometimes shared between both sides so that ties happen.
GRID = {
    "cpu": st.integers(0, 10**7).map(float),
    "memory": st.integers(0, 2**50).map(float),
    "ephemeral-storage": st.integers(0, 2**50).map(float),
    "nvidia.com/gpu": st.integers(0, 10**6).map(lambda k: k / 1000),
    "pods": st.integers(0, 10**6).map(lambda k: k / 1000),
}
TIES = st.sampled_from([0.0, 1.0, 500.0, 1000.0])


@st.composite
def grid_resources(draw: st.DrawFn) -> Resource:
    names = draw(st.lists(st.sampled_from(NAMES), unique=True, max_size=len(NAMES)))
    return Resource({n: draw(st.one_of(TIES, GRID[n])) for n in names})


# Any non-negative floats, for properties that must hold whatever the rounding.
any_resources = st.dictionaries(
    st.sampled_from(NAMES),
    st.one_of(TIES, st.floats(0, 1e15, allow_nan=False, allow_infinity=False)),
    max_size=len(NAMES),
).map(Resource)

defaults = st.sampled_from(DEFAULTS)


def _dimension_lt(left: float, right: float) -> bool:
    if math.isinf(left):
        return False
    if math.isinf(right):
        return True
    return right - left > ABSOLUTE_TOLERANCE + RELATIVE_TOLERANCE * max(left, right)


def _dimension_le(left: float, right: float) -> bool:
    if math.isinf(right):
        return True
    if math.isinf(left):
        return False
    return left - right <= ABSOLUTE_TOLERANCE + RELATIVE_TOLERANCE * max(left, right)


def _pairs(a: Resource, b: Resource, default: Default) -> list[tuple[float, float]]:
    missing = 0.0 if default == "zero" else math.inf
    union = a.dimensions() | b.dimensions()
    return [(a.get(n, missing), b.get(n, missing)) for n in sorted(union)]


ORACLE: dict[str, Callable[[list[tuple[float, float]]], bool]] = {
    "less": lambda ps: all(_dimension_lt(x, y) for x, y in ps),
    "less_equal": lambda ps: all(_dimension_le(x, y) for x, y in ps),
    "less_partly": lambda ps: any(_dimension_lt(x, y) for x, y in ps),
    "less_equal_partly": lambda ps: any(_dimension_le(x, y) for x, y in ps),
    "equal": lambda ps: all(_dimension_le(x, y) and _dimension_le(y, x) for x, y in ps),
}


@given(a=any_resources, b=any_resources, default=defaults)
def test_comparisons_match_a_direct_reading_of_their_definition(
    a: Resource, b: Resource, default: Default
) -> None:
    pairs = _pairs(a, b, default)
    for method, oracle in ORACLE.items():
        assert getattr(a, method)(b, default) is oracle(pairs), method


@given(a=any_resources, b=any_resources, default=defaults)
def test_less_implies_less_equal(a: Resource, b: Resource, default: Default) -> None:
    if a.less(b, default):
        assert a.less_equal(b, default)
    if a.less_partly(b, default):
        assert a.less_equal_partly(b, default)


@given(a=any_resources, b=any_resources, default=defaults)
def test_less_implies_less_partly_when_there_is_a_dimension(
    a: Resource, b: Resource, default: Default
) -> None:
    assume(a.dimensions() | b.dimensions())  # with none, "every" holds and "some" does not
    if a.less(b, default):
        assert a.less_partly(b, default)
    if a.less_equal(b, default):
        assert a.less_equal_partly(b, default)


@given(a=any_resources, b=any_resources, default=defaults)
def test_greater_family_is_the_stated_negation(a: Resource, b: Resource, default: Default) -> None:
    assert a.greater(b, default) is not a.less_equal_partly(b, default)
    assert a.greater_equal(b, default) is not a.less_partly(b, default)
    assert a.greater_partly(b, default) is not a.less_equal(b, default)
    assert a.greater_equal_partly(b, default) is not a.less(b, default)


@given(a=any_resources, b=any_resources, default=defaults)
def test_equal_is_less_equal_both_ways(a: Resource, b: Resource, default: Default) -> None:
    assert a.equal(b, default) is (a.less_equal(b, default) and b.less_equal(a, default))
    assert a.equal(b, default) is b.equal(a, default)


@given(a=any_resources, b=any_resources, default=defaults)
def test_less_mirrors_greater(a: Resource, b: Resource, default: Default) -> None:
    # Per dimension, l < r is defined as "not r <= l" (same tolerance both ways, and a
    # finite amount against the ∞ default is < ∞ and never >= it), so each "less" reading of
    # (a, b) is the matching "greater" reading of (b, a): checked against the oracle first.
    pairs = _pairs(a, b, default)
    assert all(_dimension_lt(x, y) is not _dimension_le(y, x) for x, y in pairs)
    assert a.less(b, default) is b.greater(a, default)
    assert a.less_equal(b, default) is b.greater_equal(a, default)
    assert a.less_partly(b, default) is b.greater_partly(a, default)
    assert a.less_equal_partly(b, default) is b.greater_equal_partly(a, default)


@given(a=any_resources)
def test_equal_to_itself(a: Resource) -> None:
    for default in DEFAULTS:
        assert a.equal(a, default)
        assert a.less_equal(a, default)
        assert not a.less_partly(a, default)


@given(a=any_resources, b=any_resources)
def test_a_is_at_most_a_plus_b(a: Resource, b: Resource) -> None:
    assert a.less_equal(a + b)
    assert b.less_equal(a + b)
    assert (a + b).greater_equal(a)


@given(a=grid_resources(), b=grid_resources())
def test_add_then_sub_gives_back(a: Resource, b: Resource) -> None:
    back = (a + b) - b
    assert back.equal(a)
    assert back.equal(a, "infinity") is (a.dimensions() | b.dimensions() == a.dimensions())


@given(a=grid_resources(), b=grid_resources())
def test_integer_amounts_add_and_sub_exactly(a: Resource, b: Resource) -> None:
    whole = {"cpu", "memory", "ephemeral-storage"}
    a = Resource({k: v for k, v in a.items() if k in whole})
    b = Resource({k: v for k, v in b.items() if k in whole})
    assert (a + b) - b == a
    assert a + b == b + a


@given(a=any_resources, b=any_resources)
def test_underflow_exactly_when_b_does_not_fit_in_a(a: Resource, b: Resource) -> None:
    if b.less_equal(a):
        diff = a - b
        assert all(v >= 0.0 for _, v in diff.items())
        assert b.insufficient(a) == []
    else:
        with pytest.raises(ResourceUnderflow) as info:
            _ = a - b
        assert sorted(info.value.deficits) == b.insufficient(a)
        assert info.value.deficits


@given(a=any_resources, b=any_resources)
def test_clipped_sub_is_never_negative(a: Resource, b: Resource) -> None:
    diff = a.sub(b, clip=True)
    for name, value in diff.items():
        assert value >= 0.0
        assert value == max(a[name] - b[name], 0.0)
    assert diff.less_equal(a)


@given(a=any_resources, b=any_resources)
def test_min_max_bounds(a: Resource, b: Resource) -> None:
    low, high = a.min(b), a.max(b)
    for x in (a, b):
        assert low.less_equal(x)
        assert x.less_equal(high)
    assert low.less_equal(high)
    assert (low + high).equal(a + b)
    assert a.min(b) == b.min(a)
    assert a.max(b) == b.max(a)
    assert a.min(a) == a
    assert a.max(a) == a


@given(a=any_resources, k=st.floats(0, 1e3))
def test_scale_is_per_dimension_and_monotonic(a: Resource, k: float) -> None:
    scaled = a * k
    for name, value in a.items():
        assert scaled[name] == value * k
    if k >= 1:
        assert a.less_equal(scaled)
    else:
        assert scaled.less_equal(a)


@given(a=grid_resources())
def test_double_is_twice(a: Resource) -> None:
    assert (a * 2).equal(a + a)
    assert a * 2 == a + a


@given(a=any_resources, b=any_resources)
def test_eq_implies_same_hash(a: Resource, b: Resource) -> None:
    trimmed = Resource({k: v for k, v in a.items() if v != 0.0})
    assert trimmed == a
    assert hash(trimmed) == hash(a)
    if a == b:
        assert hash(a) == hash(b)


@given(a=any_resources)
def test_emptiness_agrees_everywhere(a: Resource) -> None:
    assert a.is_empty() is (not a.names())
    assert a.is_empty() is a.equal(Resource())
    assert a.is_empty() is (not bool(a))
    assert a.is_empty() is (a.insufficient(Resource()) == [])


@given(a=any_resources, b=any_resources)
def test_insufficient_lists_the_dimensions_that_do_not_fit(a: Resource, b: Resource) -> None:
    short = a.insufficient(b)
    assert short == sorted(short)
    assert (short == []) is a.less_equal(b)
    for name in short:
        assert a[name] > b[name]
        assert name in a


@given(grid_resources(), grid_resources(), grid_resources())
def test_sum_within_is_the_sum_restricted_to_the_added_dimensions_less_equal(
    held: Resource, add: Resource, limit: Resource
) -> None:
    restricted = Resource({name: (held + add)[name] for name in add.names()})
    assert held.sum_within(add, limit) == restricted.less_equal(limit, "zero")


def test_sum_within_ignores_dimensions_the_addition_does_not_ask_for() -> None:
    held = Resource({"cpu": 3000.0, "memory": 9.0})
    limit = Resource({"cpu": 4000.0, "memory": 1.0})
    assert held.sum_within(Resource({"cpu": 1000.0}), limit)
    assert not held.sum_within(Resource({"cpu": 1001.0}), limit)
    assert not held.sum_within(Resource({"nvidia.com/gpu": 1.0}), limit)  # limit lacks it: 0
    assert held.sum_within(Resource({"cpu": 0.0, "memory": 0.0}), limit)  # asks for nothing
