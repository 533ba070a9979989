"""How far a judge can be trusted: its verdicts against labelled pairs (a CSV with kind, a, b, label,
optional context), as accuracy, Cohen's κ with a bootstrap CI, and the error rate of each stage."""

from __future__ import annotations

import csv
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from core.errors import InputError
from core.measure.judge import KINDS, Judge, Pair
from core.measure.stats import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, MIN_N_BOOTSTRAP

_TRUE = {"1", "true", "yes", "y", "equivalent", "same", "right", "found"}
_FALSE = {"0", "false", "no", "n", "different", "not_equivalent", "wrong", "not_found"}


@dataclass
class Agreement:
    n: int
    unresolved: int
    accuracy: float | None
    kappa: float | None
    kappa_ci: tuple[float | None, float | None]
    per_stage: dict[str, dict[str, float | int | None]] = field(default_factory=dict)
    per_kind: dict[str, dict[str, float | int | None]] = field(default_factory=dict)


def read_labels(path: Path) -> list[tuple[Pair, bool]]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise InputError(path, "no such file") from None
    except UnicodeDecodeError:
        raise InputError(path, "not UTF-8 text") from None
    reader = csv.DictReader(text.splitlines())
    columns = {c.strip().lower() for c in reader.fieldnames or []}
    if not {"kind", "a", "b", "label"} <= columns:
        raise InputError(path, f"expected columns kind,a,b,label (context optional); found {sorted(columns)}")
    labelled = []
    for line, row in enumerate(reader, start=2):
        row = {k.strip().lower(): (v or "") for k, v in row.items() if k}
        kind = row["kind"].strip()
        if kind not in KINDS:
            raise InputError(path, f"line {line}: unknown kind {kind!r}; use one of {', '.join(KINDS)}")
        label = row["label"].strip().lower()
        if label not in _TRUE | _FALSE:
            raise InputError(
                path,
                f"line {line}: label {row['label']!r} is neither true/1/equivalent nor false/0/different",
            )
        labelled.append((Pair(kind, row["a"], row["b"], row.get("context", "")), label in _TRUE))
    if not labelled:
        raise InputError(path, "no labelled pairs")
    return labelled


def cohen_kappa(truth: np.ndarray, predicted: np.ndarray) -> float | None:
    """κ for two binary raters; None when chance agreement is total (one class only)."""
    if truth.size == 0:
        return None
    observed = float(np.mean(truth == predicted))
    p_true, p_pred = float(np.mean(truth)), float(np.mean(predicted))
    expected = p_true * p_pred + (1 - p_true) * (1 - p_pred)
    if expected >= 1.0:
        return None
    return (observed - expected) / (1 - expected)


def kappa_ci(truth: np.ndarray, predicted: np.ndarray) -> tuple[float | None, float | None]:
    """Percentile bootstrap 95 % CI of κ; (None, None) below MIN_N_BOOTSTRAP pairs (too few to tell)."""
    if truth.size < MIN_N_BOOTSTRAP:
        return None, None
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    samples = []
    for idx in rng.integers(0, truth.size, size=(BOOTSTRAP_RESAMPLES // 10, truth.size)):
        k = cohen_kappa(truth[idx], predicted[idx])
        if k is not None:
            samples.append(k)
    if not samples:
        return None, None
    low, high = np.percentile(samples, [2.5, 97.5])
    return float(low), float(high)


def measure(judge: Judge, labelled: list[tuple[Pair, bool]]) -> Agreement:
    verdicts = judge.judge_many([p for p, _ in labelled])
    resolved = [
        (p, label, v) for (p, label), v in zip(labelled, verdicts, strict=True) if v.verdict is not None
    ]
    truth = np.array([label for _, label, _ in resolved], dtype=bool)
    predicted = np.array([bool(v.verdict) for _, _, v in resolved], dtype=bool)
    per_stage: dict[str, dict] = {}
    per_kind: dict[str, dict] = {}
    for group, key in ((per_stage, lambda p, v: v.source), (per_kind, lambda p, v: p.kind)):
        totals, wrong = Counter(), Counter()
        for p, label, v in resolved:
            totals[key(p, v)] += 1
            wrong[key(p, v)] += v.verdict != label
        for name in sorted(totals):
            group[name] = {
                "pairs": totals[name],
                "errors": wrong[name],
                "error_rate": wrong[name] / totals[name],
            }
    return Agreement(
        n=len(labelled),
        unresolved=len(labelled) - len(resolved),
        accuracy=float(np.mean(truth == predicted)) if resolved else None,
        kappa=cohen_kappa(truth, predicted),
        kappa_ci=kappa_ci(truth, predicted),
        per_stage=per_stage,
        per_kind=per_kind,
    )
