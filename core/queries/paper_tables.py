"""The paper's tables over stored metrics, with bootstrap 95 % confidence intervals.

Table 3: success per domain (official site key) per run, with deltas between runs (paired bootstrap);
Table 4: metric means ± SD; Table 6: steps per human (gold) and per agent; Table 7: answer categories
of tasks with ≥ 2 requirements. Every mean says how many tasks contributed (undefined metrics are
left out, never counted as 0), and how many it leaves out and why (`left_out`, `left_out_why`: the
NULL reasons of core.measure.metrics_run.NULL_REASONS, e.g. `answer_only 812`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

import numpy as np
import orjson
import pandas as pd

from core.measure.metrics import ANSWER_CATEGORIES, task_success
from core.measure.stats import SHARE, STEPS, bootstrap_ci, paired_bootstrap_diff, summarize
from core.store import Store
from core.values import or_none

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
# Each metric's unit (docs/metrics.md): a share of 0–1 (a difference of two is in percentage points), but the
# mean recovery cost, a count of agent steps (its difference is in steps).
METRIC_UNITS = {metric: STEPS if metric == "mean_recovery_cost" else SHARE for metric in METRIC_COLUMNS}


# -- Table 3 -------------------------------------------------------------------------------------
_OUTCOMES_SQL = """WITH ids AS (
        SELECT run, task_id FROM trajectories WHERE is_answer AND list_contains($runs, run)
        UNION SELECT run, task_id FROM evaluations WHERE list_contains($runs, run)
    )
    SELECT ids.run, ids.task_id, coalesce(k.site_key, 'unknown') AS site_key, e.status AS eval_status,
           t.success AS source_success, t.reward
    FROM ids
    LEFT JOIN trajectories t ON t.run = ids.run AND t.task_id = ids.task_id AND t.is_answer
    LEFT JOIN evaluations e ON e.run = ids.run AND e.task_id = ids.task_id
    LEFT JOIN tasks k ON k.task_id = ids.task_id"""


def _outcome_rows(store: Store, runs: Sequence[str]) -> list[tuple[str, int, str, bool | None]]:
    """(run, task_id, site_key, success: the evaluation, else the source's success/reward) of every task of
    `runs`: those with an answer trajectory or an evaluation (a WebArena-Verified run stores agent responses
    and evaluations, no trajectory). Plain tuples: Table 3 groups them in Python, which over a few thousand
    rows costs a tenth of pandas' per-group filtering."""
    return [
        (run, task_id, site, task_success(status, source, reward))
        for run, task_id, site, status, source, reward in store.query(_OUTCOMES_SQL, {"runs": list(runs)})
    ]


def success_by_domain(store: Store, runs: Sequence[str]) -> pd.DataFrame:
    """Success rate per site key per run (and `all`), with the delta of each run against the first; a run
    gets a row for a domain only when it has tasks there."""
    # (domain, run) -> {task_id: 1.0 / 0.0} of the tasks with a verdict, and how many tasks have none.
    scored: dict[tuple[str, str], dict[int, float]] = {}
    unscored: Counter = Counter()
    for run, task_id, site, success in _outcome_rows(store, runs):
        for domain in (site, "all"):
            if success is None:
                unscored[domain, run] += 1
            else:
                scored.setdefault((domain, run), {})[task_id] = float(success)
    domains = sorted({site for site, _ in scored if site != "all"})
    rows = []
    for domain in [*domains, "all"] if scored or unscored else []:
        base = scored.get((domain, runs[0]), {})
        for run in runs:
            mine, without = scored.get((domain, run), {}), unscored[domain, run]
            if not mine and not without:
                continue  # the run has no task of this domain: no row, rather than a row of n=0
            row = {"domain": domain, "run": run, **summarize(list(mine.values())), "left_out": without,
                   "left_out_why": f"no_verdict {without}" if without else ""}  # fmt: skip
            if run != runs[0]:
                common = [task for task in base if task in mine]
                delta, low, high = paired_bootstrap_diff([base[t] for t in common], [mine[t] for t in common])
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
    """Table 4: per run and metric, mean ± SD with n and CI; `ssr_successful` is SSR over successful tasks."""
    df = _metrics(store, runs, gold_set, judge_config, preset)
    rows = []
    for run in runs:
        part = df[df.run == run]
        for metric in (*METRIC_COLUMNS, "ssr_successful"):
            if metric == "ssr_successful":
                successful = part[part.success.fillna(False).astype(bool)]
                values = successful.ssr.tolist()
                why = Counter({"not_successful": len(part) - len(successful)})
                why.update(_reasons(successful.null_reasons, "ssr"))
            else:
                values = part[metric].tolist()
                why = _reasons(part.null_reasons, metric)
            stats = summarize([or_none(v) for v in values])
            rows.append({"run": run, "metric": metric, **stats, "tasks": len(part),
                         "left_out": len(part) - stats["n"], "left_out_why": _why(why)})  # fmt: skip
    return pd.DataFrame(rows)


def _reasons(null_reasons: Iterable, metric: str) -> Counter:
    """How many rows give each NULL reason for `metric` (the `null_reasons` JSON of the metrics rows)."""
    counts: Counter = Counter()
    for text in null_reasons:
        if isinstance(text, str) and text:
            reason = orjson.loads(text).get(metric)
            if reason:
                counts[reason] += 1
    return counts


def _why(counts: Counter) -> str:
    return "; ".join(f"{reason} {n}" for reason, n in counts.most_common() if n)


def steps_per_task(
    store: Store, runs: Sequence[str], *, gold_set: str | None = None, judge_config: str | None = None,
    preset: str = "default",
) -> pd.DataFrame:  # fmt: skip
    """Table 6: mean steps of the gold (human) and of the agent, per run and domain, on tasks with gold."""
    df = _metrics(store, runs, gold_set, judge_config, preset)
    # Answer-only trajectories record no agent step: their step count is not the agent's.
    answer_only = [
        isinstance(text, str) and bool(text) and orjson.loads(text).get("repr") == "answer_only"
        for text in df.null_reasons
    ]
    df = df.assign(answer_only=answer_only)
    rows = []
    for run in runs:
        whole = df[df.run == run]
        part = whole[whole.n_gold.notna() & ~whole.answer_only]
        for domain in [*sorted(part.site_key.unique()), "all"]:
            sub = part if domain == "all" else part[part.site_key == domain]
            every = whole if domain == "all" else whole[whole.site_key == domain]
            why = Counter({"no_gold": int(every.n_gold.isna().sum()),
                           "answer_only": int((every.n_gold.notna() & every.answer_only).sum())})  # fmt: skip
            human, agent = summarize(sub.n_gold.tolist()), summarize(sub.n_agent.tolist())
            rows.append({
                "run": run, "domain": domain, "tasks": len(sub), "human_mean": human["mean"], "human_sd": human["sd"],
                "agent_mean": agent["mean"], "agent_sd": agent["sd"],
                "agent_over_human": (agent["mean"] / human["mean"]) if human["mean"] else None,
                "left_out": len(every) - len(sub), "left_out_why": _why(why),
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
