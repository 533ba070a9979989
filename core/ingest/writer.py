"""The run writer every importer shares: atomic replacement of a run, its problems and trajectory rows.

The records it writes are the run model of `core.ingest.records`."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from functools import partial
from typing import Any

import duckdb
import orjson
import pyarrow as pa

from core.errors import InputError, Problem
from core.ingest.records import RunMeta, TrajectoryRecord, mark_answers
from core.measure.run_summaries import refresh_run_summary
from core.search import index as search_index
from core.store import Store, insert_rows, one_thread, rows_table, utcnow, valid_row

# Tables whose rows belong to one run: replacing a run clears all of them.
RUN_TABLES = (
    "import_problems", "agent_responses", "network_events", "evaluations", "evaluator_results",
    "trajectories", "steps", "observations", "alignments", "alignment_steps", "metrics", "failure_causes",
    "run_summaries",
)  # fmt: skip


def replace_run(cur: duckdb.DuckDBPyConnection, meta: RunMeta, imported_at: datetime | None = None) -> None:
    """Inside the caller's transaction: drop every row of the run, then record it anew, stamped
    `imported_at` (now, unless the caller decided it before the transaction)."""
    for table in RUN_TABLES:
        cur.execute(f"DELETE FROM {table} WHERE run = ?", [meta.name])
    cur.execute("DELETE FROM runs WHERE name = ?", [meta.name])
    cur.execute(
        "INSERT INTO runs (name, agent, model, paradigm, source_format, source_path, imported_at, config,"
        " n_tasks, notes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            meta.name, meta.agent, meta.model, meta.paradigm, meta.source_format, meta.source_path,
            imported_at or utcnow(), None if meta.config is None else orjson.dumps(meta.config).decode(), meta.n_tasks,
            meta.notes,
        ],
    )  # fmt: skip


def problem_table(run: str, problems: Iterable[Problem]) -> pa.Table:
    now = utcnow()
    return rows_table([{"run": run, "recorded_at": now, **p.model_dump()} for p in problems])


def trajectory_tables(run: str, trajectories: Sequence[TrajectoryRecord]) -> dict[str, pa.Table]:
    """The trajectories, steps and observations rows of a run, as Arrow tables: built before the
    transaction (with the file closed), inserted inside it."""
    answers = mark_answers(trajectories)
    traj_rows, step_rows, obs_rows = [], [], []
    for t in trajectories:
        traj_rows.append(
            {
                "run": run, "task_id": t.task_id, "episode": t.episode,
                "is_answer": (t.task_id, t.episode) in answers, "n_steps": t.n_steps,
                "final_answer": t.final_answer, "reward": t.reward, "success": t.success,
                "termination": t.termination, "termination_detail": t.termination_detail,
                "plan": None if t.plan is None else orjson.dumps(t.plan).decode(), "goal": t.goal,
                "task_config": None if t.task_config is None else orjson.dumps(t.task_config).decode(),
                "source_path": t.source_path, "started_at": t.started_at, "elapsed_s": t.elapsed_s,
                "answer_only": t.answer_only, "final_url": t.final_url,
            }
        )  # fmt: skip
        for s in t.steps:
            a = s.action
            step_rows.append(
                {
                    "run": run, "task_id": t.task_id, "episode": t.episode, "idx": s.idx, "url": s.url,
                    "thought": s.thought, "stated_action": s.stated_action,
                    "executed_action": s.executed_action,
                    "verb": a.verb if a else None, "element_id": a.element_id if a else None,
                    "element_role": a.element_role if a else None,
                    "element_label": a.element_label if a else None, "value": a.value if a else None,
                    "key": a.key if a else None, "direction": a.direction if a else None,
                    "target_url": a.target_url if a else None, "answer": a.answer if a else None,
                    "readable": s.readable, "error": s.error, "kind": s.kind, "outcome": s.outcome,
                    "outcome_image": s.outcome_image, "started_at": s.started_at,
                    "elapsed_s": s.elapsed_s, "screenshot_path": s.screenshot_path,
                }
            )  # fmt: skip
            for kind, content in s.observations.items():
                if content:
                    obs_rows.append(
                        {"run": run, "task_id": t.task_id, "episode": t.episode, "idx": s.idx, "kind": kind,
                         "content": content}
                    )  # fmt: skip
    return {"trajectories": rows_table(traj_rows), "steps": rows_table(step_rows),
            "observations": rows_table(obs_rows)}  # fmt: skip


def source_verdict_rows(
    run: str, trajectories: Sequence[TrajectoryRecord], source: str
) -> list[dict[str, Any]]:
    """`evaluations` rows from the source's own verdict (its reward or log) for each task's answer
    attempt, where the source gives one; scoring with the official engine, when possible, replaces them."""
    answers = mark_answers(trajectories)
    now = utcnow()
    return [
        {"run": run, "task_id": t.task_id, "status": "success" if t.success else "failure",
         "score": 1.0 if t.success else 0.0, "source": source, "evaluated_at": now}
        for t in trajectories
        if t.success is not None and (t.task_id, t.episode) in answers
    ]  # fmt: skip


# The columns of a failed task the CLI lists after an import (core.cli.ui.print_failures).
FAILURE_FIELDS = frozenset({"task_id", "status", "explanation", "error", "cannot_pass"})


def sort_failures(failures: list[dict]) -> list[dict]:
    """Failed tasks in the order `core.queries.overview.failed_tasks` lists them (`ORDER BY cannot_pass,
    status DESC, task_id`), for an importer that lists them from the rows it wrote, not read back."""
    by_task = sorted(failures, key=lambda f: f["task_id"])
    by_status = sorted(by_task, key=lambda f: f["status"], reverse=True)  # stable: task order kept
    # Text as stored (the list is the one `failed_tasks` reads back): a lone surrogate from an agent's answer
    # kept as its escape. Printing no longer depends on it (core.cli.ui.EscapingStream escapes any text).
    return [valid_row(f) for f in sorted(by_status, key=lambda f: f["cannot_pass"])]


def import_run(
    store: Store,
    meta: RunMeta,
    trajectories: Sequence[TrajectoryRecord] = (),
    problems: Sequence[Problem] = (),
    extra_writes: Iterable = (),
    network_events: pa.Table | None = None,
) -> None:
    """Write a whole run atomically: replace it, then its trajectories, problems, network events (an
    Arrow table of `network_events` rows) and any extra writes; then index it for search.

    `extra_writes` are callables `f(cur)` for other format-specific tables. Runs without network traces
    are evaluated offline with WebArena's evaluators (core.scoring.offline; well under a second for 812
    tasks) before the transaction, and their rows land in it. The transaction only writes: rows are Arrow
    tables built beforehand, so a `ShortLivedStore` holds the file for the writing alone. The search index
    is built after the commit from what was written (core.search.index.index_written): it never reopens
    the file.
    """
    try:
        gen, rows = _write_run(store, meta, trajectories, problems, extra_writes, network_events)
    except (duckdb.ConversionException, duckdb.OutOfRangeException, duckdb.InvalidInputException) as exc:
        # A value the database cannot hold that no importer check caught: the transaction is rolled
        # back (nothing half-written) and the user gets the cause in one line, not a traceback.
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(
            meta.source_path or meta.name, f"a value the database cannot hold ({reason})"
        ) from None
    search_index.index_written(store.path, meta.name, gen, rows)  # after the commit (core.search.index)


def _write_run(store, meta, trajectories, problems, extra_writes, network_events):
    from core.scoring.offline import NO_TRACE_FORMATS

    # Everything that can be computed is computed with the file closed: the transaction only writes.
    tables = {
        **trajectory_tables(meta.name, trajectories),
        "import_problems": problem_table(meta.name, problems),
    }
    if network_events is not None:
        tables["network_events"] = network_events
    # What the search index takes from this import, so it need not read the run back after the commit:
    # the generation (the run's `imported_at`, decided now), the texts and the network URLs.
    imported_at = utcnow()
    rows = search_index.written_rows(tables, network_events)
    writes = list(extra_writes)
    if meta.source_format in NO_TRACE_FORMATS and trajectories:
        from core.scoring.offline.run import evaluate_trajectories, write_evaluated

        answers = mark_answers(trajectories)
        offline = evaluate_trajectories(store, [t for t in trajectories if (t.task_id, t.episode) in answers])
        writes.append(partial(write_evaluated, run=meta.name, results=offline))
    # A run's rows are written into the file at the commit, not logged first and copied at the close.
    with store.transaction(checkpoint=True) as cur:
        replace_run(cur, meta, imported_at)
        for table, data in tables.items():
            if table == "network_events":
                with one_thread(cur):
                    insert_rows(cur, table, data)
            else:
                insert_rows(cur, table, data)
        for write in writes:
            write(cur)
        refresh_run_summary(cur, meta.name)
        # The tasks' sites, read here in one short query rather than in a read before the transaction:
        # every importer ends in this transaction, but not every one reads the file before it.
        rows["sites"] = dict(cur.execute("SELECT task_id, sites FROM tasks").fetchall())
    return search_index.generation(meta.name, imported_at), rows
