"""Compare's metric intervals: the paired bootstrap of each trajectory metric Compare shows (METRIC_COLUMNS)
over 812 paired tasks,
resampled 10,000 times, one bootstrap per metric (the baseline: what Compare did) against `paired_bootstrap_diffs`, which draws the resample matrix
once per length and takes each metric's means by one matrix product. Same intervals to 1e-12 (asserted here and in
tests/test_bootstrap_shared.py); p50/p95 of 7 alternating runs each.
"""

from __future__ import annotations

import statistics
import time

from core.measure.stats import paired_bootstrap_diff, paired_bootstrap_diffs
from core.queries.compare import METRIC_COLUMNS

RUNS = 7


def _series() -> list[tuple[list[float], list[float]]]:
    """One series per metric of 812 paired tasks with many distinct values (rates to three decimals), a fixed
    draw: the cost is the resampling, whatever the values."""
    import numpy as np

    rng = np.random.default_rng(2026)
    values = [rng.random(812).round(3) for _ in METRIC_COLUMNS]
    return [(v.tolist(), np.roll(v, 1).tolist()) for v in values]


def main() -> None:
    pairs = _series()
    alone, together = [], []
    for _ in range(RUNS):
        start = time.perf_counter()
        one_by_one = [paired_bootstrap_diff(a, b) for a, b in pairs]
        alone.append(time.perf_counter() - start)
        start = time.perf_counter()
        shared = paired_bootstrap_diffs(pairs)
        together.append(time.perf_counter() - start)
        assert all(
            abs(x - y) < 1e-12
            for s, o in zip(shared, one_by_one, strict=True)
            for x, y in zip(s, o, strict=True)
        )
    for name, samples in (("one bootstrap per metric (baseline)", alone), ("shared draws (ours)", together)):
        ordered = sorted(samples)
        p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
        print(f"{name}: p50 {statistics.median(samples) * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms")
    print(f"ratio baseline/ours (p50): {statistics.median(alone) / statistics.median(together):.1f}x")


if __name__ == "__main__":
    main()
