"""Compare two runs task by task: the 2x2 of outcomes, McNemar's exact test, the paired bootstrap CI of
the difference in success and in each metric, per-site deltas with CIs, and the flipped tasks.

Pairs are the tasks both runs scored (success, failure or error; an error counts as not passed, as in
the success rate); tasks scored by only one run are counted in `unpaired`, never guessed. Differences
are B − A.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pandas as pd

from core.measure.stats import mcnemar_exact, paired_bootstrap_diff, paired_bootstrap_diffs
from core.queries.defect_rate import DefectRate, confirmed_tasks, defect_rate
from core.queries.paper_tables import METRIC_COLUMNS, METRIC_UNITS
from core.queries.runs import verdicts_sql
from core.store import Store

OUTCOMES = ("both pass", "A only", "B only", "both fail")
FLIPS = ("any flip", "A only", "B only")  # the flip filter of the flipped-task list
SCORED = ("success", "failure", "error")


@dataclass
class Comparison:
    a: str
    b: str
    pairs: pd.DataFrame  # task_id, site, intent, verdict_a, verdict_b, outcome
    outcomes: dict[str, int]
    unpaired: dict[str, int]  # scored by only one of the runs (or by neither)
    mcnemar_p: float
    success: dict  # rate_a, rate_b, diff, ci_low, ci_high, n
    # metric, unit (METRIC_UNITS: share or steps), n, mean_a, mean_b, diff, ci_low, ci_high, left_out, left_out_why
    metrics: pd.DataFrame
    metric_config: tuple[str, str, str] | None
    per_site: pd.DataFrame  # site, n, rate_a, rate_b, diff, ci_low, ci_high, only_a, only_b
    notes: list[str] = field(default_factory=list)
    # Each run's success over the paired tasks with its confirmed evaluator defects counted as passes
    # (core.queries.defect_rate), keyed by run name; beside `success`, never in its place.
    with_defects: dict[str, DefectRate] = field(default_factory=dict)


def report_runs(store: Store) -> list[str]:
    """The runs a report covers when none is named: every run, oldest first (the baseline first, so
    Table 3's deltas read as "what changed since")."""
    return [name for (name,) in store.query("SELECT name FROM runs ORDER BY imported_at, name")]


def comparison_pair(store: Store, runs: Sequence[str] | None = None) -> tuple[str, str] | None:
    """The two runs every default comparison pairs (the Compare page, `report --html`): B is the latest of
    `runs` (oldest first; default: every run) and A the latest earlier one that scored at least one task
    B also scored. None when no two of them share a scored task: there is nothing to pair."""
    ordered = list(runs) if runs is not None else report_runs(store)
    shared = {
        (a, b): n
        for a, b, n in store.query(
            f"""WITH v AS ({verdicts_sql(one_run=False)})
                SELECT x.run, y.run, count(*) FROM v x JOIN v y ON x.task_id = y.task_id AND x.run <> y.run
                WHERE list_contains($runs, x.run) AND list_contains($runs, y.run)
                  AND list_contains($scored, x.verdict) AND list_contains($scored, y.verdict)
                GROUP BY ALL""",
            {"runs": ordered, "scored": list(SCORED)},
        )
    }
    for j in range(len(ordered) - 1, 0, -1):
        for i in range(j - 1, -1, -1):
            if shared.get((ordered[i], ordered[j]), 0) > 0:
                return ordered[i], ordered[j]
    return None


def _outcome(pass_a: bool, pass_b: bool) -> str:
    return (
        OUTCOMES[0]
        if pass_a and pass_b
        else OUTCOMES[1]
        if pass_a
        else OUTCOMES[2]
        if pass_b
        else OUTCOMES[3]
    )


def task_pairs(store: Store, a: str, b: str) -> pd.DataFrame:
    """Every task either run has: task_id, site, intent, verdict_a, verdict_b (NULL: not in that run)."""
    return store.query_df(
        f"""
        WITH v AS ({verdicts_sql(one_run=False)})
        SELECT coalesce(va.task_id, vb.task_id) AS task_id, k.site_key AS site, k.intent,
               va.verdict AS verdict_a, vb.verdict AS verdict_b
        FROM (SELECT * FROM v WHERE run = $a) va
        FULL JOIN (SELECT * FROM v WHERE run = $b) vb ON va.task_id = vb.task_id
        LEFT JOIN tasks k ON k.task_id = coalesce(va.task_id, vb.task_id)
        ORDER BY task_id
        """,
        {"a": a, "b": b},
    )


def common_metric_config(store: Store, a: str, b: str) -> tuple[str, str, str] | None:
    """The (gold set, judge config, preset) computed for both runs, most recent first."""
    rows = store.query(
        """SELECT gold_set, judge_config, preset FROM metrics WHERE run IN ($a, $b)
           GROUP BY ALL HAVING count(DISTINCT run) = 2 ORDER BY max(computed_at) DESC, gold_set, judge_config, preset""",
        {"a": a, "b": b},
    )
    return tuple(rows[0]) if rows else None


def _metric_diffs(store: Store, a: str, b: str, config: tuple[str, str, str] | None) -> pd.DataFrame:
    columns = ["metric", "unit", "n", "mean_a", "mean_b", "diff", "ci_low", "ci_high", "left_out",
               "left_out_why"]  # fmt: skip
    if config is None:
        return pd.DataFrame(columns=columns)
    gold, judge, preset = config
    df = store.query_df(
        f"""SELECT run, task_id, {", ".join(METRIC_COLUMNS)} FROM metrics
            WHERE run IN ($a, $b) AND gold_set = $gold AND judge_config = $judge AND preset = $preset""",
        {"a": a, "b": b, "gold": gold, "judge": judge, "preset": preset},
    )
    left = df[df["run"] == a].set_index("task_id")
    right = df[df["run"] == b].set_index("task_id")
    common = left.index.intersection(right.index)
    only_one = len(left.index.symmetric_difference(right.index))
    rows = []
    series = {
        metric: (left.loc[common, metric].astype(float), right.loc[common, metric].astype(float))
        for metric in METRIC_COLUMNS
    }
    defined = {metric: x.notna() & y.notna() for metric, (x, y) in series.items()}
    # One resample draw for the metrics of one length: the same intervals as one bootstrap per metric.
    intervals = paired_bootstrap_diffs(
        [(x[defined[m]].tolist(), y[defined[m]].tolist()) for m, (x, y) in series.items()]
    )
    for metric, (diff, low, high) in zip(METRIC_COLUMNS, intervals, strict=True):
        x, y = series[metric]
        both = defined[metric]
        rows.append({"metric": metric, "unit": METRIC_UNITS[metric], "n": int(both.sum()),
                     "mean_a": float(x[both].mean()) if both.any() else None,
                     "mean_b": float(y[both].mean()) if both.any() else None,
                     "diff": diff, "ci_low": low, "ci_high": high,
                     # Tasks of either run the pairing cannot use: undefined in one run, or in one run only.
                     "left_out": len(left.index.union(right.index)) - int(both.sum()),
                     "left_out_why": _why({"undefined in A": int(x.isna().sum()),
                                           "undefined in B": int((x.notna() & y.isna()).sum()),
                                           "metrics in one run only": only_one})})  # fmt: skip
    return pd.DataFrame(rows, columns=columns)


def _why(counts: dict[str, int]) -> str:
    return "; ".join(f"{why} {n}" for why, n in counts.items() if n)


def _per_site(pairs: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for site, part in pairs.groupby(pairs["site"].fillna("unknown"), sort=True):
        x, y = part["pass_a"].astype(float), part["pass_b"].astype(float)
        diff, low, high = paired_bootstrap_diff(x.tolist(), y.tolist())
        rows.append({"site": site, "n": len(part), "rate_a": float(x.mean()), "rate_b": float(y.mean()),
                     "diff": diff, "ci_low": low, "ci_high": high,
                     "only_a": int((part["outcome"] == OUTCOMES[1]).sum()),
                     "only_b": int((part["outcome"] == OUTCOMES[2]).sum())})  # fmt: skip
    return pd.DataFrame(
        rows, columns=["site", "n", "rate_a", "rate_b", "diff", "ci_low", "ci_high", "only_a", "only_b"]
    ).sort_values(["n", "site"], ascending=[False, True], ignore_index=True)


def compare_runs(store: Store, a: str, b: str) -> Comparison:
    everything = task_pairs(store, a, b)
    scored = everything["verdict_a"].isin(SCORED) & everything["verdict_b"].isin(SCORED)
    pairs = everything[scored].copy()
    pairs["pass_a"] = pairs["verdict_a"] == "success"
    pairs["pass_b"] = pairs["verdict_b"] == "success"
    pairs["outcome"] = [_outcome(x, y) for x, y in zip(pairs["pass_a"], pairs["pass_b"], strict=True)]
    outcomes = {o: int((pairs["outcome"] == o).sum()) for o in OUTCOMES}
    rest = everything[~scored]
    unpaired = {
        "scored by A only": int((rest["verdict_a"].isin(SCORED)).sum()),
        "scored by B only": int((rest["verdict_b"].isin(SCORED)).sum()),
        "scored by neither": int((~rest["verdict_a"].isin(SCORED) & ~rest["verdict_b"].isin(SCORED)).sum()),
    }
    diff, low, high = paired_bootstrap_diff(pairs["pass_a"].astype(float).tolist(),
                                            pairs["pass_b"].astype(float).tolist())  # fmt: skip
    n = len(pairs)
    success = {"n": n, "rate_a": float(pairs["pass_a"].mean()) if n else None,
               "rate_b": float(pairs["pass_b"].mean()) if n else None,
               "diff": diff, "ci_low": low, "ci_high": high}  # fmt: skip
    confirmed = confirmed_tasks(store, (a, b))
    with_defects = {
        run: defect_rate(pairs[column], [(run, int(t)) in confirmed for t in pairs["task_id"]])
        for run, column in ((a, "verdict_a"), (b, "verdict_b"))
    }
    config = common_metric_config(store, a, b)
    notes = []
    if config is None:
        notes.append("No metrics computed with the same gold set, judge and preset for both runs.")
    return Comparison(
        a=a, b=b, pairs=pairs.drop(columns=["pass_a", "pass_b"]).reset_index(drop=True), outcomes=outcomes,
        unpaired=unpaired, mcnemar_p=mcnemar_exact(outcomes["A only"], outcomes["B only"]), success=success,
        metrics=_metric_diffs(store, a, b, config), metric_config=config, per_site=_per_site(pairs), notes=notes,
        with_defects=with_defects,
    )  # fmt: skip


def flipped(pairs: pd.DataFrame, flip: str = FLIPS[0]) -> pd.DataFrame:
    """The tasks whose outcome differs between the runs (`A only` / `B only` passed), pure."""
    wanted = (OUTCOMES[1], OUTCOMES[2]) if flip not in (OUTCOMES[1], OUTCOMES[2]) else (flip,)
    return pairs[pairs["outcome"].isin(wanted)].reset_index(drop=True)
