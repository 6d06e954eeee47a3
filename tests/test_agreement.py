"""Agreement between two graders on known pairs: exact share, mean absolute difference, weighted kappa."""

from __future__ import annotations

import random

import pytest

from persona.report.agreement import Pair, agreement, point, weighted_kappa


def pairs(a: list[float], b: list[float]) -> list[Pair]:
    return [Pair(check_id=f"c{i}", a=x, b=y) for i, (x, y) in enumerate(zip(a, b, strict=True))]


def quadratic_kappa_by_moments(a: list[int], b: list[int]) -> float:
    """Quadratic-weighted kappa equals 2·cov / (var_a + var_b + (mean_a - mean_b)²), population moments."""
    n = len(a)
    ma, mb = sum(a) / n, sum(b) / n
    cov = sum((x - ma) * (y - mb) for x, y in zip(a, b, strict=True)) / n
    va, vb = sum((x - ma) ** 2 for x in a) / n, sum((y - mb) ** 2 for y in b) / n
    return 2 * cov / (va + vb + (ma - mb) ** 2)


def test_perfect_agreement_and_perfect_opposition():
    same = agreement(pairs([0, 10, 5, 10], [0, 10, 5, 10]))
    assert (same.exact, same.mean_abs_difference, same.kappa, same.furthest) == (1, 0, 1, [])
    assert weighted_kappa([0, 10], [10, 0]) == -1


def test_a_known_example():
    a = [10, 10, 0, 10, 5, 0, 10, 10]
    b = [10, 0, 0, 10, 10, 0, 5, 10]
    got = agreement(pairs(a, b))
    assert got.exact == 5 / 8 and got.mean_abs_difference == 20 / 8
    # by hand: squared differences of the pairs 100 + 25 + 25 = 150; over every a×b combination
    # 5·(3·100 + 25) + (4·25 + 3·25) + 2·(4·100 + 25) = 2650, by chance 2650 / 8 per 8 pairs
    assert got.kappa == pytest.approx(1 - 150 / (2650 / 8)) == pytest.approx(quadratic_kappa_by_moments(a, b))
    assert [(p.check_id, p.a, p.b) for p in got.furthest] == [("c1", 10, 0), ("c4", 5, 10), ("c6", 10, 5)]


def test_kappa_matches_the_moment_formula_on_random_scores():
    rng = random.Random(15)
    for _ in range(50):
        a = [rng.randint(0, 10) for _ in range(rng.randint(2, 30))]
        b = [min(10, max(0, x + rng.randint(-3, 3))) for x in a]
        if len(set(a)) > 1 or len(set(b)) > 1:
            assert weighted_kappa(a, b) == pytest.approx(quadratic_kappa_by_moments(a, b))


def test_fractional_scores_round_half_up_for_kappa_but_not_for_the_difference():
    assert [point(s) for s in (0, 3.35, 6.5, 6.7, 10)] == [0, 3, 7, 7, 10]
    got = agreement(pairs([6.7, 3.35], [6.7, 3.3]))
    assert got.exact == 0.5 and got.mean_abs_difference == pytest.approx(0.025)


def test_undefined_cases():
    assert agreement([]) is None
    one_score = agreement(pairs([10, 10, 10], [10, 10, 10]))
    assert one_score.kappa is None and "n/a (one score only)" in one_score.summary()
