"""The paper's tables over stored metrics, with bootstrap 95 % confidence intervals.

Table 3: success per domain (official site key) per run, with deltas between runs (paired bootstrap);
Table 4: metric means ± SD; Table 6: steps per human (gold) and per agent; Table 7: answer categories
of tasks with ≥ 2 requirements. Every mean says how many tasks contributed (undefined metrics are
left out, never counted as 0).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np
import orjson
import pandas as pd

from core.metrics import ANSWER_CATEGORIES, task_success
from core.stats import bootstrap_ci, paired_bootstrap_diff, summarize
from core.store import Store

METRIC_COLUMNS = (
    "ssr",
    "ssr_unordered",
    "rr",
    "mean_recovery_cost",
    "repr",
    "repr_run_members",
    "psr",
    "ear",
)


# -- Table 3 -------------------------------------------------------------------------------------
def task_outcomes(store: Store, runs: Sequence[str]) -> pd.DataFrame:
    """run, task_id, site_key, success (evaluation, else the source's success/reward)."""
    df = store.query_df(
        """SELECT t.run, t.task_id, coalesce(k.site_key, 'unknown') AS site_key, e.status AS eval_status,
                  t.success AS source_success, t.reward
           FROM trajectories t
           LEFT JOIN evaluations e ON e.run = t.run AND e.task_id = t.task_id
           LEFT JOIN tasks k ON k.task_id = t.task_id
           WHERE t.is_answer AND list_contains(?, t.run)""",
        [list(runs)],
    )
    if df.empty:
        return df.assign(success=pd.Series(dtype=object))
    df["success"] = [
        task_success(
            None if pd.isna(s) else s, None if pd.isna(src) else bool(src), None if pd.isna(r) else float(r)
        )
        for s, src, r in zip(df.eval_status, df.source_success, df.reward, strict=True)
    ]
    return df[["run", "task_id", "site_key", "success"]]


def success_by_domain(store: Store, runs: Sequence[str]) -> pd.DataFrame:
    """Success rate per site key per run (and `all`), with the delta of each run against the first."""
    outcomes = task_outcomes(store, runs)
    rows = []
    if outcomes.empty:
        return pd.DataFrame(rows)
    outcomes = outcomes[outcomes.success.notna()]
    for domain in [*sorted(outcomes.site_key.unique()), "all"]:
        part = outcomes if domain == "all" else outcomes[outcomes.site_key == domain]
        base = part[part.run == runs[0]].set_index("task_id").success.astype(float)
        for run in runs:
            mine = part[part.run == run].set_index("task_id").success.astype(float)
            row = {"domain": domain, "run": run, **summarize(mine.tolist())}
            if run != runs[0]:
                common = base.index.intersection(mine.index)
                delta, low, high = paired_bootstrap_diff(base[common].tolist(), mine[common].tolist())
                row.update(delta=delta, delta_ci_low=low, delta_ci_high=high, paired_n=len(common))
            rows.append(row)
    table = pd.DataFrame(rows)
    if "paired_n" in table:
        table["paired_n"] = table["paired_n"].astype("Int64")
    return table


# -- metrics-based tables ------------------------------------------------------------------------
def _metrics(store: Store, runs: Sequence[str], gold_set: str | None, judge_config: str | None, preset: str):
    return store.query_df(
        """SELECT m.*, coalesce(k.site_key, 'unknown') AS site_key FROM metrics m
           LEFT JOIN tasks k ON k.task_id = m.task_id
           WHERE list_contains(?, m.run) AND (? IS NULL OR m.gold_set = ?)
             AND (? IS NULL OR m.judge_config = ?) AND m.preset = ?""",
        [list(runs), gold_set, gold_set, judge_config, judge_config, preset],
    )


def metric_means(
    store: Store, runs: Sequence[str], *, gold_set: str | None = None, judge_config: str | None = None,
    preset: str = "default",
) -> pd.DataFrame:  # fmt: skip
    """Table 4: per run and metric, mean ± SD with n and CI; `ssr_successful` is SSR over successful tasks.
    `left_out` counts the tasks whose metric is undefined (NULL, never 0) and `left_out_why` says why
    (no_gold, answer_only, unresolved_pairs, ...: core.metrics_run.NULL_REASONS)."""
    df = _metrics(store, runs, gold_set, judge_config, preset)
    reasons = [orjson.loads(r) if isinstance(r, str) else {} for r in df["null_reasons"]]
    df = df.assign(_reasons=reasons)
    rows = []
    for run in runs:
        part = df[df.run == run]
        for metric in (*METRIC_COLUMNS, "ssr_successful"):
            if metric == "ssr_successful":
                part_m = part[part.success.fillna(False).astype(bool)]
                values, column = part_m.ssr.tolist(), "ssr"
            else:
                part_m, values, column = part, part[metric].tolist(), metric
            stats = summarize([None if pd.isna(v) else v for v in values])
            left_out = Counter(
                r.get(column, "null") for r, v in zip(part_m._reasons, values, strict=True) if pd.isna(v)
            )
            rows.append({
                "run": run, "metric": metric, **stats, "tasks": len(part), "left_out": sum(left_out.values()),
                "left_out_why": ", ".join(f"{reason} {n}" for reason, n in left_out.most_common()) or None,
            })  # fmt: skip
    return pd.DataFrame(rows)


def steps_per_task(
    store: Store, runs: Sequence[str], *, gold_set: str | None = None, judge_config: str | None = None,
    preset: str = "default",
) -> pd.DataFrame:  # fmt: skip
    """Table 6: mean steps of the gold (human) and of the agent, per run and domain, on tasks with gold."""
    df = _metrics(store, runs, gold_set, judge_config, preset)
    df = df[df.n_gold.notna()]
    rows = []
    for run in runs:
        part = df[df.run == run]
        for domain in [*sorted(part.site_key.unique()), "all"]:
            sub = part if domain == "all" else part[part.site_key == domain]
            human, agent = summarize(sub.n_gold.tolist()), summarize(sub.n_agent.tolist())
            rows.append({
                "run": run, "domain": domain, "tasks": len(sub), "human_mean": human["mean"], "human_sd": human["sd"],
                "agent_mean": agent["mean"], "agent_sd": agent["sd"],
                "agent_over_human": (agent["mean"] / human["mean"]) if human["mean"] else None,
            })  # fmt: skip
    return pd.DataFrame(rows)


def answer_categories(
    store: Store, runs: Sequence[str], *, gold_set: str | None = None, judge_config: str | None = None,
    preset: str = "default",
) -> pd.DataFrame:  # fmt: skip
    """Table 7: among tasks with >= 2 requirements, N/A answers, produced answers and early stops."""
    df = _metrics(store, runs, gold_set, judge_config, preset)
    df = df[df.n_requirements.fillna(0) >= 2]
    rows = []
    for run in runs:
        part = df[df.run == run]
        total = len(part)
        counts = {c: int((part.answer_category == c).sum()) for c in ANSWER_CATEGORIES}
        row = {"run": run, "tasks": total, **counts}
        row.update({f"{c}_share": (counts[c] / total if total else None) for c in ANSWER_CATEGORIES})
        legit = [float(c != "early_stop") for c in part.answer_category]
        row["legitimate_share"] = float(np.mean(legit)) if legit else None
        row["legitimate_ci_low"], row["legitimate_ci_high"] = bootstrap_ci(legit)
        rows.append(row)
    return pd.DataFrame(rows)


def default_metrics_selection(store: Store, runs: Sequence[str]) -> tuple[str | None, str | None]:
    """(gold set, judge config) to report when not given: the most recent computed for these runs,
    preferring the LLM-backed judges over the offline one."""
    rows = store.query(
        """SELECT gold_set, judge_config FROM metrics WHERE list_contains(?, run)
           GROUP BY gold_set, judge_config
           ORDER BY CASE judge_config WHEN 'llm' THEN 0 WHEN 'cascade' THEN 1 ELSE 2 END, max(computed_at) DESC""",
        [list(runs)],
    )
    return rows[0] if rows else (None, None)
