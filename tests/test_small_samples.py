"""Small samples are not shown as certain: the minimum n of a bootstrap interval comes from its exact
coverage, below it every figure says "too few to tell (n=…)", and Wilson intervals, which keep their
coverage at small n, are given with their n from n=1 (docs/dashboard.md, "Small samples")."""

from __future__ import annotations

from math import comb

import numpy as np
import pytest

from core.measure import stats
from core.measure.judge_agreement import kappa_ci

MID_RATES = np.linspace(0.3, 0.7, 41)
ALL_RATES = np.linspace(0.05, 0.95, 91)


def _pmf(k: int, n: int, p: float) -> float:
    return comb(n, k) * p**k * (1 - p) ** (n - k)


def _ppf(q: float, n: int, p: float) -> int:
    """The smallest k with P(Binomial(n, p) <= k) >= q (a tolerance for the float sum, as scipy's)."""
    total = 0.0
    for k in range(n + 1):
        total += _pmf(k, n, p)
        if total >= q - 1e-10:
            return k
    return n


def _percentile_interval(k: int, n: int) -> tuple[float, float]:
    """The percentile bootstrap's interval of a 0/1 mean with k of n: resampled means are Binomial(n, k/n)/n."""
    return _ppf(0.025, n, k / n) / n, _ppf(0.975, n, k / n) / n


def _coverage(interval, n: int, rates) -> float:
    """Exact coverage averaged over true rates: P(interval of k of n holds p), k ~ Binomial(n, p)."""
    return float(np.mean([
        sum(_pmf(k, n, p) for k in range(n + 1) if interval(k, n)[0] <= p <= interval(k, n)[1]) for p in rates
    ]))  # fmt: skip


def test_the_minimum_n_is_where_the_bootstrap_reaches_its_coverage():
    coverage = {n: _coverage(_percentile_interval, n, MID_RATES) for n in range(2, 16)}
    assert round(coverage[2], 2) == 0.47 and round(coverage[3], 2) == 0.71 and round(coverage[5], 2) == 0.88
    assert min(n for n, c in coverage.items() if c >= 0.90) == stats.MIN_N_BOOTSTRAP == 8


def test_wilson_keeps_its_coverage_at_small_n():
    for n in (2, 3, 5):
        assert _coverage(stats.wilson_ci, n, ALL_RATES) >= 0.95  # the bootstrap's: 0.36, 0.54, 0.70
        assert _coverage(_percentile_interval, n, ALL_RATES) < 0.75


def test_below_the_minimum_no_interval_and_the_figure_says_so():
    # Two tasks that both flipped: every resample gives -100.
    assert stats.paired_bootstrap_diff([1.0, 1.0], [0.0, 0.0]) == (-1.0, None, None)
    assert stats.estimate_text(-1.0, None, None, 2, points=True) == "-100.0 pts, too few to tell (n=2)"
    few = [1.0, 0.0] * (stats.MIN_N_BOOTSTRAP // 2 - 1) + [1.0]
    assert len(few) == stats.MIN_N_BOOTSTRAP - 1 and stats.bootstrap_ci(few) == (None, None)
    enough = few + [0.0]
    low, high = stats.bootstrap_ci(enough)
    assert low < 0.5 < high
    assert (
        stats.estimate_text(0.5, low, high, len(enough)) == f"0.500 [{low:.3f}, {high:.3f}] n={len(enough)}"
    )
    # κ on two marked pairs: no interval, and it says why.
    assert kappa_ci(np.array([True, False]), np.array([True, False])) == (None, None)
    assert stats.estimate_text(0.0, None, None, 2, digits=2) == "0.00, too few to tell (n=2)"
    assert stats.estimate_text(None, None, None, 0) == "– (n=0)"


@pytest.mark.parametrize(("successes", "n"), [(1, 2), (0, 1), (5, 5)])
def test_every_rate_says_its_interval_and_n(successes, n):
    low, high = stats.wilson_ci(successes, n)
    text = stats.rate_text(successes / n, low, high, n)
    assert text == f"{successes / n * 100:.1f} % [{low * 100:.1f}–{high * 100:.1f}] of {n}"
