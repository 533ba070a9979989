"""The worker side of a WebArena-Verified run import: read one task directory, parse its trace once into
`network_events` rows and the engine's entries, score it.

Kept apart from `core.ingest.wav_run` (the parent side: the database, the final transaction) so that a
worker process loads the parsers and the engine, never DuckDB: the fork server imports this module
(core.files.parallel.SCORING_MODULES).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
from pydantic import BaseModel

from core.errors import InputError, Problem
from core.files import safe_files
from core.files.har import TRACE_FILES, TraceTooLarge, gc_paused, parse_trace
from core.files.network_events import FIELD_LIMIT
from core.files.submission import AGENT_RESPONSE_FILE
from core.scoring.agent_response import AgentResponseCheck, check_agent_response
from core.scoring.engine import ScoringInput, score_chunk


class TaskRead(BaseModel):
    """One task directory after reading: what gets stored and scored."""

    model_config = {"arbitrary_types_allowed": True}

    task_id: int
    response: AgentResponseCheck | None = None
    events: Any = None  # pa.Table while the task is read; a ShippedTable once it is (`events_table`)
    scoring_entries: list[Any] | None = None
    scoring_seqs: list[int] | None = None
    # A trace file our parser refused: the engine reads it itself, so its verdict stays its own.
    trace_path: Path | None = None
    scorable: bool = False


# -- one task --------------------------------------------------------------------------------------
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


def _read_task(run: str, task_dir: Path, task_id: int, problems: list[Problem]) -> TaskRead:
    response = _read_response(task_dir, task_id, problems)
    task = TaskRead(task_id=task_id, response=response)
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


def read_and_score_chunk(
    run: str, config_json: str | None, chunk: list[tuple[int, str]]
) -> list[tuple[TaskRead, list[Problem], Any]]:
    """Worker side: read each task directory, parse its trace once, score it (if `config_json`).

    The cyclic GC stays paused for the whole task: re-enabled while the parsed trace is alive, the
    allocations of the parse would trigger passes (now and then a full one) that walk it for nothing;
    once the task's trace is dropped it is freed by reference counting, and the allocation count that
    triggers a pass is back near where the task started.
    """
    out = []
    for task_id, task_dir in chunk:
        with gc_paused():
            out.append(_read_and_score(run, config_json, task_id, task_dir))
    return out


def _read_and_score(run: str, config_json: str | None, task_id: int, task_dir: str) -> tuple:
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
    has_rows = task.events is not None and task.events.num_rows
    task.events = ShippedTable(task.events) if has_rows else None
    return task, problems, task_score


class ShippedTable:
    """A task's `network_events` rows on their way back to the parent.

    Pickled (a worker's result crossing to the parent) they travel as one Arrow IPC stream, about a fifth
    of the table's own pickling to write and a third of its unpickling, which the parent does per task.
    In one process (`--workers 1`, or chunks a broken pool left) nothing is pickled and the table is not
    copied: a copy of a large trace's rows would add their size to the import's peak memory."""

    __slots__ = ("table",)

    def __init__(self, table: pa.Table):
        self.table = table

    def __reduce__(self) -> tuple:
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, self.table.schema) as stream:
            stream.write_table(self.table)
        return _from_ipc, (sink.getvalue().to_pybytes(),)


def _from_ipc(data: bytes) -> ShippedTable:
    return ShippedTable(pa.ipc.open_stream(data).read_all())


def events_table(task: TaskRead) -> pa.Table | None:
    """The task's `network_events` rows as the worker sent them (None for none)."""
    return None if task.events is None else task.events.table
