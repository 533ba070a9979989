"""Import a WebArena-Verified run: agent responses, network traces, and the official scores.

Sources: a run directory in the official layout (`<task_id>/agent_response.json` plus
`<task_id>/network.har`, or a Playwright trace: `trace.zip` / `trace.network`; optional top-level
`run_config.json`) or a submission `.tar.gz` made by `webarena-verified create-submission-pkg`
(`summary.json` and the same `<task_id>/` folders at its root). Each trace is parsed once; the parsed
entries feed both `network_events` and the engine. The whole run is written in one transaction.
"""

from __future__ import annotations

import os
from functools import partial
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
from pydantic import BaseModel, Field

from core.errors import InputError, Problem
from core.files import safe_files
from core.files.network_events import NETWORK_EVENTS_SCHEMA
from core.files.parallel import (
    SCORING_MODULES,
    WorkerPool,
    arrow_without_pandas,
    release_free_memory,
    tasks_per_chunk,
)
from core.files.submission import run_directory
from core.ingest.records import Paradigm, RunMeta
from core.ingest.tasks import known_task_ids
from core.ingest.wav_tasks import TaskRead, events_table, read_and_score_chunk
from core.ingest.writer import FAILURE_FIELDS, import_run, sort_failures
from core.progress import ProgressCallback
from core.scoring.agent_response import agent_response_row
from core.scoring.engine import check_config, read_config
from core.scoring.stored_scores import write_scores
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
    # The failed or errored tasks as `core.queries.overview.failed_tasks` lists them (bar `site_key`).
    failures: list[dict] = Field(default_factory=list)


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
    with WorkerPool(workers, preload=SCORING_MODULES, initializer=arrow_without_pandas) as pool:
        # The file's first open (creating and migrating it, or failing in one line) comes before anything
        # is read from the run, a submission's extraction included (core.cli.ui.import_store, reads_first).
        known = known_task_ids(store)
        with run_directory(path) as (run_dir, problems):
            progress = on_progress or (lambda done, total: None)
            config_json, config_file = _read_config(Path(config) if config is not None else None, run_dir)
            dirs = _task_dirs(run_dir, known, problems)
            if not dirs and not problems:
                raise InputError(path, "no task directories (<task_id>/agent_response.json and network.har)")
            engine_config = read_config(config_json) if score else None
            if engine_config is not None and config_file is not None:
                check_config(pool, engine_config, config_file)
            # Each worker reads, parses and scores its tasks: a trace is read once, in the process that
            # scores it, and only compact results (Arrow tables, rows) travel back.
            work = partial(read_and_score_chunk, run, engine_config)
            outcomes = pool.map_chunks(work, [(task_id, str(task_dir)) for task_id, task_dir in dirs],
                                       chunk_size=tasks_per_chunk(len(dirs), workers), total=len(dirs), on_progress=progress)  # fmt: skip
            tasks: list[TaskRead] = []
            scores: list = []
            for task, task_problems, task_score in outcomes:
                tasks.append(task)
                problems.extend(task_problems)
                if task_score is not None:
                    scores.append(task_score)

    release_free_memory()  # what parsing freed goes back before the insert allocates (peak RSS)
    events = [table for table in map(events_table, tasks) if table is not None]
    event_table = pa.concat_tables(events) if events else NETWORK_EVENTS_SCHEMA.empty_table()
    response_rows = [agent_response_row(run, t.task_id, t.response) for t in tasks if t.response is not None]
    meta = RunMeta(
        name=run, source_format=SOURCE_FORMAT, source_path=str(path), agent=agent, model=model,
        paradigm=paradigm, config=None if config_json is None else _redact_config(config_json),
        n_tasks=len(tasks),
    )  # fmt: skip
    writes = [lambda cur: insert_rows(cur, "agent_responses", response_rows)]
    if scores:
        writes.append(lambda cur: write_scores(cur, run, scores))
    import_run(store, meta, problems=problems, extra_writes=writes, network_events=event_table)
    statuses: dict[str, int] = {}
    for s in scores:
        statuses[s.status] = statuses.get(s.status, 0) + 1
    # The run's evaluations are exactly these scores: the failure listing needs no read after the commit.
    failures = [s.model_dump(include=FAILURE_FIELDS) for s in scores if s.status != "success"]
    return WavImportSummary(
        run=run, n_tasks=len(tasks), n_events=event_table.num_rows, n_scored=len(scores),
        statuses=statuses, problems=problems, failures=sort_failures(failures),
    )  # fmt: skip
