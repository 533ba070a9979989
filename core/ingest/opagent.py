"""Import an OpAgent WebArena run: one `<task_id>.json` per task (`final_results/`), screenshots in
`final_visual_results/val_<task_id>/images/` (see ../shared/data/oagent-run/README.md).

Each file is one JSON array: alternating observation and action items, the generated answer, the task
config the run was scored with, and the score. Mapping onto the step model:
- executed action = `action` (`action_type` + `params`, screen coordinates: no element id), its
  readable sentence says what was done and where and quotes the planner's instruction;
- stated action = the planner's `instruction` (its structured action when it wrote none);
- thought = the reflector's thoughts; planner thought, reflector note and grounder call are kept as the
  step's `chat` observation;
- url = the page the action was taken on. OpAgent's `page_url` is the page *after* the action (a `goto`
  shows its target, a click its result), so step n's url is step n-1's `page_url` (the config's
  `start_url` for the first) and the last `page_url` is the trajectory's `final_url`;
- error = `error_msg`; final answer = the text inside `<answer>…</answer>` of the generated answer;
- ending: `truncated` when the run reached OpAgent's cap of 70 actions (its summary answer is kept),
  `early_stop` when the answer says the agent failed ("The task was not completed…", "the agent was
  unable to…", "Unable to determine…"; the sentence is the detail), `na_answer` for N/A, else `answered`
  (`none` without an answer);
- the file's score is the run's own verdict (`evaluations` source `opagent-score`).
Files with no action or no answer are trajectories; a malformed file is a recorded problem of its task.
Screenshots are found as `.png` or `.jpg` and never outside the run directory. Hosts are kept as
recorded (`ecs_ip`, off-site pages).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from core.errors import InputError, Problem
from core.files import safe_files
from core.ingest.records import Paradigm, RunMeta, StepRecord, TrajectoryRecord
from core.ingest.tasks import ensure_tasks
from core.ingest.writer import import_run, source_verdict_rows
from core.measure.action_grammar import is_na_answer
from core.measure.action_grammar.opagent import describe_opagent, parse_opagent_action, raw_action
from core.progress import ProgressCallback
from core.store import Store, insert_rows

SOURCE_FORMAT = "opagent"
VERDICT_SOURCE = "opagent-score"
_FILE_NAME = re.compile(r"^(\d{1,9})\.json$")
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.S)
_ASSISTANT = re.compile(r"<\|im_start\|>assistant\n(.*?)<\|im_end\|>", re.S)
_MAX_TEXT = 100_000  # one stored text field (thought, instruction, answer); longer ones are clipped


class NotAnOpAgentFile(ValueError):
    """The file is JSON but not an OpAgent trajectory."""


@dataclass
class OpAgentImportSummary:
    run: str
    n_files: int = 0
    n_tasks: int = 0
    n_steps: int = 0
    n_scored: int = 0
    n_success: int = 0
    n_screenshots: int = 0
    terminations: Counter = field(default_factory=Counter)
    problems: list[Problem] = field(default_factory=list)


# OpAgent stops a task at this many actions (`max_steps` of its harness) and then asks for a summary answer.
MAX_ACTIONS = 70
# An answer in which the agent says it failed ("The task was not completed. The agent …", "I was unable to
# draft …", "Unable to determine …"): the agent gave up, whatever text it then wrote.
_DECLARED_FAILURE = re.compile(
    r"(?i)^\s*unable to\b"
    r"|\bthe task (?:was not|wasn't|could not be|cannot be|has not been|is not) (?:successfully |fully )?"
    r"(?:completed|finished|accomplished)\b"
    r"|\bthe task (?:failed|is incomplete|remains incomplete)\b"
    r"|\b(?:I|the agent) (?:failed|was unable|am unable|is unable|could not|couldn't|cannot|can't|did not manage)\b"
)


def declared_failure(answer: str | None) -> str | None:
    """The sentence of an answer in which the agent says it failed, or None."""
    if not answer:
        return None
    match = _DECLARED_FAILURE.search(answer)
    if match is None:
        return None
    start = answer.rfind(". ", 0, match.start())
    start = 0 if start < 0 else start + 2
    end = answer.find(". ", match.end())
    sentence = " ".join(answer[start : end + 1 if end >= 0 else len(answer)].split())
    return sentence if len(sentence) <= 300 else sentence[:299] + "…"


def ending(n_actions: int, answer: str | None, has_generated: bool) -> tuple[str, str | None]:
    """(termination, detail): `truncated` at OpAgent's 70-action cap, `early_stop` when the answer says the
    agent failed, `na_answer` for N/A, `answered`, or `none` without an answer."""
    failed = declared_failure(answer)
    if n_actions >= MAX_ACTIONS:
        detail = f"stopped at OpAgent's cap of {MAX_ACTIONS} actions"
        return "truncated", detail + (f"; the answer says it failed: {failed}" if failed else "")
    if answer is None:
        return "none", ("no generated answer" if not has_generated else "no <answer> tag")
    if failed:
        return "early_stop", f"the answer says the agent failed: {failed}"
    if is_na_answer(answer):
        return "na_answer", None
    return "answered", None


# -- one file --------------------------------------------------------------------------------------
def _clip(value: Any) -> str | None:
    if value is None:
        return None
    # orjson refuses invalid UTF-8 and lone surrogates on load: every string here can be stored.
    text = value if isinstance(value, str) else orjson.dumps(value, default=str).decode()
    return text if len(text) <= _MAX_TEXT else text[: _MAX_TEXT - 1] + "…"


def extract_answer(generated: Any) -> str | None:
    """The answer as OpAgent's scorer reads it: the last assistant block, then `<answer>…</answer>`,
    stripped; None when there is no answer tag."""
    if not isinstance(generated, str):
        return None
    blocks = _ASSISTANT.findall(generated)
    text = blocks[-1] if blocks else generated
    match = _ANSWER.search(text)
    return match.group(1).strip() if match else None


def _thought(reflector: Any) -> str | None:
    if not isinstance(reflector, dict):
        return None
    thought = reflector.get("thought")
    if isinstance(thought, list):
        return _clip("\n".join(str(t) for t in thought)) or None
    return _clip(thought) if thought else None


def _chat(item: dict[str, Any]) -> str | None:
    """Planner thought, reflector note and grounder call of the step, as the `chat` observation."""
    planner = item.get("planner_output") if isinstance(item.get("planner_output"), dict) else {}
    reflector = item.get("reflector_output") if isinstance(item.get("reflector_output"), dict) else {}
    grounder = item.get("grounder_output")
    messages = []
    if planner.get("thought"):
        messages.append({"role": "planner", "text": _clip(planner["thought"])})
    if reflector.get("note"):
        messages.append({"role": "reflector note", "text": _clip(reflector["note"])})
    if grounder:
        messages.append({"role": "grounder", "text": _clip(grounder)})
    return orjson.dumps(messages).decode() if messages else None


def _stated(planner: Any) -> str | None:
    """The planner's instruction; when it wrote none, its structured action in OpAgent's call form."""
    if not isinstance(planner, dict):
        return None
    if isinstance(planner.get("instruction"), str) and planner["instruction"].strip():
        return _clip(planner["instruction"].strip())
    if isinstance(planner.get("action_type"), str):
        attributes = planner.get("action_attributes")
        return _clip(raw_action(planner["action_type"], attributes if isinstance(attributes, dict) else {}))
    return None


class ScreenshotFinder:
    """Screenshots of one task under `<root>/final_visual_results/val_<id>/`, never outside the run."""

    def __init__(self, root: Path, task_id: int):
        self.root = root.resolve()
        self.folder = root / "final_visual_results" / f"val_{task_id}"
        self.present = self.folder.is_dir()

    def find(self, image_path: Any) -> tuple[str | None, str | None]:
        """(resolved path, problem) for an observation's `image_path` (`.png` and `.jpg` both tried)."""
        if not self.present or not isinstance(image_path, str) or not image_path:
            return None, None
        relative = Path(image_path)
        if relative.is_absolute() or ".." in relative.parts or "\x00" in image_path:
            return None, f"screenshot path {image_path[:200]!r} leaves the run directory; ignored"
        for candidate in (relative, relative.with_suffix(".jpg"), relative.with_suffix(".png")):
            path = (self.folder / candidate).resolve()
            if not path.is_relative_to(self.root):  # a symlink pointing elsewhere
                return None, f"screenshot {image_path[:200]!r} resolves outside the run directory; ignored"
            if safe_files.is_regular(path):
                return str(path), None
        return None, None


def _items(data: Any) -> list[dict[str, Any]]:
    if not isinstance(data, list):
        raise NotAnOpAgentFile(f"expected a JSON array of trajectory items, got {type(data).__name__}")
    items = [x for x in data if isinstance(x, dict)]
    known = [x for x in items if x.get("type") in ("observation", "action", "evaluation", "generated_answer")
             or "configs" in x]  # fmt: skip
    if not known:
        raise NotAnOpAgentFile("no observation, action, configs or evaluation item")
    return items


def read_task_file(path: Path, root: Path, task_id: int) -> tuple[TrajectoryRecord, list[Problem]]:
    """One task file as a trajectory and the problems found in it; NotAnOpAgentFile/OSError/ValueError
    when the file cannot be read as a trajectory at all."""
    items = _items(orjson.loads(safe_files.read_bytes(path, "OpAgent task file", root=root)))
    problems: list[Problem] = []

    def problem(kind: str, message: str) -> None:
        problems.append(
            Problem(task_id=task_id, source_path=str(path), kind=kind, message=f"{path}: {message}")
        )

    configs = next((x["configs"] for x in items if isinstance(x.get("configs"), dict)), None)
    score_item = next((x for x in items if x.get("type") == "evaluation"), None)
    generated = next((x for x in items if x.get("type") == "generated_answer"), None)
    if configs is not None and isinstance(configs.get("task_id"), int) and configs["task_id"] != task_id:
        problem("task_id_mismatch", f"config says task {configs['task_id']}; the file name wins")
    start_url = configs.get("start_url") if isinstance(configs, dict) else None
    screenshots = ScreenshotFinder(root, task_id)
    steps: list[StepRecord] = []
    last_image: Any = None
    previous_url = start_url if isinstance(start_url, str) else None
    for item in items:
        kind = item.get("type")
        if kind == "observation":
            last_image = item.get("image_path")
            continue
        if kind != "action":
            continue
        action = item.get("action")
        planner = item.get("planner_output")
        instruction = planner.get("instruction") if isinstance(planner, dict) else None
        instruction = _clip(instruction) if isinstance(instruction, str) else None
        parsed = parse_opagent_action(action, instruction)
        if parsed is None:
            problem("damaged_step", f"action {len(steps)} has no action_type; kept as an unparsed step")
        params = (
            action.get("params")
            if isinstance(action, dict) and isinstance(action.get("params"), dict)
            else {}
        )
        action_type = action.get("action_type") if isinstance(action, dict) else None
        shot, shot_problem = screenshots.find(last_image)
        if shot_problem:
            problem("unsafe_path", shot_problem)
        page_url = item.get("page_url") if isinstance(item.get("page_url"), str) else None
        error = item.get("error_msg")
        chat = _chat(item)
        steps.append(
            StepRecord(
                idx=len(steps), url=previous_url, thought=_thought(item.get("reflector_output")),
                stated_action=_stated(planner), executed_action=parsed.raw if parsed else _clip(action) or "none",
                action=parsed,
                readable=describe_opagent(parsed, str(action_type), params, instruction) if parsed else None,
                error=_clip(error) if isinstance(error, str) and error.strip() else None,
                screenshot_path=shot, observations={"chat": chat} if chat else {},
            )
        )  # fmt: skip
        previous_url = page_url or previous_url
        last_image = None
    answer = extract_answer(generated.get("generated_final_answer")) if generated else None
    if answer is not None and len(answer) > _MAX_TEXT:
        problem("long_text", f"final answer of {len(answer):,} characters clipped to {_MAX_TEXT:,}")
    termination, detail = ending(len(steps), answer, generated is not None)
    score = score_item.get("score") if score_item else None
    if score is not None and (isinstance(score, bool) or not isinstance(score, int | float)):
        problem("bad_score", f"score {str(score)[:50]!r} is not a number; the task has no verdict")
        score = None
    if score_item is None:
        problem("no_score", "no evaluation item: the task has no verdict")
    if configs is None:
        problem("no_config", "no configs item: the task config comes from the original dataset")
    intent = configs.get("intent") if isinstance(configs, dict) else None
    return (
        TrajectoryRecord(
            task_id=task_id, episode="0", final_answer=_clip(answer), reward=None if score is None else float(score),
            success=None if score is None else float(score) >= 1.0, termination=termination,
            termination_detail=detail, goal=_clip(intent) if isinstance(intent, str) else None,
            task_config=configs, source_path=str(path), final_url=previous_url,
            order_key=0, steps=steps,
        ),
        problems,
    )  # fmt: skip


# -- the run ---------------------------------------------------------------------------------------
def find_task_files(root: Path) -> list[Path]:
    """`final_results/*.json` under the run directory, else `*.json` in the directory itself."""
    folder = root / "final_results"
    return sorted((folder if folder.is_dir() else root).glob("*.json"))


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
    """Import an OpAgent run directory as run `run` (replacing a run of that name), in one transaction."""
    root = Path(directory)
    if not root.is_dir():
        raise InputError(root, "not a directory")
    files = find_task_files(root)
    if not files:
        raise InputError(root, "no <task_id>.json files found (expected final_results/<task_id>.json)")
    problems: list[Problem] = []
    trajectories: list[TrajectoryRecord] = []
    for done, path in enumerate(files):
        if on_progress and done % 50 == 0:
            on_progress(done, len(files))
        match = _FILE_NAME.match(path.name)
        if not match:
            problems.append(Problem(task_id=None, source_path=str(path), kind="bad_file_name",
                                    message=f"{path}: not named <task_id>.json"))  # fmt: skip
            continue
        task_id = int(match.group(1))
        try:
            trajectory, found = read_task_file(path, root, task_id)
        except orjson.JSONDecodeError as exc:
            reason = f"not valid JSON ({str(exc).splitlines()[0][:200]})"
        except NotAnOpAgentFile as exc:
            reason = f"not an OpAgent trajectory ({exc})"
        except InputError as exc:  # a link, a FIFO, a file beyond the limit (core.files.safe_files)
            reason = f"refused: {exc.reason}"
        except (OSError, RecursionError, MemoryError) as exc:
            reason = f"cannot be read ({type(exc).__name__})"
        else:
            trajectories.append(trajectory)
            problems.extend(found)
            continue
        problems.append(
            Problem(task_id=task_id, source_path=str(path), kind="bad_file", message=f"{path}: {reason}")
        )
    if on_progress:
        on_progress(len(files), len(files))

    ensure_tasks(store)
    known = {t for (t,) in store.query("SELECT task_id FROM tasks")}
    problems += [
        Problem(task_id=t.task_id, source_path=t.source_path or "", kind="unknown_task",
                message=f"{t.source_path}: task {t.task_id} is not in the task dataset")
        for t in trajectories if known and t.task_id not in known
    ]  # fmt: skip
    evaluations = source_verdict_rows(run, trajectories, VERDICT_SOURCE)
    meta = RunMeta(
        name=run, source_format=SOURCE_FORMAT, source_path=str(directory), agent=agent, model=model,
        paradigm=paradigm, n_tasks=len(trajectories),
        notes="verdicts: each file's score (OpAgent's own evaluator on the config the file carries)",
    )  # fmt: skip
    import_run(
        store, meta, trajectories, problems,
        extra_writes=[lambda cur: insert_rows(cur, "evaluations", evaluations)],
    )  # fmt: skip
    return OpAgentImportSummary(
        run=run, n_files=len(files), n_tasks=len(trajectories), n_steps=sum(len(t.steps) for t in trajectories),
        n_scored=len(evaluations), n_success=sum(1 for e in evaluations if e["status"] == "success"),
        n_screenshots=sum(1 for t in trajectories for s in t.steps if s.screenshot_path),
        terminations=Counter(t.termination for t in trajectories), problems=problems,
    )  # fmt: skip
