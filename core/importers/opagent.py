"""Import OpAgent's published WebArena run: `final_results/<task_id>.json`, one JSON array per task
(observation/action items, the generated answer, the task config it was scored with, its score), and
screenshots under `final_visual_results/val_<task_id>/images/` (../shared/data/oagent-run/README.md).

Mapping onto the step model: the planner's instruction is the stated action; the grounder's coordinate
action the executed one (no element id; the readable sentence says what was done, where, and quotes the
instruction); the reflector's thoughts the thought; `page_url` and `error_msg` as recorded (the
placeholder host `ecs_ip` and off-site pages kept as they are). The file's score is the run's own verdict
(`evaluations.source = 'source-score'`). A file with no action or no answer is a trajectory; a malformed
file is a problem of its task. Only regular files inside the given directory are read.
"""

from __future__ import annotations

import re
import stat
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from core.action_grammar import is_na_answer
from core.action_grammar.opagent import parse_opagent_action
from core.datasets import ensure_tasks
from core.errors import InputError
from core.importers.common import import_run
from core.offline_runs import write_offline
from core.runs import Paradigm, Problem, RunMeta, StepRecord, TrajectoryRecord
from core.store import Store, insert_rows, utcnow

SOURCE_FORMAT = "opagent"
VERDICT_SOURCE = "source-score"
_FILE = re.compile(r"^(0|[1-9][0-9]{0,8})\.json$")
_MAX_FILE_BYTES = 32 << 20  # the largest real file is 0.2 MB
_MAX_TASK_ID = 2_147_483_647
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
_CHAT_TOKENS = re.compile(r"<\|im_(?:start|end)\|>(?:assistant)?")
_IMAGE_NAME = re.compile(r"^images/(screenshot_(?:0|[1-9][0-9]{0,5}))\.(?:png|jpg|jpeg)$")

ProgressCallback = Callable[[int, int], None]


@dataclass
class OpAgentImportSummary:
    run: str
    n_files: int = 0
    n_tasks: int = 0
    n_steps: int = 0
    n_success: int = 0
    n_scored: int = 0
    n_screenshots: int = 0
    terminations: Counter = field(default_factory=Counter)
    problems: list[Problem] = field(default_factory=list)


def _regular_file(path: Path) -> bool:
    """A plain file, not a link, FIFO or device (a FIFO would block the import forever)."""
    try:
        return stat.S_ISREG(path.lstat().st_mode)
    except OSError:
        return False


def find_results(root: Path) -> Path:
    """The folder holding `<task_id>.json`: ROOT/final_results, or ROOT itself."""
    inner = root / "final_results"
    if inner.is_dir() and not inner.is_symlink():
        return inner
    return root


def final_answer(text: Any) -> str | None:
    """The answer inside `<answer>…</answer>` (else the text without chat tokens); None when empty."""
    if not isinstance(text, str):
        return None
    found = _ANSWER.search(text)
    answer = found.group(1) if found else _CHAT_TOKENS.sub("", text)
    answer = answer.strip()
    return answer or None


def _thought(reflector: Any, planner: Any) -> str | None:
    thoughts = reflector.get("thought") if isinstance(reflector, dict) else None
    if isinstance(thoughts, list):
        text = " ".join(str(t) for t in thoughts if t)
    elif isinstance(thoughts, str):
        text = thoughts
    else:
        text = (
            planner.get("thought")
            if isinstance(planner, dict) and isinstance(planner.get("thought"), str)
            else ""
        )
    return text.strip() or None


def _screenshots(root: Path, task_id: int) -> dict[str, Path]:
    """screenshot stem -> file, for `final_visual_results/val_<id>/images/` (png or jpg, regular files
    inside the run directory only)."""
    folder = root / "final_visual_results" / f"val_{task_id}" / "images"
    if not folder.is_dir() or not folder.resolve().is_relative_to(root.resolve()):
        return {}
    found = {}
    for path in folder.iterdir():
        if path.suffix.lower() in (".png", ".jpg", ".jpeg") and _regular_file(path):
            found.setdefault(path.stem, path)
    return found


def read_task_file(
    path: Path, task_id: int, root: Path
) -> tuple[TrajectoryRecord | None, float | None, list[Problem]]:
    """One task file: its trajectory and score, or problems (never an exception for bad content)."""
    problems: list[Problem] = []

    def problem(kind: str, message: str) -> None:
        problems.append(
            Problem(task_id=task_id, source_path=str(path), kind=kind, message=f"{path}: {message}")
        )

    if not _regular_file(path):
        problem("not_a_file", "not a regular file (link, FIFO or device): skipped")
        return None, None, problems
    if path.stat().st_size > _MAX_FILE_BYTES:
        problem("too_large", f"larger than {_MAX_FILE_BYTES >> 20} MB: skipped")
        return None, None, problems
    try:
        items = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as exc:
        problem("malformed_file", f"not valid JSON ({exc})")
        return None, None, problems
    except OSError as exc:
        problem("unreadable", f"cannot be read ({exc.strerror or exc})")
        return None, None, problems
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        problem("malformed_file", "not a JSON array of objects (the OpAgent result format)")
        return None, None, problems

    shots = _screenshots(root, task_id)
    steps: list[StepRecord] = []
    pending_image: str | None = None
    answer_text: Any = None
    config: Any = None
    score: float | None = None
    for item in items:
        kind = item.get("type")
        if kind == "observation":
            image = item.get("image_path")
            match = _IMAGE_NAME.match(image) if isinstance(image, str) else None
            if isinstance(image, str) and not match:
                problem(
                    "bad_image_path",
                    f"observation image {image[:80]!r} is not images/screenshot_<n>.png: ignored",
                )
            pending_image = match.group(1) if match else None
        elif kind == "action":
            planner = item.get("planner_output") if isinstance(item.get("planner_output"), dict) else {}
            instruction = planner.get("instruction") if isinstance(planner.get("instruction"), str) else None
            parsed, readable = parse_opagent_action(item.get("action"), instruction)
            error = item.get("error_msg")
            url = item.get("page_url")
            shot = shots.get(pending_image) if pending_image else None
            steps.append(
                StepRecord(
                    idx=len(steps), url=url if isinstance(url, str) else None,
                    thought=_thought(item.get("reflector_output"), planner), stated_action=instruction,
                    executed_action=parsed.raw, action=parsed, readable=readable,
                    error=error if isinstance(error, str) and error.strip() else None,
                    screenshot_path=str(shot) if shot else None,
                )
            )  # fmt: skip
            pending_image = None
        elif kind == "generated_answer":
            answer_text = item.get("generated_final_answer")
        elif kind == "evaluation":
            value = item.get("score")
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                score = float(value)
            else:
                problem("bad_score", f"evaluation score {value!r} is not a number: no verdict")
        elif "configs" in item:
            config = item["configs"]
    if isinstance(config, dict) and isinstance(config.get("task_id"), int) and config["task_id"] != task_id:
        problem("task_id_mismatch", f"config says task {config['task_id']}; the file name wins")
    answer = final_answer(answer_text)
    if answer_text is None:
        termination, detail = "none", "no generated answer in the file"
    elif answer is None:
        termination, detail = "none", "the generated answer is empty"
    else:
        termination, detail = ("na_answer" if is_na_answer(answer) else "answered"), None
    trajectory = TrajectoryRecord(
        task_id=task_id, episode="0", final_answer=answer, reward=score,
        success=None if score is None else score >= 1.0, termination=termination, termination_detail=detail,
        goal=config.get("intent") if isinstance(config, dict) and isinstance(config.get("intent"), str) else None,
        task_config=config, source_path=str(path), steps=steps,
    )  # fmt: skip
    return trajectory, score, problems


def import_opagent(
    store: Store,
    directory: str | Path,
    run: str,
    *,
    agent: str | None = "OpAgent",
    model: str | None = None,
    paradigm: Paradigm = "step_by_step",
    on_progress: ProgressCallback | None = None,
) -> OpAgentImportSummary:
    """Import every `<task_id>.json` of an OpAgent run directory as run `run` (replacing a run of that
    name), in one transaction."""
    root = Path(directory)
    if not root.is_dir():
        raise InputError(root, "not a directory")
    results = find_results(root)
    files = []
    summary = OpAgentImportSummary(run=run)
    for path in sorted(results.iterdir(), key=lambda p: p.name):
        match = _FILE.match(path.name)
        if not match:
            continue
        task_id = int(match.group(1))
        if task_id > _MAX_TASK_ID:
            summary.problems.append(Problem(task_id=None, source_path=str(path), kind="bad_file_name",
                                            message=f"{path}: task id out of range"))  # fmt: skip
            continue
        files.append((task_id, path))
    if not files:
        raise InputError(root, "no <task_id>.json files found (expected final_results/<task_id>.json)")
    files.sort()
    ensure_tasks(store)
    known = {t for (t,) in store.query("SELECT task_id FROM tasks")}
    trajectories: list[TrajectoryRecord] = []
    now = utcnow()
    evaluations = []
    for done, (task_id, path) in enumerate(files):
        if on_progress and done % 50 == 0:
            on_progress(done, len(files))
        trajectory, score, problems = read_task_file(path, task_id, root)
        summary.problems += problems
        if known and task_id not in known:
            summary.problems.append(Problem(task_id=task_id, source_path=str(path), kind="unknown_task",
                                            message=f"{path}: task {task_id} is not in the task dataset"))  # fmt: skip
        if trajectory is None:
            continue
        trajectories.append(trajectory)
        if score is not None:
            evaluations.append({"run": run, "task_id": task_id, "status": "success" if score >= 1.0 else "failure",
                                "score": score, "source": VERDICT_SOURCE, "evaluated_at": now})  # fmt: skip
    if on_progress:
        on_progress(len(files), len(files))
    meta = RunMeta(
        name=run, source_format=SOURCE_FORMAT, source_path=str(directory), agent=agent, model=model,
        paradigm=paradigm, n_tasks=len(trajectories),
        notes=f"verdicts: the score each file carries ({len(evaluations)} of {len(files)} files)",
    )  # fmt: skip
    import_run(store, meta, trajectories, summary.problems,
               extra_writes=[lambda cur: insert_rows(cur, "evaluations", evaluations),
                             lambda cur: write_offline(cur, run)])  # fmt: skip
    summary.n_files = len(files)
    summary.n_tasks = len(trajectories)
    summary.n_steps = sum(t.n_steps for t in trajectories)
    summary.n_scored = len(evaluations)
    summary.n_success = sum(1 for e in evaluations if e["status"] == "success")
    summary.n_screenshots = sum(1 for t in trajectories for s in t.steps if s.screenshot_path)
    summary.terminations = Counter(t.termination for t in trajectories)
    return summary
