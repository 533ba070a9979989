"""What every run importer shares: run metadata, atomic replacement, problems, trajectory rows."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

import duckdb
import orjson
from pydantic import BaseModel, Field

from core.action_grammar import ParsedAction
from core.errors import InputError
from core.store import Store, insert_rows, utcnow

Paradigm = Literal["step_by_step", "tree_search", "full_plan", "human", "unknown"]
Termination = Literal["answered", "na_answer", "early_stop", "truncated", "error", "interrupted", "none"]

# Tables whose rows belong to one run: replacing a run clears all of them.
RUN_TABLES = (
    "import_problems", "agent_responses", "network_events", "evaluations", "evaluator_results",
    "trajectories", "steps", "observations", "alignments", "metrics",
)  # fmt: skip

# Terminations that count as a complete attempt when choosing the run's answer for a task.
COMPLETE = frozenset({"answered", "na_answer", "early_stop", "truncated"})


class RunMeta(BaseModel):
    name: str = Field(min_length=1)
    source_format: str
    source_path: str
    agent: str | None = None
    model: str | None = None
    paradigm: Paradigm = "unknown"
    config: Any = None
    n_tasks: int | None = None
    notes: str | None = None


class Problem(BaseModel):
    """A per-task problem: recorded and listed, never a crash of the whole import."""

    task_id: int | None
    source_path: str
    kind: str
    message: str


class StepRecord(BaseModel):
    idx: int
    url: str | None = None
    thought: str | None = None
    stated_action: str | None = None
    executed_action: str | None = None
    action: ParsedAction | None = None
    readable: str | None = None
    error: str | None = None
    started_at: Any = None
    elapsed_s: float | None = None
    screenshot_path: str | None = None
    # Large texts, stored in `observations` and loaded on demand: {"axtree": ..., "html": ...}.
    observations: dict[str, str] = Field(default_factory=dict)


class TrajectoryRecord(BaseModel):
    task_id: int
    episode: str = "0"
    final_answer: str | None = None
    reward: float | None = None
    success: bool | None = None
    termination: Termination = "none"
    termination_detail: str | None = None
    plan: list[str] | None = None
    goal: str | None = None
    # The task config the source recorded for this attempt (a render file's header), JSON-able.
    task_config: Any = None
    source_path: str | None = None
    started_at: Any = None
    elapsed_s: float | None = None
    # Orders attempts of one task: the latest complete one is the run's answer.
    order_key: Any = None
    steps: list[StepRecord] = Field(default_factory=list)

    @property
    def n_steps(self) -> int:
        return sum(1 for s in self.steps if s.executed_action)


def iter_jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, parsed object) of each non-blank line; one-line InputError naming file and line."""
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed below; lines are decoded by orjson
    except OSError as exc:
        raise InputError(path, f"cannot be read ({exc.strerror or exc})") from None
    with handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                yield number, orjson.loads(raw)
            except orjson.JSONDecodeError as exc:
                try:
                    raw.decode("utf-8")
                except UnicodeDecodeError:
                    raise InputError(path, f"line {number}: not UTF-8 text") from None
                raise InputError(path, f"line {number}: not valid JSON ({exc})") from None


def replace_run(cur: duckdb.DuckDBPyConnection, meta: RunMeta) -> None:
    """Inside the caller's transaction: drop every row of the run, then record it anew."""
    for table in RUN_TABLES:
        cur.execute(f"DELETE FROM {table} WHERE run = ?", [meta.name])
    cur.execute("DELETE FROM runs WHERE name = ?", [meta.name])
    cur.execute(
        "INSERT INTO runs (name, agent, model, paradigm, source_format, source_path, imported_at, config,"
        " n_tasks, notes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            meta.name, meta.agent, meta.model, meta.paradigm, meta.source_format, meta.source_path,
            utcnow(), None if meta.config is None else orjson.dumps(meta.config).decode(), meta.n_tasks,
            meta.notes,
        ],
    )  # fmt: skip


def write_problems(cur: duckdb.DuckDBPyConnection, run: str, problems: Iterable[Problem]) -> int:
    now = utcnow()
    return insert_rows(
        cur, "import_problems", [{"run": run, "recorded_at": now, **p.model_dump()} for p in problems]
    )


def mark_answers(trajectories: Sequence[TrajectoryRecord]) -> set[tuple[int, str]]:
    """(task_id, episode) of each task's answer: the latest complete attempt, else the latest attempt."""
    by_task: dict[int, list[TrajectoryRecord]] = {}
    for t in trajectories:
        by_task.setdefault(t.task_id, []).append(t)
    chosen = set()
    for task_id, attempts in by_task.items():
        ordered = sorted(attempts, key=lambda t: (t.order_key is not None, t.order_key, t.episode))
        complete = [t for t in ordered if t.termination in COMPLETE]
        chosen.add((task_id, (complete or ordered)[-1].episode))
    return chosen


def write_trajectories(
    cur: duckdb.DuckDBPyConnection, run: str, trajectories: Sequence[TrajectoryRecord]
) -> None:
    """Insert trajectories, steps and observations of a run (inside the caller's transaction)."""
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
                    "readable": s.readable, "error": s.error, "started_at": s.started_at,
                    "elapsed_s": s.elapsed_s, "screenshot_path": s.screenshot_path,
                }
            )  # fmt: skip
            for kind, content in s.observations.items():
                if content:
                    obs_rows.append(
                        {"run": run, "task_id": t.task_id, "episode": t.episode, "idx": s.idx, "kind": kind,
                         "content": content}
                    )  # fmt: skip
    insert_rows(cur, "trajectories", traj_rows)
    insert_rows(cur, "steps", step_rows)
    insert_rows(cur, "observations", obs_rows)


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


def import_run(
    store: Store,
    meta: RunMeta,
    trajectories: Sequence[TrajectoryRecord] = (),
    problems: Sequence[Problem] = (),
    extra_writes: Iterable = (),
) -> None:
    """Write a whole run atomically: replace it, then its trajectories, problems and any extra writes.

    `extra_writes` are callables `f(cur)` for format-specific tables (e.g. network events).
    """
    with store.transaction() as cur:
        replace_run(cur, meta)
        write_trajectories(cur, meta.name, trajectories)
        write_problems(cur, meta.name, problems)
        for write in extra_writes:
            write(cur)


def problems_of(store: Store, run: str) -> list[dict[str, Any]]:
    return store.query_dicts(
        "SELECT task_id, source_path, kind, message FROM import_problems WHERE run = ? ORDER BY task_id NULLS FIRST",
        [run],
    )


def several_attempts(store: Store, run: str) -> list[dict[str, Any]]:
    """Tasks of `run` with more than one episode, and which episode is the run's answer for each."""
    return store.query_dicts(
        "SELECT task_id, count(*) AS attempts, any_value(episode) FILTER (WHERE is_answer) AS answer"
        " FROM trajectories WHERE run = ? GROUP BY task_id HAVING count(*) > 1 ORDER BY task_id",
        [run],
    )
