"""How far the suggested causes agree with reviewers: per cause precision and recall (Wilson 95 %
intervals), accuracy, and Cohen's κ over all causes (percentile bootstrap 95 % interval, none below
MIN_N_BOOTSTRAP tasks: "too few to tell").

The suggestion is a task's stored primary cause (`failure_causes`, so `trajreview diagnose` runs first).
A suggestion of `undecided` is counted apart (`n_undecided`), neither right nor wrong; so is the rule of
last resort's (`no_specific_cause`: the answer differs from the reference, no cause named), with how often
the label was `wrong_answer` there (`n_fallback`, `n_fallback_right`), and κ over every suggestion with the
fallback read as `wrong_answer` beside it (`kappa_all`). A reviewer's label
of `undecided` (the record cannot tell) stays a class of its own: a cause suggested there disagrees.

Labels come from a CSV (columns run, task_id, primary_cause, optional split; the shipped fixture
tests/fixtures/failure_labels) or from the reviewers' latest task label in `annotations`, mapped to a
cause by `cause_of_label` (labels outside the taxonomy are left out).
"""

from __future__ import annotations

import csv
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from core.diagnose.precision import RulePrecision
from core.diagnose.taxonomy import FALLBACK_RULE, NO_SPECIFIC, PRECEDENCE, UNDECIDED, cause_of_label
from core.errors import InputError, NotFound
from core.measure.stats import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, MIN_N_BOOTSTRAP, wilson_ci
from core.store import ShortLivedStore, Store

# Run names the label files use, and the name the demo (and the whole-run tests) import that run under.
LABEL_RUN_NAMES = {"opagent": "opagent", "babelcloud": "webarena-render-babelcloud"}
SPLITS = ("tune", "holdout")

Interval = tuple[float | None, float | None]


@dataclass(frozen=True)
class CauseScore:
    cause: str
    n_suggested: int  # decided suggestions of this cause among the labelled tasks
    n_labelled: int  # reviewer labels of this cause (tasks with a specific or the fallback's suggestion)
    n_agreed: int
    precision: float | None
    precision_ci: Interval
    recall: float | None
    recall_ci: Interval


@dataclass(frozen=True)
class CauseAgreement:
    n: int  # labelled tasks with a decided suggestion: what accuracy and κ are computed on
    n_undecided: int  # labelled tasks whose suggestion is undecided (counted apart)
    accuracy: float | None
    kappa: float | None
    kappa_ci: Interval
    per_cause: list[CauseScore]
    confusion: tuple[tuple[str, str, int], ...] = ()  # (label, suggestion, tasks), decided suggestions only
    n_fallback: int = 0  # labelled tasks whose suggestion is the fallback's (counted apart)
    n_fallback_right: int = 0  # of those, labelled wrong_answer
    kappa_all: float | None = None  # κ over specific and fallback suggestions, the fallback as wrong_answer
    kappa_all_ci: Interval = (None, None)
    accuracy_all: float | None = None


def cohen_kappa(truth: list[str], suggested: list[str]) -> float | None:
    """Cohen's κ over any number of classes; None without pairs or when chance agreement is total."""
    n = len(truth)
    if n == 0:
        return None
    observed = sum(t == s for t, s in zip(truth, suggested, strict=True)) / n
    a, b = Counter(truth), Counter(suggested)
    expected = sum(a[c] * b[c] for c in a) / (n * n)
    return None if expected >= 1.0 else (observed - expected) / (1 - expected)


def kappa_interval(truth: list[str], suggested: list[str]) -> Interval:
    """Percentile bootstrap 95 % interval of κ (fixed seed); (None, None) below MIN_N_BOOTSTRAP pairs."""
    if len(truth) < MIN_N_BOOTSTRAP:
        return None, None
    t, s = np.asarray(truth), np.asarray(suggested)
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    values = []
    for idx in rng.integers(0, len(truth), size=(BOOTSTRAP_RESAMPLES // 5, len(truth))):
        k = cohen_kappa(list(t[idx]), list(s[idx]))
        if k is not None:
            values.append(k)
    if not values:
        return None, None
    low, high = np.percentile(values, [2.5, 97.5])
    return float(low), float(high)


def agreement(pairs: list[tuple[str, str]]) -> CauseAgreement:
    """Agreement of (label, suggestion) pairs: pure."""
    fallback = [label for label, s in pairs if s == NO_SPECIFIC]
    every = [(label, "wrong_answer" if s == NO_SPECIFIC else s) for label, s in pairs if s != UNDECIDED]
    all_truth, all_suggested = [p[0] for p in every], [p[1] for p in every]
    decided = [(label, s) for label, s in pairs if s not in (UNDECIDED, NO_SPECIFIC)]
    truth, suggested = [p[0] for p in decided], [p[1] for p in decided]
    n = len(decided)
    agreed = Counter(label for label, s in decided if label == s)
    # Recall counts every labelled task with a suggestion, the fallback's too: a cause the rules left to the
    # fallback was missed.
    n_suggested, n_labelled = Counter(suggested), Counter(all_truth)
    per_cause = []
    for cause in PRECEDENCE:
        if not n_suggested[cause] and not n_labelled[cause]:
            continue
        k = agreed[cause]
        per_cause.append(
            CauseScore(
                cause, n_suggested[cause], n_labelled[cause], k,
                k / n_suggested[cause] if n_suggested[cause] else None, wilson_ci(k, n_suggested[cause]),
                k / n_labelled[cause] if n_labelled[cause] else None, wilson_ci(k, n_labelled[cause]),
            )
        )  # fmt: skip
    confusion = tuple(sorted((label, s, c) for (label, s), c in Counter(decided).items()))
    return CauseAgreement(
        n=n, n_undecided=len(pairs) - n - len(fallback), accuracy=sum(agreed.values()) / n if n else None,
        kappa=cohen_kappa(truth, suggested), kappa_ci=kappa_interval(truth, suggested),
        per_cause=per_cause, confusion=confusion, n_fallback=len(fallback),
        n_fallback_right=sum(label == "wrong_answer" for label in fallback),
        kappa_all=cohen_kappa(all_truth, all_suggested), kappa_all_ci=kappa_interval(all_truth, all_suggested),
        accuracy_all=sum(a == b for a, b in every) / len(every) if every else None,
    )  # fmt: skip


def _suggestions(store: Store | ShortLivedStore, runs: list[str]) -> dict[tuple[str, int], str]:
    rows = store.query(
        "SELECT run, task_id, cause, rule FROM failure_causes WHERE is_primary AND list_contains(?, run)",
        [runs],
    )
    return {
        (run, task_id): NO_SPECIFIC if rule == FALLBACK_RULE else cause for run, task_id, cause, rule in rows
    }


def read_labels(path: Path, split: str | None = None) -> list[tuple[str, int, str]]:
    """(run, task_id, primary cause) of a labels CSV, the rows of one split if given."""
    if split is not None and split not in SPLITS:
        raise InputError("--split", f"{split!r} is not one of {', '.join(SPLITS)}")
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except (FileNotFoundError, IsADirectoryError):
        raise InputError(path, "no such file") from None
    reader = csv.DictReader(text.splitlines())
    if not {"run", "task_id", "primary_cause"} <= set(reader.fieldnames or []):
        raise InputError(path, "expected columns run, task_id, primary_cause (split optional)")
    labels = []
    for line, row in enumerate(reader, start=2):
        cause = (row["primary_cause"] or "").strip()
        if cause not in (*PRECEDENCE, UNDECIDED):
            raise InputError(path, f"line {line}: {cause!r} is not a cause of the taxonomy")
        if split is not None and (row.get("split") or "").strip() != split:
            continue
        try:
            task_id = int(row["task_id"])
        except ValueError:
            raise InputError(path, f"line {line}: task_id {row['task_id']!r} is not a number") from None
        labels.append((row["run"].strip(), task_id, cause))
    return labels


def agreement_from_labels(
    store: Store | ShortLivedStore,
    labels_csv: Path | Sequence[Path],
    split: str | None = None,
    *,
    runs_only: Sequence[str] | None = None,
) -> CauseAgreement:
    """Agreement of the stored suggestions with a labels CSV, or several (one split, or all rows; the
    labels of the stored runs `runs_only` only, if given)."""
    files = [labels_csv] if isinstance(labels_csv, str | Path) else list(labels_csv)
    labels = [label for path in files for label in read_labels(Path(path), split)]
    stored = {name for (name,) in store.query("SELECT name FROM runs")}
    runs = {r: r if r in stored else LABEL_RUN_NAMES.get(r, r) for r in {run for run, _, _ in labels}}
    if runs_only is not None:
        labels = [label for label in labels if runs[label[0]] in runs_only]
        runs = {r: name for r, name in runs.items() if name in runs_only}
    missing = sorted(name for name in runs.values() if name not in stored)
    if missing:
        raise NotFound("run", ", ".join(missing), hint="import it first")
    suggestions = _suggestions(store, sorted(set(runs.values())))
    undiagnosed = sorted({runs[r] for r, t, _ in labels if (runs[r], t) not in suggestions})
    if undiagnosed:
        raise NotFound(
            "diagnosis of labelled tasks in run",
            ", ".join(undiagnosed),
            hint="run `trajreview diagnose --run`",
        )
    return agreement([(cause, suggestions[(runs[r], t)]) for r, t, cause in labels])


def _label_pairs(
    store: Store | ShortLivedStore, files: Sequence[Path], split: str | None = None
) -> list[tuple[str, int, str, str]]:
    """(stored run, task, label, rule) of every label whose task has a stored primary suggestion."""
    labels = [label for path in files for label in read_labels(Path(path), split)]
    stored = {name for (name,) in store.query("SELECT name FROM runs")}
    name = {r: r if r in stored else LABEL_RUN_NAMES.get(r, r) for r in {run for run, _, _ in labels}}
    rules = {
        (run, task_id): rule or ""
        for run, task_id, rule in store.query(
            "SELECT run, task_id, rule FROM failure_causes WHERE is_primary"
        )
    }
    return [(name[r], t, cause, rules[(name[r], t)]) for r, t, cause in labels if (name[r], t) in rules]


def rule_precision(store: Store | ShortLivedStore, files: Sequence[Path]) -> dict[str, RulePrecision]:
    """Per rule, of the labelled tasks where it made the primary suggestion, how many the label agrees with
    (what `core.diagnose.precision.RULE_PRECISION` states)."""
    causes = {
        (run, task_id): cause
        for run, task_id, cause in store.query(
            "SELECT run, task_id, cause FROM failure_causes WHERE is_primary"
        )
    }
    counts: dict[str, list[int]] = {}
    for run, task_id, label, rule in _label_pairs(store, files):
        if not rule:
            continue  # a model's suggestion or undecided: no rule to weigh
        seen = counts.setdefault(rule, [0, 0])
        seen[0] += label == causes[(run, task_id)]
        seen[1] += 1
    return {rule: RulePrecision(agreed, suggested) for rule, (agreed, suggested) in sorted(counts.items())}


def readers_agreement(first: Sequence[Path], second: Path) -> CauseAgreement:
    """A second reader's labels against the first reader's, on the tasks both labelled: how far two careful
    readers agree, the ceiling any rule is measured against."""
    mine = {(run, task): cause for path in first for run, task, cause in read_labels(Path(path))}
    theirs = read_labels(Path(second))
    missing = [f"{run} {task}" for run, task, _ in theirs if (run, task) not in mine]
    if missing:
        raise InputError(second, f"tasks the first labels lack: {', '.join(missing[:5])}")
    return agreement([(mine[(run, task)], cause) for run, task, cause in theirs])


def agreement_from_store(store: Store | ShortLivedStore, runs: list[str] | None = None) -> CauseAgreement:
    """Agreement of the stored suggestions with the reviewers' latest label of each diagnosed task."""
    rows = store.query(
        """
        WITH latest AS (
            SELECT run, task_id, label, row_number() OVER (PARTITION BY run, task_id ORDER BY id DESC) AS nth
            FROM annotations WHERE target = 'task'
        )
        SELECT l.run, l.task_id, l.label, CASE WHEN c.rule = ? THEN ? ELSE c.cause END
        FROM latest l JOIN failure_causes c ON c.run = l.run AND c.task_id = l.task_id AND c.is_primary
        WHERE l.nth = 1 AND l.label IS NOT NULL AND (? IS NULL OR list_contains(?, l.run))
        ORDER BY l.run, l.task_id
        """,
        [FALLBACK_RULE, NO_SPECIFIC, runs, runs],
    )
    pairs = [(cause_of_label(label), cause) for _, _, label, cause in rows]
    return agreement([(label, cause) for label, cause in pairs if label is not None])
