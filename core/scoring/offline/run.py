"""Offline evaluation of a stored run: load each task's answer attempt and its config, run WebArena's
evaluators (core.scoring.offline.webarena), and store one `evaluator_results` row per evaluator plus the
task's offline status beside the run's own verdict in `evaluations`.

- Config: the one the run recorded (a render header, an OpAgent file: `trajectories.task_config`) when
  it has an `eval`, else the original task config (`original_tasks`); the rows say which
  (`offline-run-config` / `offline-original-config`).
- Answer: the final answer, else the last step's answer text (a render's `Early stop: …`, what the
  harness scored), else none. Last page: `trajectories.final_url`, else the last step's URL (unknown when
  the last step records none: a tool-using agent's transcript names the page only at its start); unknown
  for answer-only trajectories (the agent drove a browser the harness did not record).
- Never touches the run's own verdict (`status`, `score`, `source`); writes `offline_status`,
  `offline_config`, `offline_disagrees`, and the task's sentence in `explanation` (source `offline`)
  for rows whose sentence did not come from the official engine.
An import evaluates before its transaction and writes inside it (the run lands with its offline rows);
`evaluate-offline` reads, evaluates with the file free, then writes in one short transaction.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import duckdb
import orjson

from core.errors import InputError, NotFound
from core.progress import ProgressCallback
from core.scoring.explanations import clip
from core.scoring.offline import NO_TRACE_FORMATS
from core.scoring.offline.webarena import FuzzyAnswer, Outcome, TaskRecord, combined_status, evaluate_task
from core.store import ShortLivedStore, Store, insert_rows

SOURCES = {"run": "offline-run-config", "original": "offline-original-config"}
_SENTENCE_CLIP = 600


@dataclass
class TaskEvaluation:
    task_id: int
    config: str | None  # run | original | None (no config anywhere)
    outcomes: list[Outcome]
    status: str  # success | failure | unresolved
    run_status: str | None  # the run's own verdict, if any
    run_source: str | None

    @property
    def all_decided(self) -> bool:
        return bool(self.outcomes) and all(o.status in ("success", "failure") for o in self.outcomes)

    @property
    def disagrees(self) -> bool | None:
        if self.run_status not in ("success", "failure") or self.status == "unresolved":
            return None
        return self.status != self.run_status


@dataclass
class OfflineSummary:
    run: str
    tasks: int = 0
    statuses: Counter = field(default_factory=Counter)  # offline task status -> tasks
    evaluators: Counter = field(default_factory=Counter)  # (evaluator, status) -> rows
    unresolved_reasons: Counter = field(default_factory=Counter)
    configs: Counter = field(default_factory=Counter)
    explained: int = 0  # verdict rows given a sentence
    results: list[TaskEvaluation] = field(default_factory=list)


def _json(value: Any) -> Any:
    if value is None or not isinstance(value, str):
        return value
    try:
        return orjson.loads(value)
    except orjson.JSONDecodeError:
        return value


def _original_eval(row: dict[str, Any]) -> dict[str, Any] | None:
    if row["o_eval_types"] is None:
        return None
    return {
        "eval_types": list(row["o_eval_types"]), "reference_answers": _json(row["o_reference_answers"]),
        "reference_url": row["o_reference_url"], "program_html": _json(row["o_program_html"]),
        "string_note": row["o_string_note"],
    }  # fmt: skip


def load_task_records(
    cur: duckdb.DuckDBPyConnection, run: str
) -> list[tuple[int, str | None, TaskRecord | None, str | None, str | None]]:
    """(task_id, config source, record, run status, run verdict source) for each task's answer attempt."""
    rows = cur.execute(
        """
        WITH last AS (
            SELECT task_id, episode, arg_max_null(url, idx) AS last_step_url, arg_max(answer, idx) AS last_answer
            FROM steps WHERE run = ? GROUP BY task_id, episode)
        SELECT t.task_id, t.final_answer, t.task_config, t.final_url, t.answer_only, l.last_step_url,
               l.last_answer, o.intent AS o_intent, o.eval_types AS o_eval_types,
               o.reference_answers AS o_reference_answers, o.reference_url AS o_reference_url,
               o.program_html AS o_program_html, o.string_note AS o_string_note,
               e.status AS run_status, e.source AS run_source
        FROM trajectories t
        LEFT JOIN last l ON l.task_id = t.task_id AND l.episode = t.episode
        LEFT JOIN original_tasks o ON o.task_id = t.task_id
        LEFT JOIN evaluations e ON e.run = t.run AND e.task_id = t.task_id
        WHERE t.run = ? AND t.is_answer ORDER BY t.task_id
        """,
        [run, run],
    )
    names = [d[0] for d in cur.description]
    out = []
    for values in rows.fetchall():
        row = dict(zip(names, values, strict=True))
        out.append((row["task_id"], *_record(row), row["run_status"], row["run_source"]))
    return out


def read_originals(cur: duckdb.DuckDBPyConnection) -> dict[int, dict[str, Any]]:
    """The original WebArena config of every task, as `records_from_trajectories` takes it."""
    originals = cur.execute(
        "SELECT task_id, intent AS o_intent, eval_types AS o_eval_types, reference_answers AS o_reference_answers,"
        " reference_url AS o_reference_url, program_html AS o_program_html, string_note AS o_string_note"
        " FROM original_tasks"
    )
    names = [d[0] for d in originals.description]
    return {row[0]: dict(zip(names[1:], row[1:], strict=True)) for row in originals.fetchall()}


_ORIGINAL_FIELDS = ("o_intent", "o_eval_types", "o_reference_answers", "o_reference_url", "o_program_html",
                    "o_string_note")  # fmt: skip


def records_from_trajectories(
    originals: dict[int, dict[str, Any]], trajectories: Sequence[Any]
) -> list[tuple[int, str | None, TaskRecord | None, str | None, str | None]]:
    """The same records as `load_task_records`, built from a run's in-memory answer trajectories (each
    task's `TrajectoryRecord` the importer marked as its answer), without the run's verdicts (an importer
    has not written them yet: `write_evaluated` adds them)."""
    out = []
    for t in sorted(trajectories, key=lambda t: t.task_id):
        last = t.steps[-1] if t.steps else None
        row = {
            "task_config": t.task_config, "final_answer": t.final_answer, "final_url": t.final_url,
            "answer_only": t.answer_only, "last_step_url": last.url if last else None,
            "last_answer": last.action.answer if last and last.action else None,
            **originals.get(t.task_id, dict.fromkeys(_ORIGINAL_FIELDS)),
        }  # fmt: skip
        out.append((t.task_id, *_record(row), None, None))
    return out


def _record(row: dict[str, Any]) -> tuple[str | None, TaskRecord | None]:
    """(config source, record) of one task's answer attempt."""
    config = _json(row["task_config"])
    eval_config = config.get("eval") if isinstance(config, dict) else None
    source = "run"
    intent = config.get("intent") if isinstance(config, dict) else None
    if not isinstance(eval_config, dict) or not eval_config.get("eval_types"):
        eval_config, source, intent = _original_eval(row), "original", row["o_intent"]
    if eval_config is None:
        return None, None
    answer = row["final_answer"] if row["final_answer"] is not None else row["last_answer"]
    last_url = None if row["answer_only"] else (row["final_url"] or row["last_step_url"])
    return source, TaskRecord(eval_config, str(intent or ""), answer, last_url)


def evaluate_records(
    records: Sequence[tuple[int, str | None, TaskRecord | None, str | None, str | None]],
    fuzzy: FuzzyAnswer | None = None,
    on_progress: ProgressCallback | None = None,
) -> list[TaskEvaluation]:
    results = []
    for done, (task_id, source, record, run_status, run_source) in enumerate(records):
        if on_progress and done % 100 == 0:
            on_progress(done, len(records))
        if record is None:
            missing = Outcome("config", "error", explanation="no task config (neither recorded by the run "
                              "nor in the original dataset): cannot be evaluated offline", error="no task config")  # fmt: skip
            results.append(TaskEvaluation(task_id, None, [missing], "unresolved", run_status, run_source))
            continue
        outcomes = evaluate_task(record, fuzzy) if fuzzy else evaluate_task(record)
        results.append(
            TaskEvaluation(task_id, source, outcomes, combined_status(outcomes), run_status, run_source)
        )
    if on_progress:
        on_progress(len(records), len(records))
    return results


def task_explanation(result: TaskEvaluation) -> str | None:
    """One sentence for the run's verdict row: why it failed, or where offline disagrees with it."""
    failing = [o.explanation for o in result.outcomes if o.status == "failure" and o.explanation]
    open_ = [o.explanation for o in result.outcomes if o.status in ("unresolved", "error") and o.explanation]
    passed = [o.passed for o in result.outcomes if o.status == "success" and o.passed]
    if result.run_status == "success":
        if result.status != "failure":
            return None
        text = "the run's own verdict is success, but re-checked offline: " + "; ".join(failing)
    elif result.status == "success":
        text = (
            "the run's own verdict is failure, but re-checked offline every evaluator passes: "
            + "; ".join(passed)
        )
    else:
        text = "; ".join(failing or open_) or "failed without a reason the offline evaluators can give"
    return clip(text, _SENTENCE_CLIP)


def write_results(cur: duckdb.DuckDBPyConnection, run: str, results: Sequence[TaskEvaluation]) -> int:
    """Replace the run's offline rows; annotate its verdict rows. Returns verdict rows given a sentence."""
    rows = []
    for r in results:
        for idx, o in enumerate(r.outcomes):
            rows.append(
                {
                    "run": run, "task_id": r.task_id, "idx": idx, "evaluator": o.evaluator, "status": o.status,
                    "score": o.score, "assertions": _dump(o.assertions), "expected": _dump(o.expected),
                    "actual": _dump(o.actual), "expected_normalized": _dump(o.expected_normalized),
                    "actual_normalized": _dump(o.actual_normalized), "error": o.error,
                    "explanation": o.explanation if o.status != "success" else None,
                    "source": SOURCES.get(r.config or "", "offline-no-config"),
                    "unresolved_reason": o.unresolved_reason,
                }
            )  # fmt: skip
    cur.execute("DELETE FROM evaluator_results WHERE run = ? AND source LIKE 'offline%'", [run])
    insert_rows(cur, "evaluator_results", rows)
    updates = [
        {"task_id": r.task_id, "offline_status": r.status, "offline_config": r.config,
         "offline_disagrees": bool(r.disagrees), "sentence": task_explanation(r)}
        for r in results if r.run_status is not None
    ]  # fmt: skip
    if not updates:
        return 0
    import pyarrow as pa

    view = "_offline_updates"
    cur.register(view, pa.Table.from_pylist(updates))
    try:
        cur.execute(
            f"""UPDATE evaluations e SET offline_status = u.offline_status, offline_config = u.offline_config,
                    offline_disagrees = u.offline_disagrees
                FROM {view} u WHERE e.run = ? AND e.task_id = u.task_id""",
            [run],
        )
        # The sentence only where the official engine did not write one.
        cur.execute(
            f"""UPDATE evaluations e SET explanation = u.sentence, explanation_source = 'offline'
                FROM {view} u
                WHERE e.run = ? AND e.task_id = u.task_id AND e.source <> 'webarena-verified'
                  AND (e.explanation IS NULL OR e.explanation_source = 'offline')""",
            [run],
        )
    finally:
        cur.unregister(view)
    return sum(1 for u in updates if u["sentence"])


def _dump(value: Any) -> str | None:
    return None if value is None else orjson.dumps(value, default=str).decode()


def evaluate_trajectories(
    store: Store | ShortLivedStore, trajectories: Sequence[Any]
) -> list[TaskEvaluation]:
    """An importer's offline evaluation, before its transaction: each answer trajectory against its
    recorded or original config (one short read of `original_tasks`; the rest runs with the file free)."""
    with store.reading() as cur:
        originals = read_originals(cur)
    return evaluate_records(records_from_trajectories(originals, trajectories))


def write_evaluated(
    cur: duckdb.DuckDBPyConnection, run: str, results: Sequence[TaskEvaluation]
) -> OfflineSummary:
    """Inside an importer's transaction, after it wrote the run's own verdicts: compare with them and
    write the offline rows."""
    verdicts = {t: (status, source) for t, status, source in cur.execute(
        "SELECT task_id, status, source FROM evaluations WHERE run = ?", [run]).fetchall()}  # fmt: skip
    judged = [replace(r, run_status=verdicts.get(r.task_id, (None, None))[0],
                      run_source=verdicts.get(r.task_id, (None, None))[1]) for r in results]  # fmt: skip
    return _summary(run, judged, write_results(cur, run, judged))


def _summary(run: str, results: list[TaskEvaluation], explained: int) -> OfflineSummary:
    summary = OfflineSummary(run=run, tasks=len(results), results=results, explained=explained)
    for r in results:
        summary.statuses[r.status] += 1
        summary.configs[r.config or "none"] += 1
        for o in r.outcomes:
            summary.evaluators[(o.evaluator, o.status)] += 1
            if o.unresolved_reason:
                summary.unresolved_reasons[o.unresolved_reason] += 1
    return summary


def evaluate_run_offline(
    store: Store | ShortLivedStore, run: str, *, fuzzy_judge: Any = None,
    on_progress: ProgressCallback | None = None,
) -> OfflineSummary:  # fmt: skip
    """`trajreview evaluate-offline`: re-run the offline evaluators of a stored run and replace its offline
    rows in one transaction. The records are read first and evaluated with the file free (a
    `ShortLivedStore` holds it only for that read and the final write). With a `FuzzyJudge`
    (core.scoring.offline.fuzzy), fuzzy_match and the N/A rule are asked to the LLM first."""
    found = store.query("SELECT source_format FROM runs WHERE name = ?", [run])
    if not found:
        raise NotFound("run", run, hint="import it first")
    if found[0][0] not in NO_TRACE_FORMATS:
        raise InputError(
            "--run",
            f"{run!r} ({found[0][0]}) has network traces: score it with `trajreview evaluate --run {run}`",
        )
    with store.reading() as cur:
        records = load_task_records(cur, run)
    fuzzy = None
    if fuzzy_judge is not None:
        fuzzy = fuzzy_judge.prefetch([r for _, _, r, _, _ in records if r is not None])
    results = evaluate_records(records, fuzzy, on_progress)
    with store.transaction() as cur:
        return _summary(run, results, write_results(cur, run, results))
