"""Triage: every task of a run from summary columns only (never steps, observations or events).

`triage_table` reads; `TriageFilter` and `apply_filter` are pure, so the page, the CLI and the tests
filter the same way; `neighbours` gives the previous and next failed task in the current order.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import pandas as pd

from core.queries.annotations import split_labels, task_labels_sql
from core.queries.runs import verdicts_sql
from core.store import Store

VERDICTS = ("failure", "error", "success", "unscored")
# Failed = what a reviewer must explain: the engine or the source said it did not succeed.
FAILED = frozenset({"failure", "error"})
SORTS = {
    "failed first": (["failed_rank", "task_id"], [True, True]),
    "task": (["task_id"], [True]),
    "site": (["site", "task_id"], [True, True]),
    "steps (most first)": (["steps", "task_id"], [False, True]),
    "SSR (lowest first)": (["ssr", "task_id"], [True, True]),
}
HAS_GOLD = ("with gold", "without gold")
HARD = ("hard", "not hard")  # the paper's hard subset (tasks.in_hard_subset)
# The value a filter uses for "not recorded" (no termination, no reviewer label, no task type): the
# Breakdowns page counts such tasks in their own bucket and its bars filter on it.
NONE = "(none)"


def metric_configs(store: Store, run: str) -> list[dict]:
    """Computed (gold set, judge config, preset) of a run, most recent first."""
    return store.query_dicts(
        "SELECT gold_set, judge_config, preset, count(*) AS tasks, max(computed_at) AS computed_at"
        " FROM metrics WHERE run = ? GROUP BY ALL ORDER BY computed_at DESC, gold_set, judge_config, preset",
        [run],
    )


def triage_table(store: Store, run: str, metric_config: tuple[str, str, str] | None = None) -> pd.DataFrame:
    """One row per task of the run. `metric_config` = (gold set, judge config, preset) picks which
    metrics fill ssr/ear; default: the most recently computed one."""
    if metric_config is None:
        configs = metric_configs(store, run)
        metric_config = (
            (configs[0]["gold_set"], configs[0]["judge_config"], configs[0]["preset"]) if configs else None
        )
    gold_set, judge, preset = metric_config or (None, None, None)
    df = store.query_df(
        f"""
        WITH v AS ({verdicts_sql()}),
        failing AS (
            SELECT task_id, string_agg(DISTINCT evaluator, ', ' ORDER BY evaluator) AS failing_evaluators
            FROM evaluator_results WHERE run = $run AND status <> 'success' GROUP BY task_id
        ),
        gold AS (SELECT DISTINCT task_id FROM gold_steps),
        current_gold AS (SELECT task_id, max(version) AS version FROM gold_steps WHERE gold_set = $gold
                         GROUP BY task_id),
        labels AS ({task_labels_sql()}),
        problems AS (SELECT task_id, count(*) AS n FROM import_problems WHERE run = $run GROUP BY task_id)
        SELECT v.task_id, k.site_key AS site, k.intent, v.verdict, v.verdict_source,
               k.task_type, k.in_hard_subset AS hard,
               f.failing_evaluators,
               coalesce(e.explanation, e.error,
                        CASE WHEN v.verdict IN ('failure', 'error') THEN NULL END) AS explanation,
               t.termination, t.n_steps AS steps, g.task_id IS NOT NULL AS has_gold,
               m.ssr, m.ear, coalesce(m.gold_version < cg.version, false) AS metrics_stale,
               coalesce(e.cannot_pass, false) AS cannot_pass,
               coalesce(e.offline_disagrees, false) AS disagrees, l.label,
               coalesce(t.final_answer, r.raw_text) AS answer, t.episode,
               coalesce(p.n, 0) AS problems
        FROM v
        LEFT JOIN tasks k ON k.task_id = v.task_id
        LEFT JOIN evaluations e ON e.run = $run AND e.task_id = v.task_id
        LEFT JOIN trajectories t ON t.run = $run AND t.task_id = v.task_id AND t.is_answer
        LEFT JOIN agent_responses r ON r.run = $run AND r.task_id = v.task_id
        LEFT JOIN failing f ON f.task_id = v.task_id
        LEFT JOIN gold g ON g.task_id = v.task_id
        LEFT JOIN metrics m ON m.run = $run AND m.task_id = v.task_id AND m.gold_set = $gold
                            AND m.judge_config = $judge AND m.preset = $preset
        LEFT JOIN current_gold cg ON cg.task_id = v.task_id
        LEFT JOIN labels l ON l.task_id = v.task_id
        LEFT JOIN problems p ON p.task_id = v.task_id
        ORDER BY v.task_id
        """,
        {"run": run, "gold": gold_set, "judge": judge, "preset": preset},
    )
    df["failed_rank"] = (~df["verdict"].isin(FAILED)).astype(int)
    df.attrs["metric_config"] = metric_config
    return df


@dataclass(frozen=True)
class TriageFilter:
    """What the reviewer narrowed the list to; every field empty means everything."""

    sites: tuple[str, ...] = ()
    verdicts: tuple[str, ...] = ()
    evaluators: tuple[str, ...] = ()
    terminations: tuple[str, ...] = ()
    has_gold: str | None = None  # one of HAS_GOLD
    labels: tuple[str, ...] = ()
    text: str = ""
    sort: str = "failed first"
    task_types: tuple[str, ...] = ()
    hard: str | None = None  # one of HARD

    def fingerprint(self) -> str:
        """A short stable key: a table keyed by it never applies an old selection to new rows."""
        parts = (self.sites, self.verdicts, self.evaluators, self.terminations, self.has_gold, self.labels,
                 self.text.strip().casefold(), self.sort, self.task_types, self.hard)  # fmt: skip
        return hashlib.sha1(repr(parts).encode()).hexdigest()[:12]


def options(df: pd.DataFrame) -> dict[str, list[str]]:
    """The values each filter can take in this run, for the filter widgets."""
    evaluators = sorted(
        {e.strip() for cell in df["failing_evaluators"].dropna() for e in str(cell).split(",") if e.strip()}
    )
    return {
        "sites": sorted(df["site"].dropna().unique().tolist()),
        "verdicts": [v for v in VERDICTS if v in set(df["verdict"])],
        "evaluators": evaluators,
        "terminations": _with_none(df["termination"]),
        "labels": _labels_with_none(df["label"]),
        "task_types": _with_none(df["task_type"]),
    }


def _with_none(column: pd.Series) -> list[str]:
    """The values of a column, and NONE when some rows have none (a filter can ask for those)."""
    values = sorted(column.dropna().unique().tolist())
    return values + [NONE] if column.isna().any() else values


def _labels_with_none(column: pd.Series) -> list[str]:
    """Every label found in the column's comma-joined cells, and NONE when some tasks carry none."""
    labels = sorted(set().union(*(split_labels(cell) for cell in column)))
    return labels + [NONE] if any(not split_labels(cell) for cell in column) else labels


def _isin(column: pd.Series, wanted: tuple[str, ...]) -> pd.Series:
    found = column.isin(wanted)
    return found | column.isna() if NONE in wanted else found


def apply_filter(df: pd.DataFrame, f: TriageFilter) -> pd.DataFrame:
    """Rows matching every set filter, in the filter's sort order (index reset: position = row)."""
    keep = pd.Series(True, index=df.index)
    if f.sites:
        keep &= df["site"].isin(f.sites)
    if f.verdicts:
        keep &= df["verdict"].isin(f.verdicts)
    if f.evaluators:
        wanted = set(f.evaluators)
        keep &= (
            df["failing_evaluators"]
            .fillna("")
            .map(lambda cell: bool(wanted & {e.strip() for e in cell.split(",")}))
        )
    if f.terminations:
        keep &= _isin(df["termination"], f.terminations)
    if f.task_types:
        keep &= _isin(df["task_type"], f.task_types)
    if f.hard == HARD[0]:
        keep &= df["hard"].fillna(False).astype(bool)
    elif f.hard == HARD[1]:
        keep &= ~df["hard"].fillna(True).astype(bool)
    if f.has_gold == HAS_GOLD[0]:
        keep &= df["has_gold"]
    elif f.has_gold == HAS_GOLD[1]:
        keep &= ~df["has_gold"]
    if f.labels:
        wanted_labels = set(f.labels)
        keep &= df["label"].map(
            lambda cell: (
                bool(wanted_labels & split_labels(cell)) or (NONE in wanted_labels and not split_labels(cell))
            )
        )
    text = f.text.strip()
    if text:
        needle = text.casefold()
        haystack = (
            df["intent"].fillna("") + "\n" + df["answer"].fillna("") + "\n" + df["explanation"].fillna("")
        ).str.casefold()
        found = haystack.str.contains(needle, regex=False)
        if text.isdigit():
            found |= df["task_id"] == int(text)
        keep &= found
    by, ascending = SORTS.get(f.sort, SORTS["failed first"])
    return (
        df[keep]
        .sort_values(by, ascending=ascending, na_position="last", kind="stable")
        .reset_index(drop=True)
    )


def counts(df: pd.DataFrame) -> dict[str, int]:
    """Verdict counts of a (filtered) table."""
    found = df["verdict"].value_counts().to_dict()
    return {"tasks": len(df), **{v: int(found.get(v, 0)) for v in VERDICTS}}


def neighbours(ordered_task_ids: list[int], failed: set[int], task_id: int) -> tuple[int | None, int | None]:
    """Previous and next failed task around `task_id` in `ordered_task_ids` (the filtered order)."""
    failed_order = [t for t in ordered_task_ids if t in failed]
    if task_id in failed_order:
        i = failed_order.index(task_id)
        return (
            failed_order[i - 1] if i > 0 else None,
            failed_order[i + 1] if i + 1 < len(failed_order) else None,
        )
    try:
        pos = ordered_task_ids.index(task_id)
    except ValueError:
        return None, (failed_order[0] if failed_order else None)
    before = [t for t in ordered_task_ids[:pos] if t in failed]
    after = [t for t in ordered_task_ids[pos + 1 :] if t in failed]
    return (before[-1] if before else None, after[0] if after else None)


def filter_from_params(get_all) -> TriageFilter:
    """The filter a triage URL describes; `get_all(name) -> list[str]` reads one parameter's values."""

    def first(name: str) -> str | None:
        values = get_all(name)
        return values[0] if values else None

    sort = first("sort")
    return TriageFilter(
        sites=tuple(get_all("site")), verdicts=tuple(get_all("verdict")), evaluators=tuple(get_all("evaluator")),
        terminations=tuple(get_all("termination")), has_gold=first("gold") if first("gold") in HAS_GOLD else None,
        labels=tuple(get_all("label")), text=first("q") or "", sort=sort if sort in SORTS else "failed first",
        task_types=tuple(get_all("type")), hard=first("hard") if first("hard") in HARD else None,
    )  # fmt: skip


def task_neighbours(df: pd.DataFrame, f: TriageFilter, task_id: int) -> tuple[int | None, int | None]:
    """Previous and next failed task around `task_id` in the reviewer's filtered, sorted list."""
    shown = apply_filter(df, f)
    failed = set(shown.loc[shown["verdict"].isin(FAILED), "task_id"].astype(int))
    return neighbours(shown["task_id"].astype(int).tolist(), failed, task_id)
