"""The Metrics page's read models: which metric configurations exist for a set of runs, the paper's
Tables 3, 4, 6 and 7 for one configuration (core.queries.paper_tables) with what each leaves out, and
the planning-paradigm view (runs grouped by paradigm side by side, as the paper compares them)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from core.queries import paper_tables as pt
from core.queries.runs import runs_table
from core.store import Store

TABLES = ("Table 3", "Table 4", "Table 6", "Table 7")
TITLES = {
    "Table 3": "Success per domain (official site key), bootstrap 95 % CI; delta against the first run",
    "Table 4": "Metrics, mean ± SD with bootstrap 95 % CI over the tasks where each is defined",
    "Table 6": "Steps per task: human (gold) and agent, on tasks with gold",
    "Table 7": "Answer categories of tasks with at least two requirements",
}
PARADIGM_ORDER = ("step_by_step", "tree_search", "full_plan", "human", "unknown")
PARADIGM_METRICS = ("ssr", "rr", "psr", "ear")


def metric_choices(store: Store, runs: Sequence[str]) -> pd.DataFrame:
    """gold_set, judge_config, preset computed for any of `runs`, with how many of them have it."""
    return store.query_df(
        """SELECT gold_set, judge_config, preset, count(DISTINCT run) AS runs, max(computed_at) AS computed_at
           FROM metrics WHERE list_contains($runs, run) GROUP BY gold_set, judge_config, preset
           ORDER BY runs DESC, CASE judge_config WHEN 'llm' THEN 0 WHEN 'cascade' THEN 1 ELSE 2 END,
                    computed_at DESC, gold_set, preset""",
        {"runs": list(runs)},
    )


def paper_table(
    store: Store, table: str, runs: Sequence[str], gold_set: str | None, judge_config: str | None, preset: str
) -> pd.DataFrame:
    """One of the paper's tables; every row has `left_out` and `left_out_why`."""
    options = {"gold_set": gold_set, "judge_config": judge_config, "preset": preset}
    if table == "Table 3":
        return pt.success_by_domain(store, runs)
    if table == "Table 4":
        return pt.metric_means(store, runs, **options)
    if table == "Table 6":
        return pt.steps_per_task(store, runs, **options)
    if table == "Table 7":
        counted = pt.answer_categories(store, runs, **options)
        per_run = store.query_df(
            """SELECT run, count(*) AS all_tasks FROM metrics WHERE list_contains($runs, run)
               AND gold_set = $gold AND judge_config = $judge AND preset = $preset GROUP BY run""",
            {"runs": list(runs), "gold": gold_set, "judge": judge_config, "preset": preset},
        )
        out = counted.merge(per_run, on="run", how="left")
        out["left_out"] = out["all_tasks"].fillna(0).astype(int) - out["tasks"]
        out["left_out_why"] = [f"fewer_than_2_requirements {n}" if n else "" for n in out["left_out"]]
        return out.drop(columns=["all_tasks"])
    raise ValueError(f"unknown table {table!r}")


def paradigm_view(
    store: Store, runs: Sequence[str], gold_set: str | None, judge_config: str | None, preset: str
) -> pd.DataFrame:
    """One row per run: paradigm, agent, model, success rate (Wilson CI) and the mean of each paradigm
    metric with its n and bootstrap CI, ordered by paradigm (step-by-step, tree search, full plan)."""
    info = runs_table(store)
    info = info[info["run"].isin(runs)][["run", "paradigm", "agent", "model", "scored", "successes",
                                          "success_rate", "ci_low", "ci_high"]]  # fmt: skip
    means = pt.metric_means(store, runs, gold_set=gold_set, judge_config=judge_config, preset=preset)
    for metric in PARADIGM_METRICS:
        part = means[means["metric"] == metric].set_index("run")
        for col in ("mean", "ci_low", "ci_high", "n"):
            info[f"{metric}_{col}"] = info["run"].map(part[col]) if not part.empty else None
    rank = {p: i for i, p in enumerate(PARADIGM_ORDER)}
    info = info.assign(_p=info["paradigm"].map(lambda p: rank.get(p, len(rank))))
    return info.sort_values(["_p", "run"]).drop(columns="_p").reset_index(drop=True)
