"""Triage: every task of a run from summary columns only (never steps, observations or events).

`triage_table` reads typed rows (`TriageTable` of `TriageRow`); `TriageFilter` and `apply_filter` are pure, so the page, the CLI and the tests
filter the same way; `neighbours` gives the previous and next failed task in the current order.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field, fields, replace

import pandas as pd

from core.queries.annotations import split_labels, task_labels_sql
from core.queries.causes import cause_options, primary_causes_sql
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


@dataclass(slots=True)
class TriageRow:
    """One task of a run in Triage: summary columns only (never steps, observations or events).

    A plain slotted dataclass rather than a pydantic record, and not frozen (treat it as read-only): a
    run has hundreds of rows and the app's cache rebuilds them on every view, where validation or frozen
    assignment would cost several times more. The values come typed from DuckDB; `field_docs` reads the
    field documentation below."""

    task_id: int
    """WebArena task id."""
    site: str | None
    """The official per-site bucket (`tasks.site_key`); None when the task is not in the dataset."""
    intent: str | None
    """The task instruction."""
    verdict: str
    """`success`, `failure`, `error` or `unscored` (`runs.verdicts_sql`)."""
    verdict_source: str | None
    """Who decided the verdict (`webarena-verified`, `source-log`, `source-reward`, ...)."""
    task_type: str | None
    """`retrieve`, `mutate` or `navigate`; None when not recorded."""
    hard: bool | None
    """In the official hard subset; None when the task is not in the dataset."""
    failing_evaluators: str | None
    """The evaluators that did not succeed, comma-joined in name order."""
    explanation: str | None
    """The one-sentence explanation (or the evaluation error) of a failed task."""
    termination: str | None
    """How the answer attempt ended; None when not recorded or recorded as `none` (nothing tells): one
    "(none)" bucket for the filter and the Breakdowns bar."""
    steps: int | None
    """Executed actions of the answer attempt."""
    has_gold: bool
    """Some gold set has gold for the task."""
    ssr: float | None
    """Step Success Rate of the metric configuration the table was read with."""
    ear: float | None
    """Element Accuracy Rate of that configuration."""
    metrics_stale: bool
    """Those metrics were computed against an older version of the task's gold."""
    cannot_pass: bool
    """The engine rejects the task's own expected answer (docs/cannot-pass.md)."""
    disagrees: bool
    """WebArena's original evaluators, re-checked offline, decide otherwise than the run's verdict."""
    label: str | None
    """Current reviewer labels on the task, its steps and events, joined (`annotations.split_labels`)."""
    answer: str | None
    """The agent's answer: the final answer, else the raw agent response."""
    episode: str | None
    """The run's answer attempt."""
    problems: int
    """Import problems recorded for the task."""
    cause: str | None
    """The suggested primary cause of a failed task (a taxonomy code, `trajreview diagnose`); None when
    not diagnosed."""
    cause_by_model: bool
    """That cause was suggested by a model (no rule decided)."""

    @property
    def failed(self) -> bool:
        """What a reviewer must explain: the engine or the source said it did not succeed."""
        return self.verdict in FAILED


# Frame dtypes by field type: numbers stay numeric (a missing one is NA or NaN); text and optional flags keep
# Python objects, None for missing.
_DTYPES = {
    "int": "int64",
    "bool": "bool",
    "float": "float64",
    "int | None": "Int64",
    "float | None": "float64",
}
# Columns the table's frame adds to the record fields: the "failed first" sort key.
DERIVED_COLUMNS = ("failed_rank",)
ROW_FIELDS = tuple(f.name for f in fields(TriageRow))


@dataclass(eq=True)
class TriageTable:
    """Every task of a run (or the tasks a filter kept, in its order), with the metric configuration
    whose SSR/EAR fill the rows. Pickled column by column (the app's cache stores it; a list of row
    objects unpickles ~10x slower); its frame is built once per table and never pickled."""

    run: str
    """The run."""
    metric_config: tuple[str, str, str] | None
    """(gold set, judge config, preset) of the SSR/EAR columns; None when the run has no metrics."""
    rows: list[TriageRow]
    """One row per task, by task id (after `apply_filter`: the filter's rows in its sort order)."""
    _frame: pd.DataFrame | None = field(default=None, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.rows)

    def __getstate__(self) -> dict:
        columns = [[getattr(r, name) for r in self.rows] for name in ROW_FIELDS]
        return {"run": self.run, "metric_config": self.metric_config, "columns": columns}

    def __setstate__(self, state: dict) -> None:
        self.run, self.metric_config = state["run"], state["metric_config"]
        self.rows = [TriageRow(*values) for values in zip(*state["columns"], strict=True)]
        self._frame = None

    @property
    def empty(self) -> bool:
        return not self.rows

    def task_ids(self) -> list[int]:
        """The task ids in row order."""
        return [r.task_id for r in self.rows]

    def row(self, task_id: int) -> TriageRow | None:
        """The row of one task, if the table has it."""
        return next((r for r in self.rows if r.task_id == task_id), None)

    def frame(self) -> pd.DataFrame:
        """The rows as a DataFrame, one column per `TriageRow` field in declaration order (text columns
        keep None for missing values) plus `failed_rank` (0 for failed tasks): what the page displays and
        what filtering and sorting work on. Built once and shared: treat it as read-only."""
        if self._frame is None:
            types = {f.name: str(f.type) for f in fields(TriageRow)}
            frame = pd.DataFrame(
                {
                    name: pd.Series(
                        [getattr(r, name) for r in self.rows], dtype=_DTYPES.get(types[name], object)
                    )
                    for name in ROW_FIELDS
                }
            )
            frame["failed_rank"] = pd.Series([0 if r.failed else 1 for r in self.rows], dtype="int64")
            self._frame = frame
        return self._frame

    def take(self, positions: list[int]) -> TriageTable:
        """The same table with the rows at `positions`, in that order."""
        taken = TriageTable(self.run, self.metric_config, [self.rows[i] for i in positions])
        if self._frame is not None:
            taken._frame = self._frame.take(positions).reset_index(drop=True)
        return taken


def triage_table(store: Store, run: str, metric_config: tuple[str, str, str] | None = None) -> TriageTable:
    """One row per task of the run. `metric_config` = (gold set, judge config, preset) picks which
    metrics fill ssr/ear; default: the most recently computed one."""
    if metric_config is None:
        configs = metric_configs(store, run)
        metric_config = (
            (configs[0]["gold_set"], configs[0]["judge_config"], configs[0]["preset"]) if configs else None
        )
    gold_set, judge, preset = metric_config or (None, None, None)
    cur = store.cursor().execute(
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
        problems AS (SELECT task_id, count(*) AS n FROM import_problems WHERE run = $run GROUP BY task_id),
        causes AS ({primary_causes_sql()})
        SELECT v.task_id, k.site_key AS site, k.intent, v.verdict, v.verdict_source,
               k.task_type, k.in_hard_subset AS hard,
               f.failing_evaluators,
               coalesce(e.explanation, e.error,
                        CASE WHEN v.verdict IN ('failure', 'error') THEN NULL END) AS explanation,
               nullif(t.termination, 'none') AS termination, t.n_steps AS steps, g.task_id IS NOT NULL AS has_gold,
               m.ssr, m.ear, coalesce(m.gold_version < cg.version, false) AS metrics_stale,
               coalesce(e.cannot_pass, false) AS cannot_pass,
               coalesce(e.offline_disagrees, false) AS disagrees, l.label,
               coalesce(t.final_answer, r.raw_text) AS answer, t.episode,
               coalesce(p.n, 0) AS problems, c.cause, coalesce(c.by_model, false) AS cause_by_model
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
        LEFT JOIN causes c ON c.task_id = v.task_id
        ORDER BY v.task_id
        """,
        {"run": run, "gold": gold_set, "judge": judge, "preset": preset},
    )
    # The SELECT lists the columns in TriageRow's field order, under the fields' names.
    assert tuple(d[0] for d in cur.description) == ROW_FIELDS
    return TriageTable(run, metric_config, [TriageRow(*values) for values in cur.fetchall()])


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
    causes: tuple[str, ...] = ()  # primary cause codes; NONE: no suggested cause

    def fingerprint(self) -> str:
        """A short stable key: a table keyed by it never applies an old selection to new rows."""
        parts = (self.sites, self.verdicts, self.evaluators, self.terminations, self.has_gold, self.labels,
                 self.text.strip().casefold(), self.sort, self.task_types, self.hard, self.causes)  # fmt: skip
        return hashlib.sha1(repr(parts).encode()).hexdigest()[:12]


def options(table: TriageTable) -> dict[str, list[str]]:
    """The values each filter can take in this run, for the filter widgets."""
    df = table.frame()
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
        "causes": cause_options(df["cause"], df["verdict"].isin(FAILED), NONE),
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


def apply_filter(table: TriageTable, f: TriageFilter) -> TriageTable:
    """The rows matching every set filter, in the filter's sort order (ties keep task order)."""
    df = table.frame()
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
    if f.causes:
        keep &= _isin(df["cause"], f.causes)
    if f.hard == HARD[0]:
        keep &= df["hard"].map(lambda v: v is True).astype(bool)
    elif f.hard == HARD[1]:
        keep &= df["hard"].map(lambda v: v is False).astype(bool)
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
    ordered = df[keep].sort_values(by, ascending=ascending, na_position="last", kind="stable")
    return table.take(ordered.index.tolist())


def counts(table: TriageTable) -> dict[str, int]:
    """Verdict counts of a (filtered) table."""
    found = Counter(r.verdict for r in table.rows)
    return {"tasks": len(table), **{v: found.get(v, 0) for v in VERDICTS}}


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
        causes=tuple(get_all("cause")),
    )  # fmt: skip


def task_neighbours(table: TriageTable, f: TriageFilter, task_id: int) -> tuple[int | None, int | None]:
    """Previous and next failed task around `task_id` in the reviewer's filtered, sorted list."""
    shown = apply_filter(table, f)
    failed = {r.task_id for r in shown.rows if r.failed}
    return neighbours(shown.task_ids(), failed, task_id)


# Sorts whose order follows from the task id and the verdict alone.
VERDICT_ORDERS = ("failed first", "task")


def failed_neighbours(store: Store, run: str, task_id: int, f: TriageFilter) -> tuple[int | None, int | None]:
    """`task_neighbours` of the run's triage table, what Task review's previous/next buttons need. With no
    filter set and a sort in VERDICT_ORDERS, the list is read from the verdicts alone: one query ~5x
    cheaper than the whole triage table, which a Task review opened cold paid for two task ids."""
    if replace(f, sort="failed first", text=f.text.strip()) != TriageFilter() or f.sort not in VERDICT_ORDERS:
        return task_neighbours(triage_table(store, run), f, task_id)
    rows = store.query(
        f"WITH v AS ({verdicts_sql()}) SELECT task_id, verdict FROM v ORDER BY task_id", {"run": run}
    )
    failed = {t for t, verdict in rows if verdict in FAILED}
    ordered = [t for t, _ in rows]
    if f.sort == "failed first":
        ordered = [t for t in ordered if t in failed] + [t for t in ordered if t not in failed]
    return neighbours(ordered, failed, task_id)
