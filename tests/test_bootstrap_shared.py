"""Comparison intervals computed together (`bootstrap_cis`, `paired_bootstrap_diffs`) are the intervals of
one bootstrap per series: the shared resample matrix of a length is the very draw each series of that length
makes alone (same seed), and its matrix product the same means as indexing the values (to floating-point
rounding, 1e-12)."""

from __future__ import annotations

import numpy as np

from core.measure.stats import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    bootstrap_ci,
    bootstrap_cis,
    paired_bootstrap_diff,
    paired_bootstrap_diffs,
)


def _indexed_interval(values: list[float]) -> tuple[float, float]:
    """The interval as the resample was written before: indices drawn and the values taken."""
    data = np.asarray(values, dtype=float)
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    idx = rng.integers(0, data.size, size=(BOOTSTRAP_RESAMPLES, data.size), dtype=np.int32)
    low, high = np.percentile(np.take(data, idx).mean(axis=1), [2.5, 97.5])
    return float(low), float(high)


def test_shared_draws_give_each_series_its_own_interval():
    rng = np.random.default_rng(7)
    metric = rng.random(300).round(3).tolist()  # a rate per task: many distinct values
    other = (rng.random(300) * 4).round(2).tolist()  # same length: shares the draw
    shorter = metric[:120] + [float("nan")] * 5  # another length, NaNs left out
    binary = (rng.random(300) > 0.4).astype(float).tolist()  # few values: the multinomial path
    tiny = [0.1, 0.5, 0.9]  # below the minimum: undefined
    series = [metric, other, shorter, binary, tiny]
    together = bootstrap_cis(series)
    alone = [bootstrap_ci(s) for s in series]
    assert together[-1] == alone[-1] == (None, None)
    assert together[3] == alone[3]  # the multinomial path is not shared
    assert np.allclose(together[:4], alone[:4], rtol=0, atol=1e-12)
    for got, values in zip(together[:3], (metric, other, shorter[:120]), strict=True):
        assert np.allclose(got, _indexed_interval(values), rtol=0, atol=1e-12)


def test_paired_differences_together_are_each_pairs_own():
    rng = np.random.default_rng(11)
    a, b = rng.random(200).tolist(), rng.random(200).tolist()
    pairs = [(a, b), (a[:50], b[:50]), ([], []), ([1.0] * 10, [0.0] * 10)]
    together = paired_bootstrap_diffs(pairs)
    alone = [paired_bootstrap_diff(x, y) for x, y in pairs]
    assert together[2] == alone[2] == (None, None, None) and together[3] == alone[3]
    assert np.allclose(together[:2], alone[:2], rtol=0, atol=1e-12)
