"""The node-reservation search on its own: the score, exact search, the heuristic beyond 16."""

from __future__ import annotations

import numpy as np
import pytest

from pumice.plugins._reservation_search import (
    EXACT_LIMIT,
    Candidates,
    choose,
    covers,
    score_of,
)


def candidates(
    alloc: list[list[float]], used: list[list[float]] | None = None, names: list[str] | None = None
) -> Candidates:
    a = np.array(alloc, dtype=np.float64)
    u = np.array(used, dtype=np.float64) if used is not None else np.zeros_like(a)
    names = names or [f"n{i:04d}" for i in range(len(alloc))]
    return Candidates(names, a, u, a - u, len(alloc))


def test_the_score_is_the_normalised_formula() -> None:
    cand = candidates([[0.5], [0.25], [0.25]], used=[[0.0], [0.125], [0.0]])
    target = np.array([0.25])
    # node 1 alone: waste 0, used 0.125 / 0.25, 1 of 3 nodes, idle 0.125
    expected = 0.4 * 1 + 0.35 * 0.5 + 0.15 * (1 - 1 / 3) + 0.1 * 0.125
    assert score_of(cand, target, [1]) == pytest.approx(expected)
    choice = choose(cand, target)
    assert choice is not None
    assert choice.rows == (1,)
    assert choice.score == pytest.approx(expected)


def test_ties_go_to_the_smallest_sorted_names() -> None:
    cand = candidates([[0.25]] * 4)
    choice = choose(cand, np.array([0.5]))
    assert choice is not None and choice.rows == (0, 1)


def test_nothing_qualifies() -> None:
    cand = candidates([[0.25]] * 3)
    assert choose(cand, np.array([0.9])) is None
    assert choose(cand, np.array([0.1]), count=4) is None


def test_fixed_nodes_are_kept() -> None:
    cand = candidates([[0.25]] * 4)
    choice = choose(cand, np.array([0.5]), fixed=[3])
    assert choice is not None and choice.rows == (0, 3)


def test_a_count_request_takes_exactly_that_many() -> None:
    cand = candidates([[0.1]] * 5, used=[[0], [0], [0.05], [0], [0.05]])
    choice = choose(cand, np.array([0.2]), count=2)
    assert choice is not None and choice.rows == (2, 4)


def test_beyond_the_limit_the_heuristic_finds_a_perfect_fit() -> None:
    # 60 small nodes and one that holds the whole request exactly
    alloc = [[0.01, 0.01]] * 60 + [[0.2, 0.3]]
    cand = candidates(alloc)
    assert len(cand.names) > EXACT_LIMIT
    choice = choose(cand, np.array([0.2, 0.3]))
    assert choice is not None and choice.rows == (60,)


def test_beyond_the_limit_the_queues_usage_counts() -> None:
    alloc = [[0.02]] * 40
    used = [[0.0]] * 40
    used[17] = [0.015]
    used[33] = [0.015]
    choice = choose(candidates(alloc, used), np.array([0.04]))
    assert choice is not None and choice.rows == (17, 33)
    counted = choose(candidates(alloc, used), np.array([0.04]), count=2)
    assert counted is not None and counted.rows == (17, 33)


def test_the_heuristic_matches_the_exact_answer_on_small_random_clusters() -> None:
    rng = np.random.default_rng(7)
    agree = 0
    for _ in range(20):
        alloc = rng.choice([0.02, 0.04, 0.08], size=(EXACT_LIMIT, 2))
        used = alloc * rng.choice([0.0, 0.0, 0.5], size=(EXACT_LIMIT, 1))
        target = np.array([0.12, 0.1])
        exact = choose(candidates(alloc.tolist(), used.tolist()), target)
        # the same nodes plus 30 that are useless (tiny) make the heuristic run
        padded = np.vstack([alloc, np.full((30, 2), 1e-4)])
        padded_used = np.vstack([used, np.zeros((30, 2))])
        cand = candidates(padded.tolist(), padded_used.tolist())
        heuristic = choose(cand, target)
        assert exact is not None and heuristic is not None
        assert covers(cand, target, heuristic.rows)
        agree += heuristic.rows == exact.rows
    assert agree >= 15  # a heuristic: it may miss, but rarely on clusters this small


def test_five_thousand_nodes_give_a_cover() -> None:
    rng = np.random.default_rng(1)
    alloc = rng.choice([1 / 5000, 2 / 5000, 4 / 5000], size=(5000, 2))
    cand = candidates(alloc.tolist())
    target = np.array([0.01, 0.02])
    choice = choose(cand, target)
    assert choice is not None
    assert covers(cand, target, choice.rows)


def test_beyond_the_limit_fixed_nodes_are_kept() -> None:
    cand = candidates([[0.02]] * 40)
    choice = choose(cand, np.array([0.04]), fixed=[39])
    assert choice is not None and choice.rows == (0, 39)
    counted = choose(cand, np.array([0.06]), count=3, fixed=[39])
    assert counted is not None and counted.rows == (0, 1, 39)
