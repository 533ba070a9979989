"""Statistics shown beside every figure: confidence intervals for rates and means, paired differences.

Pure functions over plain sequences; the read models call them. Seeds are fixed so the same data always
gives the same interval.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from core.values import is_missing

BOOTSTRAP_RESAMPLES = 10_000
BOOTSTRAP_SEED = 20260101
Z_95 = 1.959963984540054
_FEW_VALUES = 16
# The smallest n a bootstrap interval (means, paired differences, κ) is given for: the smallest n at which
# the percentile bootstrap's coverage of a 0/1 mean, averaged over true rates of 30–70 %, reaches 90 %
# (exact coverage, computed in tests/test_small_samples.py: 47 % at n=2, 71 % at n=3, 88 % at n=5, 92 %
# at n=8). Below it a figure says "too few to tell (n=…)" instead of an interval: two tasks that both
# flipped resample to the same -100 every time. Wilson intervals keep their coverage at small n (about
# 95 % averaged over true rates, from n=2) and are given from n=1 (docs/dashboard.md, "Small samples").
MIN_N_BOOTSTRAP = 8
TOO_FEW = "too few to tell"


def wilson_ci(successes: int, n: int, z: float = Z_95) -> tuple[float | None, float | None]:
    """Wilson score 95 % interval of a proportion; (None, None) when there are no trials.

    Chosen over the normal approximation because it stays inside [0, 1] and behaves at 0/n and n/n,
    which per-site buckets of a handful of tasks hit often.
    """
    if n <= 0:
        return None, None
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # At 0/n and n/n the bound is exactly 0 or 1; rounding would otherwise leave 5e-17 above the rate.
    low = 0.0 if successes <= 0 else max(0.0, centre - half)
    high = 1.0 if successes >= n else min(1.0, centre + half)
    return low, high


def _defined(values: Sequence[float]) -> np.ndarray:
    data = np.asarray([v for v in values if v is not None], dtype=float)
    return data[~np.isnan(data)]


def _resample_counts(n: int, resamples: int, seed: int) -> np.ndarray:
    """How often each of n values is drawn in each resample (resamples x n): the same draws as indexing
    `rng.integers(0, n, (resamples, n))` with the fixed seed, counted once so that every series of n values
    is resampled by one matrix product."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(resamples, n), dtype=np.int32)
    flat = idx + (np.arange(resamples, dtype=np.int64) * n)[:, None]
    return np.bincount(flat.ravel(), minlength=resamples * n).reshape(resamples, n)


def _interval(
    data: np.ndarray,
    resamples: int,
    seed: int,
    counts: np.ndarray | None = None,
    distinct: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[float, float]:
    """`distinct`: `np.unique(data, return_counts=True)`, when the caller has it already."""
    values, value_counts = distinct if distinct is not None else np.unique(data, return_counts=True)
    if values.size <= _FEW_VALUES:
        # Few distinct values (success 0/1, paired differences -1/0/1): resampling n values with
        # replacement is drawing their counts from a multinomial, which costs resamples x k, not
        # resamples x n (a 10,000 x 812 resample took 200 ms; a comparison page needs dozens).
        rng = np.random.default_rng(seed)
        draws = rng.multinomial(data.size, value_counts / data.size, size=resamples)
        means = draws @ values / data.size
    elif counts is None:
        # One series alone: int32 indices and np.take (half the time of int64 fancy indexing on 10,000 x 812).
        idx = np.random.default_rng(seed).integers(0, data.size, size=(resamples, data.size), dtype=np.int32)
        means = np.take(data, idx).mean(axis=1)
    else:
        means = counts @ data / data.size  # the same draws, counted once for every series of this length
    low, high = np.percentile(means, [2.5, 97.5])
    return float(low), float(high)


def bootstrap_ci(
    values: Sequence[float], *, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED
) -> tuple[float | None, float | None]:
    """Percentile 95 % CI of the mean (fixed seed: the same data always gives the same interval).

    Undefined (None, None) below MIN_N_BOOTSTRAP values: with so few the resampled means take a handful of
    values and the interval would claim a certainty the data cannot give.
    """
    data = _defined(values)
    if data.size < MIN_N_BOOTSTRAP:
        return None, None
    return _interval(data, resamples, seed)


def bootstrap_cis(
    series: Sequence[Sequence[float]], *, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED
) -> list[tuple[float | None, float | None]]:
    """`bootstrap_ci` of each series, the same intervals (to floating-point rounding), with one resample
    matrix per series length: the series of one length with many distinct values (a comparison's metrics)
    cost one draw and one matrix product together, their percentiles one call."""
    defined = [_defined(values) for values in series]
    out: list[tuple[float | None, float | None]] = [(None, None)] * len(defined)
    by_length: dict[int, list[int]] = {}
    for i, data in enumerate(defined):
        if data.size < MIN_N_BOOTSTRAP:
            continue
        values, value_counts = np.unique(data, return_counts=True)
        if values.size <= _FEW_VALUES:
            out[i] = _interval(data, resamples, seed, distinct=(values, value_counts))
        else:
            by_length.setdefault(data.size, []).append(i)
    for n, members in by_length.items():
        if len(members) == 1:
            out[members[0]] = _interval(defined[members[0]], resamples, seed)
            continue
        # resamples x n counts times n x k values: every member's resample means at once.
        means = _resample_counts(n, resamples, seed) @ np.column_stack([defined[i] for i in members]) / n
        lows, highs = np.percentile(means, [2.5, 97.5], axis=0)
        for j, i in enumerate(members):
            out[i] = (float(lows[j]), float(highs[j]))
    return out


def paired_bootstrap_diff(
    a: Sequence[float],
    b: Sequence[float],
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[float | None, float | None, float | None]:
    """Mean of b - a over paired tasks, with its percentile 95 % CI (tasks resampled together)."""
    diffs = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    if diffs.size == 0:
        return None, None, None
    low, high = bootstrap_ci(diffs.tolist(), resamples=resamples, seed=seed)
    return float(diffs.mean()), low, high


def paired_bootstrap_diffs(
    pairs: Sequence[tuple[Sequence[float], Sequence[float]]],
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> list[tuple[float | None, float | None, float | None]]:
    """`paired_bootstrap_diff` of each (a, b), the same figures, sharing resample draws (`bootstrap_cis`)."""
    diffs = [np.asarray(b, dtype=float) - np.asarray(a, dtype=float) for a, b in pairs]
    intervals = bootstrap_cis([d.tolist() for d in diffs], resamples=resamples, seed=seed)
    return [
        (None, None, None) if d.size == 0 else (float(d.mean()), low, high)
        for d, (low, high) in zip(diffs, intervals, strict=True)
    ]


def summarize(values: Sequence[float | None]) -> dict[str, float | int | None]:
    data = [float(v) for v in values if not is_missing(v)]
    low, high = bootstrap_ci(data)
    return {
        "n": len(data),
        "mean": float(np.mean(data)) if data else None,
        "sd": float(np.std(data, ddof=1)) if len(data) >= 2 else None,
        "ci_low": low,
        "ci_high": high,
    }


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """Two-sided exact McNemar p-value of paired binary outcomes: under H0 the discordant pairs split
    50/50, so it is the exact binomial test of `only_a` of `only_a + only_b` at p = 0.5 (twice the smaller
    tail, capped at 1), in exact integer arithmetic; 1.0 when no pair is discordant (nothing contradicts H0).
    """
    n = only_a + only_b
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(only_a, only_b) + 1))
    return min(1.0, 2 * tail / 2**n)


# -- how every figure is written (pages, the HTML report and the CLI share these) ---------------------
def percent(rate: float | None, digits: int = 1) -> str:
    """'61.8 %': the one percent format (one decimal, a space before the sign); '–' when missing."""
    return "–" if is_missing(rate) else f"{rate * 100:.{digits}f} %"


def rate_text(rate: float | None, low: float | None, high: float | None, n: int | None) -> str:
    """'67.9 % [64.7–71.1] of 812': a rate with its Wilson 95 % interval and the n it covers."""
    if is_missing(rate):
        return "– (no scored task)"
    ci = f" [{low * 100:.1f}–{high * 100:.1f}]" if not is_missing(low) and not is_missing(high) else ""
    return f"{percent(rate)}{ci}" + (f" of {int(n)}" if not is_missing(n) else "")


def estimate_text(
    value: float | None, low: float | None, high: float | None, n: int | None, *, points: bool = False,
    digits: int = 3,
) -> str:  # fmt: skip
    """A bootstrap figure with its 95 % interval and n: '0.454 [0.431, 0.478] n=649', with `points` a
    difference of rates '+12.3 pts [+4.1, +20.5] n=58'; below MIN_N_BOOTSTRAP '-100.0 pts, too few to tell
    (n=2)' instead of an interval; '– (n=0)' without a value."""
    if points:
        return difference_text(value, low, high, n, SHARE)
    n = 0 if is_missing(n) else int(n)
    if is_missing(value):
        return f"– (n={n})"

    def show(v: float) -> str:
        return f"{v:.{digits}f}"

    if is_missing(low) or is_missing(high):
        why = TOO_FEW if n < MIN_N_BOOTSTRAP else "no interval"
        return f"{show(value)}, {why} (n={n})"
    return f"{show(value)} [{show(low)}, {show(high)}] n={n}"


# The unit a figure is in (each metric's: core.queries.paper_tables.METRIC_UNITS): a share of 0–1, shown in %,
# whose differences are in percentage points; or a count of steps, shown and differenced in steps.
SHARE, STEPS = "share", "steps"
_DIFFERENCES = {SHARE: (100.0, 1, " pts"), STEPS: (1.0, 2, " steps")}  # scale, decimals, unit written


def difference_parts(
    value: float | None, low: float | None, high: float | None, n: int | None, unit: str = SHARE
) -> tuple[str, str]:
    """B − A in its own unit, and what qualifies it: ('+12.3 pts', '[+4.1, +20.5] n=58') for shares
    (percentage points), ('-2.11 steps', '[-4.25, -0.30] n=14') for counts of steps; ('-100.0 pts', 'too few
    to tell (n=2)') below MIN_N_BOOTSTRAP; ('–', '(n=0)') without a value."""
    scale, digits, written = _DIFFERENCES[unit]
    n = 0 if is_missing(n) else int(n)
    if is_missing(value):
        return "–", f"(n={n})"

    def show(v: float) -> str:
        return f"{v * scale:+.{digits}f}"

    if is_missing(low) or is_missing(high):
        return f"{show(value)}{written}", f"{TOO_FEW if n < MIN_N_BOOTSTRAP else 'no interval'} (n={n})"
    return f"{show(value)}{written}", f"[{show(low)}, {show(high)}] n={n}"


def difference_text(
    value: float | None, low: float | None, high: float | None, n: int | None, unit: str = SHARE
) -> str:
    """`difference_parts` on one line: '+12.3 pts [+4.1, +20.5] n=58', '-2.11 steps [-4.25, -0.30] n=14',
    '-100.0 pts, too few to tell (n=2)', '– (n=0)'."""
    figure, qualifier = difference_parts(value, low, high, n, unit)
    return figure + (" " if figure == "–" or qualifier.startswith("[") else ", ") + qualifier
