"""Official scores in the database: the one writer of `evaluations` and `evaluator_results`
(`write_scores`, at `import wav-run` and `evaluate`), the re-scoring of a stored run (`evaluate_run`) and
the export in the official CLI's shapes (`export_eval`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from core.errors import InputError, NotFound
from core.files.har import TRACE_FILES
from core.files.submission import run_directory
from core.progress import ProgressCallback
from core.scoring.engine import ScoringInput, score_inputs
from core.scoring.score_rows import SOURCE, TaskScore, json_text

if TYPE_CHECKING:
    from core.store import ShortLivedStore, Store


def write_scores(cur, run: str, scores: Sequence[TaskScore]) -> None:
    """Replace the run's evaluations and evaluator results, and its summary (inside the caller's
    transaction)."""
    from core.measure.run_summaries import refresh_run_summary
    from core.store import insert_rows, utcnow

    cur.execute("DELETE FROM evaluator_results WHERE run = ?", [run])
    cur.execute("DELETE FROM evaluations WHERE run = ?", [run])
    now = utcnow()
    task_rows, evaluator_rows = [], []
    for s in scores:
        row = s.model_dump(exclude={"evaluator_results", "eval_result"})
        task_rows.append({"run": run, **row, "eval_result": json_text(s.eval_result), "evaluated_at": now})
        evaluator_rows.extend(
            {"run": run, "task_id": s.task_id, **r.model_dump()} for r in s.evaluator_results
        )
    insert_rows(cur, "evaluations", task_rows)
    insert_rows(cur, "evaluator_results", evaluator_rows)
    refresh_run_summary(cur, run)


def evaluate_run(
    store: Store | ShortLivedStore,
    run: str,
    *,
    config: Path | dict | None = None,
    workers: int = 2,
    on_progress: ProgressCallback | None = None,
) -> list[TaskScore]:
    """Re-score a stored run from its agent responses and its original HAR files.

    Traces come from re-reading `runs.source_path` (the stored network events are a redacted view,
    not the engine's input). The config defaults to the run's stored environment config.
    """
    # One open of the file for both reads (a `ShortLivedStore` leaves a turn, `TURN_S`, between two).
    with store.reading() as cur:
        found = cur.execute("SELECT source_path, config FROM runs WHERE name = ?", [run]).fetchall()
        responses = cur.execute(
            "SELECT task_id, raw_text FROM agent_responses WHERE run = ? ORDER BY task_id", [run]
        ).fetchall()
    if not found:
        raise NotFound("run", run)
    source_path, run_config = found[0]
    if config is None and run_config:
        stored = orjson.loads(run_config)
        config = stored if isinstance(stored, dict) and stored.get("environments") else None
    source = Path(source_path)
    if not source.exists():
        raise InputError(source, "run source not found; re-import the run from its new location")
    # A run directory is read in place; a submission .tar.gz is read again the same safe way as at import.
    with run_directory(source) as (root, _):
        # Each scoring process reads its tasks' traces itself (a HAR or a Playwright trace, as at import);
        # a missing or broken one scores as the engine scores it.
        inputs = [
            ScoringInput(task_id=task_id, agent_response=text, har_path=_trace_file(root / str(task_id)))
            for task_id, text in responses
        ]
        scores = score_inputs(inputs, config=config, workers=workers, on_progress=on_progress)
    with store.transaction() as cur:
        write_scores(cur, run, scores)
    return scores


def _trace_file(task_dir: Path) -> Path:
    return next((task_dir / n for n in TRACE_FILES if (task_dir / n).is_file()), task_dir / TRACE_FILES[0])


def export_eval(store: Store, run: str, out: Path) -> int:
    """Write `<out>/<task_id>/eval_result.json` per task and the summary `<out>/eval_results.json`.

    The per-task files are the engine's own results as stored at scoring time; the summary is computed
    by the engine's `TasksEvalResults` (overall and `per_site` buckets), written with its serializer.
    """
    from webarena_verified.core.utils.immutable_obj_helper import serialize_to_json
    from webarena_verified.types.eval import TaskEvalResult, TasksEvalResults

    from core.store import require_runs

    require_runs(store, [run])
    rows = store.query(
        "SELECT task_id, eval_result FROM evaluations WHERE run = ? AND source = ? AND eval_result IS NOT NULL"
        " ORDER BY task_id",
        [run, SOURCE],
    )
    if not rows:
        raise InputError(run, "no official evaluations stored; run `trajreview evaluate --run` first")
    if out.exists() and not out.is_dir():
        raise InputError(out, "exists and is not a directory")
    results = [(task_id, orjson.loads(text)) for task_id, text in rows]
    # Validate everything before writing anything.
    models = [TaskEvalResult.model_validate(result) for _, result in results]
    data_checksum = results[0][1].get("webarena_verified_data_checksum", "")
    summary = TasksEvalResults.create(task_results=models, data_checksum=data_checksum)
    for task_id, result in results:
        task_dir = out / str(task_id)
        task_dir.mkdir(parents=True, exist_ok=True)
        (task_dir / "eval_result.json").write_text(serialize_to_json(result, indent=2))
    (out / "eval_results.json").write_text(
        serialize_to_json(
            summary.model_dump(mode="json", exclude_none=True, exclude={"task_results"}), indent=2
        )
    )
    return len(results)
