"""Import a WebArena-Verified run: agent responses, network traces, and the official scores.

Sources: a run directory in the official layout (`<task_id>/agent_response.json` plus
`<task_id>/network.har`, or a Playwright trace: `trace.zip` / `trace.network`; optional top-level
`run_config.json`) or a submission `.tar.gz` made by `webarena-verified create-submission-pkg`
(`summary.json` and the same `<task_id>/` folders at its root). Each trace is parsed once; the parsed
entries feed both `network_events` and the engine. The whole run is written in one transaction.
"""

from __future__ import annotations

import importlib
import os
import threading
from functools import partial
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
from pydantic import BaseModel, Field

from core.errors import InputError, Problem
from core.files import safe_files
from core.files.har import TRACE_FILES, TraceTooLarge, parse_trace
from core.files.network_events import FIELD_LIMIT, NETWORK_EVENTS_SCHEMA
from core.files.parallel import SCORING_MODULES, WorkerPool
from core.files.submission import AGENT_RESPONSE_FILE, run_directory
from core.ingest.records import Paradigm, RunMeta
from core.ingest.tasks import ensure_tasks
from core.ingest.writer import import_run
from core.progress import ProgressCallback
from core.scoring.agent_response import AgentResponseCheck, agent_response_row, check_agent_response
from core.scoring.engine import (
    ScoringInput,
    check_config,
    read_config,
    score_chunk,
    write_scores,
)
from core.store import Store, insert_rows

SOURCE_FORMAT = "wav-run"
RUN_CONFIG_FILE = "run_config.json"
_REDACTED = "[REDACTED]"


class WavImportSummary(BaseModel):
    run: str
    n_tasks: int  # task directories imported (known ids)
    n_events: int
    n_scored: int
    statuses: dict[str, int] = Field(default_factory=dict)
    problems: list[Problem] = Field(default_factory=list)


class _Task(BaseModel):
    """One task directory after reading: what gets stored and scored."""

    model_config = {"arbitrary_types_allowed": True}

    task_id: int
    response: AgentResponseCheck | None = None
    events: Any = None  # pa.Table
    scoring_entries: list[Any] | None = None
    scoring_seqs: list[int] | None = None
    # A trace file our parser refused: the engine reads it itself, so its verdict stays its own.
    trace_path: Path | None = None
    scorable: bool = False


# Tasks per worker job: small enough for a smooth progress bar, large enough to amortise pickling.
_TASKS_PER_CHUNK = 8


# -- source handling -------------------------------------------------------------------------------
def _redact_config(value: Any) -> Any:
    """Environment credentials are secrets: keep the keys (the engine validates them), hide the values."""
    if isinstance(value, dict):
        return {
            k: (
                {c: _REDACTED for c in v} if k == "credentials" and isinstance(v, dict) else _redact_config(v)
            )
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_redact_config(v) for v in value]
    return value


def _read_config(path: Path | None, run_dir: Path) -> tuple[dict | None, Path | None]:
    """The environment config to score with (--config wins over the run's run_config.json) and its file.

    Returned as the user wrote it (stored, redacted, on `runs.config`), not in the engine's normalised
    form; a config the engine rejects is a whole-file error before any work (`check_config`)."""
    source = path if path is not None else run_dir / RUN_CONFIG_FILE
    if path is None and not os.path.lexists(source):
        return None, None
    # A run's own config must be a regular file inside it; --config is the user's own file.
    data = safe_files.read_bytes(source, "run config", root=run_dir if path is None else None)
    read_config(source)  # one-line InputError naming the file when it is not a JSON object
    return orjson.loads(data), source


# -- per task --------------------------------------------------------------------------------------
def _read_response(task_dir: Path, task_id: int, problems: list[Problem]) -> AgentResponseCheck | None:
    """The checked response; None when the file is refused (a link, a FIFO, too large): not scored."""
    file = task_dir / AGENT_RESPONSE_FILE
    if not os.path.lexists(file):
        problems.append(Problem(task_id=task_id, source_path=str(file), kind="missing_file",
                                message=f"task {task_id}: no {AGENT_RESPONSE_FILE}"))  # fmt: skip
        return check_agent_response(None)
    try:
        data = safe_files.read_bytes(file, "agent response", root=task_dir)
    except InputError as exc:
        problems.append(Problem(task_id=task_id, source_path=str(file), kind="refused_file",
                                message=f"task {task_id}: {AGENT_RESPONSE_FILE} refused: {exc.reason}"))  # fmt: skip
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        problems.append(Problem(task_id=task_id, source_path=str(file), kind="bad_agent_response",
                                message=f"task {task_id}: {AGENT_RESPONSE_FILE} is not UTF-8 ({exc.reason} at byte {exc.start})"))  # fmt: skip
        return check_agent_response(None)
    if not text.strip():
        problems.append(Problem(task_id=task_id, source_path=str(file), kind="empty_agent_response",
                                message=f"task {task_id}: {AGENT_RESPONSE_FILE} is empty"))  # fmt: skip
    return check_agent_response(text)


def _read_task(run: str, task_dir: Path, task_id: int, problems: list[Problem]) -> _Task:
    response = _read_response(task_dir, task_id, problems)
    task = _Task(task_id=task_id, response=response)
    # The engine is handed only what our reader accepted: a refused response or trace is not scored.
    response_ok = response is not None and safe_files.is_regular(task_dir / AGENT_RESPONSE_FILE)
    trace_file = next((task_dir / n for n in TRACE_FILES if os.path.lexists(task_dir / n)), None)
    if trace_file is None:
        problems.append(Problem(task_id=task_id, source_path=str(task_dir), kind="missing_file",
                                message=f"task {task_id}: no network trace ({', '.join(TRACE_FILES)})"))  # fmt: skip
        return task
    try:
        safe_files.check(trace_file, "network trace", root=task_dir)
    except InputError as exc:
        problems.append(Problem(task_id=task_id, source_path=str(trace_file), kind="refused_file",
                                message=f"task {task_id}: {trace_file.name} refused: {exc.reason}"))  # fmt: skip
        return task
    try:
        trace = parse_trace(trace_file, run, task_id)
    except InputError as exc:
        problems.append(Problem(task_id=task_id, source_path=str(trace_file), kind="bad_trace",
                                message=f"task {task_id}: {exc.reason}"))  # fmt: skip
        if not isinstance(exc, TraceTooLarge):  # a zip bomb is not handed on to the engine either
            # Nothing is stored from it, but the official engine still judges the task (as an error,
            # or by its own more lenient reader): an import must give the status evaluate_task gives.
            task.trace_path = trace_file
            task.scorable = response_ok
        return task
    if trace.malformed:
        detail = ", ".join(f"{n} {what}" for what, n in trace.malformed.items())
        problems.append(Problem(task_id=task_id, source_path=str(trace_file), kind="malformed_entries",
                                message=f"task {task_id}: {detail}"))  # fmt: skip
    if trace.truncated:
        detail = ", ".join(f"{n} {what}" for what, n in trace.truncated.items())
        problems.append(Problem(task_id=task_id, source_path=str(trace_file), kind="truncated_values",
                                message=f"task {task_id}: {detail} longer than {FIELD_LIMIT:,} characters "
                                "cut for storage (docs/limits.md); the engine judged the whole values"))  # fmt: skip
    if not trace.events.num_rows:
        problems.append(Problem(task_id=task_id, source_path=str(trace_file), kind="empty_trace",
                                message=f"task {task_id}: the trace has no entries"))  # fmt: skip
    task.events = trace.events
    task.scoring_entries = trace.scoring_entries
    task.scoring_seqs = trace.scoring_seqs
    # A missing or undecodable response is scored as absent only if the file existed (official rule:
    # both files are required for an evaluation).
    task.scorable = response_ok
    return task


def _task_dirs(run_dir: Path, known: set[int], problems: list[Problem]) -> list[tuple[int, Path]]:
    found = []
    for child in sorted(run_dir.iterdir()):
        if not child.is_dir() or child.name.startswith((".", "_")):
            continue
        if child.is_symlink():
            problems.append(Problem(task_id=None, source_path=str(child), kind="unsafe_member",
                                    message=f"{child.name}: symbolic link, skipped"))  # fmt: skip
            continue
        if not child.name.isdigit() or not child.name.isascii():
            problems.append(Problem(task_id=None, source_path=str(child), kind="not_a_task_dir",
                                    message=f"{child.name}: not a task directory (name is not a task id)"))  # fmt: skip
            continue
        task_id = int(child.name)
        if not safe_files.task_id_ok(task_id):
            problems.append(Problem(task_id=None, source_path=str(child), kind="not_a_task_dir",
                                    message=f"{child.name[:40]}: task id out of range"))  # fmt: skip
            continue
        if task_id not in known:
            problems.append(Problem(task_id=task_id, source_path=str(child), kind="unknown_task",
                                    message=f"task {task_id}: not in the tasks table"))  # fmt: skip
            continue
        found.append((task_id, child))
    return found


# -- the import ------------------------------------------------------------------------------------
def import_wav_run(
    store: Store,
    path: Path | str,
    run: str,
    *,
    config: Path | str | None = None,
    agent: str | None = None,
    model: str | None = None,
    paradigm: Paradigm = "unknown",
    score: bool = True,
    workers: int = 2,
    on_progress: ProgressCallback | None = None,
) -> WavImportSummary:
    """Import (or atomically replace) run `run` from a run directory or a submission .tar.gz."""
    path = Path(path)
    if not run.strip():
        raise InputError("--run", "must not be empty")
    # The workers start now: the fork server's imports (the engine) overlap what this process reads.
    with WorkerPool(workers, preload=SCORING_MODULES) as pool, run_directory(path) as (run_dir, problems):
        ensure_tasks(store)
        known = {task_id for (task_id,) in store.query("SELECT task_id FROM tasks")}
        progress = on_progress or (lambda done, total: None)
        config_json, config_file = _read_config(Path(config) if config is not None else None, run_dir)
        dirs = _task_dirs(run_dir, known, problems)
        if not dirs and not problems:
            raise InputError(path, "no task directories (<task_id>/agent_response.json and network.har)")
        # pyarrow imports pandas on its first conversion of Python values (half a second): done now,
        # while the workers start, not on the way to the final transaction.
        threading.Thread(target=importlib.import_module, args=("pandas",), daemon=True).start()
        engine_config = read_config(config_json) if score else None
        if engine_config is not None and config_file is not None:
            check_config(pool, engine_config, config_file)
        # Each worker reads, parses and scores its tasks: a trace is read once, in the process that
        # scores it, and only compact results (Arrow tables, rows) travel back.
        work = partial(_read_and_score_chunk, run, engine_config)
        outcomes = pool.map_chunks(work, [(task_id, str(task_dir)) for task_id, task_dir in dirs],
                                   chunk_size=_TASKS_PER_CHUNK, total=len(dirs), on_progress=progress)  # fmt: skip
        tasks: list[_Task] = []
        scores: list = []
        for task, task_problems, task_score in outcomes:
            tasks.append(task)
            problems.extend(task_problems)
            if task_score is not None:
                scores.append(task_score)

    events = [t.events for t in tasks if t.events is not None and t.events.num_rows]
    event_table = pa.concat_tables(events) if events else NETWORK_EVENTS_SCHEMA.empty_table()
    response_rows = [agent_response_row(run, t.task_id, t.response) for t in tasks if t.response is not None]
    meta = RunMeta(
        name=run, source_format=SOURCE_FORMAT, source_path=str(path), agent=agent, model=model,
        paradigm=paradigm, config=None if config_json is None else _redact_config(config_json),
        n_tasks=len(tasks),
    )  # fmt: skip
    writes = [
        lambda cur: insert_rows(cur, "network_events", event_table),
        lambda cur: insert_rows(cur, "agent_responses", response_rows),
    ]
    if scores:
        writes.append(lambda cur: write_scores(cur, run, scores))
    import_run(store, meta, problems=problems, extra_writes=writes)
    statuses: dict[str, int] = {}
    for s in scores:
        statuses[s.status] = statuses.get(s.status, 0) + 1
    return WavImportSummary(
        run=run, n_tasks=len(tasks), n_events=event_table.num_rows, n_scored=len(scores),
        statuses=statuses, problems=problems,
    )  # fmt: skip


def _read_and_score_chunk(
    run: str, config_json: str | None, chunk: list[tuple[int, str]]
) -> list[tuple[_Task, list[Problem], Any]]:
    """Worker side: read each task directory, parse its trace once, score it (if `config_json`)."""
    out = []
    for task_id, task_dir in chunk:
        problems: list[Problem] = []
        task = _read_task(run, Path(task_dir), task_id, problems)
        task_score = None
        # An empty trace is still scored: the engine reports the error itself.
        if config_json is not None and task.scorable:
            response: str | Path | None = task.response.raw_text if task.response else None
            if response is None:  # present but not UTF-8: the engine reads (and rejects) it itself
                response = Path(task_dir) / AGENT_RESPONSE_FILE
            # model_construct: the entries come from our own parser; re-validating them is waste.
            item = ScoringInput.model_construct(
                task_id=task_id, agent_response=response, har_entries=task.scoring_entries or [],
                har_path=task.trace_path, event_seqs=task.scoring_seqs,
            )  # fmt: skip
            task_score = score_chunk(config_json, [item])[0]
        # The engine's copy of the trace stays here; only the stored rows go back to the parent.
        task.scoring_entries = task.scoring_seqs = None
        task.trace_path = None
        out.append((task, problems, task_score))
    return out
