"""Import trajreview JSONL (docs/formats.md): a run header line, then one line per task attempt.

The whole file is validated against core/schemas/trajectory.schema.json before anything is written;
the first error is reported as one line naming the line number and the field, and nothing lands.
"""

from __future__ import annotations

import functools
from collections import Counter
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import orjson

from core.errors import InputError, Problem
from core.files.jsonlines import iter_jsonl
from core.ingest.records import RunMeta, StepRecord, TrajectoryRecord
from core.ingest.tasks import ensure_tasks
from core.ingest.writer import import_run, source_verdict_rows
from core.measure.action_grammar import ParsedAction, is_na_answer
from core.measure.action_grammar.browsergym import parse_action as parse_browsergym_action
from core.measure.action_grammar.webarena import describe, element_from_axtree, parse_webarena_action
from core.progress import ProgressCallback
from core.store import Store, insert_rows

SOURCE_FORMAT = "jsonl"


@dataclass
class JsonlImportSummary:
    run: str
    n_tasks: int = 0
    n_trajectories: int = 0
    n_steps: int = 0
    n_rewarded: int = 0
    n_success: int = 0
    terminations: Counter = field(default_factory=Counter)
    problems: list[Problem] = field(default_factory=list)


@functools.cache
def trajectory_schema() -> dict[str, Any]:
    text = resources.files("core").joinpath("schemas/trajectory.schema.json").read_bytes()
    return orjson.loads(text)


@functools.cache
def _validators() -> tuple[Any, Any]:
    import jsonschema

    schema = trajectory_schema()
    cls = jsonschema.validators.validator_for(schema)
    make = functools.partial(cls, format_checker=cls.FORMAT_CHECKER)
    header = make({"$ref": "#/$defs/header", "$defs": schema["$defs"]})
    task = make({"$ref": "#/$defs/task", "$defs": schema["$defs"]})
    return header, task


def _field_path(error: Any) -> str:
    parts = []
    for p in error.absolute_path:
        parts.append(f"[{p}]" if isinstance(p, int) else (f".{p}" if parts else str(p)))
    return "".join(parts) or "(line)"


def _validate(validator: Any, obj: Any, path: Path, line: int) -> None:
    errors = sorted(
        validator.iter_errors(obj),
        key=lambda e: (len(list(e.absolute_path)), list(map(str, e.absolute_path))),
    )
    if errors:
        error = errors[0]
        raise InputError(path, f"line {line}: {_field_path(error)}: {error.message}")


def read_jsonl(path: Path) -> tuple[dict[str, Any], list[tuple[int, dict[str, Any]]]]:
    """The validated header and (line number, task object) pairs; InputError on the first problem."""
    header_validator, task_validator = _validators()
    header: dict[str, Any] | None = None
    tasks: list[tuple[int, dict[str, Any]]] = []
    for number, obj in iter_jsonl(path):
        if header is None:
            _validate(header_validator, obj, path, number)
            header = obj
            continue
        _validate(task_validator, obj, path, number)
        tasks.append((number, obj))
    if header is None:
        raise InputError(path, "empty file (expected a run header line)")
    return header, tasks


def parse_executed_action(action: str | None, axtree: str | None) -> tuple[ParsedAction | None, str | None]:
    """(parsed action, readable sentence) in whichever grammar matches: WebArena, else BrowserGym."""
    if not action or not action.strip():
        return None, None
    parsed = parse_webarena_action(action)
    if parsed is not None:
        if parsed.element_id and not parsed.element_role:
            role, label = element_from_axtree(axtree, parsed.element_id)
            parsed.element_role = role
            parsed.element_label = parsed.element_label or label
        return parsed, describe(parsed)
    parsed, sentence = parse_browsergym_action(action, axtree)
    if parsed is not None:
        return parsed, sentence
    unknown = ParsedAction(raw=action, verb="unknown")
    return unknown, describe(unknown)


def _observations(value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if isinstance(value, str):
        return {"axtree": value}
    return {k: v for k, v in value.items() if v}


def _step(idx: int, step: dict[str, Any]) -> StepRecord:
    observations = _observations(step.get("observation"))
    action, sentence = parse_executed_action(step.get("executed_action"), observations.get("axtree"))
    return StepRecord(
        idx=idx, url=step.get("url"), thought=step.get("thought"), stated_action=step.get("stated_action"),
        executed_action=step.get("executed_action"), action=action, readable=sentence, error=step.get("error"),
        elapsed_s=step.get("elapsed_s"), observations=observations,
    )  # fmt: skip


def _termination(task: dict[str, Any]) -> str:
    """As given; absent: answered (or na_answer) when there is a final answer, else none."""
    if task.get("termination"):
        return task["termination"]
    answer = task.get("final_answer")
    if answer is None:
        return "none"
    return "na_answer" if is_na_answer(answer) else "answered"


def _trajectories(
    path: Path, tasks: list[tuple[int, dict[str, Any]]], on_progress: ProgressCallback | None
) -> list[TrajectoryRecord]:
    seen: dict[tuple[int, str], int] = {}
    count: Counter = Counter()
    out = []
    for done, (line, task) in enumerate(tasks):
        if on_progress and done % 100 == 0:
            on_progress(done, len(tasks))
        task_id = task["task_id"]
        episode = task.get("episode") or str(count[task_id])
        count[task_id] += 1
        if (task_id, episode) in seen:
            raise InputError(
                path,
                f"line {line}: task {task_id} episode {episode!r} already on line {seen[task_id, episode]}",
            )
        seen[task_id, episode] = line
        reward = task.get("reward")
        out.append(
            TrajectoryRecord(
                task_id=task_id, episode=episode, final_answer=task.get("final_answer"), reward=reward,
                success=None if reward is None else reward >= 1, termination=_termination(task),
                termination_detail=task.get("termination_detail"), plan=task.get("plan"), goal=task.get("goal"),
                source_path=f"{path}:{line}", elapsed_s=task.get("elapsed_s"), order_key=line,
                steps=[_step(i, s) for i, s in enumerate(task["steps"])],
            )
        )  # fmt: skip
    if on_progress:
        on_progress(len(tasks), len(tasks))
    return out


def import_jsonl(
    store: Store,
    path: str | Path,
    run: str,
    *,
    on_progress: ProgressCallback | None = None,
) -> JsonlImportSummary:
    """Import a trajreview JSONL file as run `run` (replacing a run of that name); all or nothing."""
    path = Path(path)
    if not path.exists():
        raise InputError(path, "no such file")
    header, tasks = read_jsonl(path)
    trajectories = _trajectories(path, tasks, on_progress)

    ensure_tasks(store)
    known = {t for (t,) in store.query("SELECT task_id FROM tasks")}
    problems = [
        Problem(task_id=t.task_id, source_path=t.source_path or str(path), kind="unknown_task",
                message=f"{t.source_path}: task {t.task_id} is not in the task dataset")
        for t in trajectories if known and t.task_id not in known
    ]  # fmt: skip
    # The run's own reward is its verdict (source-reward) for the task's answer attempt.
    evaluations = source_verdict_rows(run, trajectories, "source-reward")
    meta = RunMeta(
        name=run, source_format=SOURCE_FORMAT, source_path=str(path), agent=header.get("agent"),
        model=header.get("model"), paradigm=header["paradigm"], config=header.get("config"),
        n_tasks=len({t.task_id for t in trajectories}), notes=header.get("notes"),
    )  # fmt: skip
    import_run(
        store,
        meta,
        trajectories,
        problems,
        extra_writes=[lambda cur: insert_rows(cur, "evaluations", evaluations)],
    )
    return JsonlImportSummary(
        run=run,
        n_tasks=meta.n_tasks or 0,
        n_trajectories=len(trajectories),
        n_steps=sum(len(t.steps) for t in trajectories),
        n_rewarded=len(evaluations),
        n_success=sum(1 for e in evaluations if e["status"] == "success"),
        terminations=Counter(t.termination for t in trajectories),
        problems=problems,
    )
