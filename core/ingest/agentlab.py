"""Import BrowserGym / AgentLab experiment directories (one directory per episode) as a run.

An episode directory holds `summary_info.json`, `step_<n>.pkl.gz` (a pickled `StepInfo` per step),
`screenshot_step_<n>.png`, `exp_args.pkl`, `goal_object.pkl.gz`, `experiment.log`. Pickles are hostile
input and are read only through `core.files.safe_pickle` (stand-ins, never `pickle.load`).

Terminal-step rules (../shared/docs/data-formats.md section 2): the last step file is the state after
the last action (`action` None, `reward` = episode outcome, rewards shifted by one step); the error of
step n's action is step n+1's `obs.last_action_error`. Every ending (answered, N/A, step limit, agent
parse failure, crash mid-run, crash in reset, interruption) becomes a trajectory with its termination;
only a directory with no episode at all is an error of the whole import.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel, Field

from core.errors import InputError, Problem, first_line
from core.files import safe_files, safe_pickle
from core.files.parallel import map_chunks
from core.ingest.records import RunMeta, StepRecord, TrajectoryRecord
from core.ingest.writer import import_run, source_verdict_rows
from core.measure.action_grammar import ParsedAction, is_na_answer
from core.measure.action_grammar.browsergym import answer_call, parse_action, stated_action
from core.progress import ProgressCallback
from core.store import Store, insert_rows

SOURCE_FORMAT = "agentlab"
_TASK_IN_NAME = re.compile(r"webarena\.([0-9]{1,12})(?![0-9])")
# BrowserGym writes `step_{n}` with n in ASCII digits, no leading zero; `\d` would also take `step_01`
# and `step_١` (Arabic-Indic one): a second copy of a step under another name.
_STEP_FILE = re.compile(r"^step_(0|[1-9][0-9]{0,5})\.pkl\.gz$")
_EPISODE_MARKERS = ("summary_info.json", "exp_args.pkl", "step_0.pkl.gz")
_UNCAUGHT_PREFIX = "Exception uncaught by agent or environment"
_LOG_START = re.compile(r"^(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})")
# Absolute paths from the author's machine (in exception messages): keep only the file name.
_HOME_PATH = re.compile(r"(?:/home|/Users|/root)(?:/[^\s'\"():,]+)+|[A-Za-z]:\\Users(?:\\[^\s'\"():,]+)+")
# "playwright._impl._errors.Error: ..." -> "Error: ...": the module path says nothing to a reviewer.
_MODULE_PREFIX = re.compile(r"^(?:[A-Za-z_]\w*\.)+(?=\w+:)")
_ACTION_BLOCK = re.compile(r"<action>.*?(?:</action>|$)", re.DOTALL)
_THINK_TAGS = re.compile(r"</?think>")
# Below this much step data, reading in this process beats starting worker processes.
_PARALLEL_MIN_BYTES = 24 * 1024 * 1024


class EpisodeRead(BaseModel):
    """What one episode directory yields: its trajectory (None if unusable) and problems met."""

    directory: str
    trajectory: TrajectoryRecord | None = None
    problems: list[Problem] = Field(default_factory=list)
    agent: str | None = None
    model: str | None = None
    config: dict[str, Any] | None = None


class ImportSummary(BaseModel):
    run: str
    n_episodes: int
    n_tasks: int
    n_steps: int
    terminations: dict[str, int]
    n_problems: int
    problems: list[Problem] = Field(default_factory=list)


def _regular_file(path: Path) -> bool:
    """A file of the episode itself: a symlink could point anywhere (a key file shown as a screenshot)."""
    return safe_files.is_regular(path)


# -- plain-data accessors: values from a hostile pickle may be of any type -----------------------
def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return float(value)
    except OverflowError:  # an int beyond any float
        return None


def _dict(value: Any) -> dict[str, Any]:
    if isinstance(value, safe_pickle.Inert):
        return value.fields
    return value if isinstance(value, dict) else {}


def _timestamp(epoch: float | None) -> datetime | None:
    if not epoch or epoch <= 0:
        return None
    try:
        return datetime.fromtimestamp(epoch, UTC).replace(tzinfo=None)
    except (OverflowError, OSError, ValueError):
        return None


def redact_paths(text: str) -> str:
    """Replace absolute home-directory paths by their last component (`…/loop.py`)."""
    return _HOME_PATH.sub(lambda m: "…/" + re.split(r"[/\\]", m.group(0))[-1], text)


def exception_line(err_msg: str | None, stack_trace: str | None = None) -> str | None:
    """The one-line exception of a summary: "TimeoutError: Locator.fill: Timeout 10000ms exceeded."

    `err_msg` reads "Exception uncaught ... in task webarena.N.\\nType:\\nmessage..."; a message without
    that prefix is the agent's own (e.g. "Could not parse a valid value after 6 retries."). The stack
    trace is used only when the message has no type line, and only its last line.
    """
    lines = [ln.strip() for ln in (err_msg or "").splitlines() if ln.strip()]
    if lines and lines[0].startswith(_UNCAUGHT_PREFIX):
        lines = lines[1:]
    line = None
    if lines:
        line = f"{lines[0]} {lines[1]}" if lines[0].endswith(":") and len(lines) > 1 else lines[0]
    elif stack_trace:
        tail = [ln.strip() for ln in stack_trace.splitlines() if ln.strip()]
        line = _MODULE_PREFIX.sub("", tail[-1]) if tail else None
    return redact_paths(line)[:500] if line else None


# -- one step file ---------------------------------------------------------------------------------
class _Step(BaseModel):
    """The parts of a StepInfo we keep, as plain data (the rest, e.g. the DOM snapshot, is dropped)."""

    idx: int
    action: str | None = None
    think: str | None = None
    chat: list[dict[str, str]] = Field(default_factory=list)
    has_obs: bool = False
    url: str | None = None
    axtree: str | None = None
    last_action_error: str | None = None
    goal: str | None = None
    reward: float | None = None
    terminated: bool | None = None
    truncated: bool | None = None
    profiling: dict[str, float] = Field(default_factory=dict)
    model: str | None = None
    err_msg: str | None = None


def _message_text(content: Any, budget: safe_pickle.Budget) -> str:
    if isinstance(content, str):
        budget.take(len(content))
        return content
    if isinstance(content, list | tuple):
        parts = []
        for part in content:
            part = _dict(part) or part
            if isinstance(part, dict):
                text = _str(part.get("text"))
                parts.append(text if text is not None else f"[{_str(part.get('type')) or 'part'}]")
            elif isinstance(part, str):
                parts.append(part)
            budget.take(len(parts[-1]) if parts else 0)
        return "\n".join(parts)
    return ""


def _chat(messages: Any, budget: safe_pickle.Budget) -> list[dict[str, str]]:
    """The LLM conversation as [{role, text}]; plain strings alternate system, user, assistant, user...

    The texts are copied out (joined, then stored as JSON): a message the pickle shares a thousand times
    is charged a thousand times to the step's budget (SafePickleError past it: the step is refused)."""
    if not isinstance(messages, list | tuple):
        return []
    out = []
    for i, m in enumerate(messages):
        as_dict = _dict(m)
        if as_dict:
            role = _str(as_dict.get("role")) or "unknown"
            text = _message_text(as_dict.get("content", as_dict.get("message")), budget)
        else:
            role = "system" if i == 0 else ("user" if i % 2 == 1 else "assistant")
            text = _message_text(m, budget)
        out.append({"role": role, "text": text})
    return out


def _read_step(idx: int, obj: Any) -> _Step | None:
    if not isinstance(obj, safe_pickle.Inert):
        return None
    f = obj.fields
    if "action" not in f or "obs" not in f:
        return None
    obs = _dict(f.get("obs"))
    info = _dict(f.get("agent_info"))
    profiling = {
        k: t
        for k, v in _dict(f.get("profiling")).items()
        if isinstance(k, str) and (t := _num(v)) is not None
    }
    error = _str(obs.get("last_action_error"))
    return _Step(
        idx=idx,
        action=_str(f.get("action")),
        think=_str(info.get("think")),
        chat=_chat(info.get("chat_messages"), safe_pickle.Budget()),
        has_obs=bool(obs),
        url=_str(obs.get("url")),
        axtree=_str(obs.get("axtree_txt")),
        last_action_error=error.strip() if error and error.strip() else None,
        goal=_str(obs.get("goal")),
        reward=_num(f.get("reward")),
        terminated=f.get("terminated") if isinstance(f.get("terminated"), bool) else None,
        truncated=f.get("truncated") if isinstance(f.get("truncated"), bool) else None,
        profiling=profiling,
        model=_str(_dict(info.get("chat_model_args")).get("model_name")),
        err_msg=_str(info.get("err_msg")),
    )


def _thought(step: _Step) -> str | None:
    """agent_info.think, else the accepted answer's text outside its <action> block."""
    if step.think and step.think.strip():
        return step.think.strip()
    answers = [m["text"] for m in step.chat if m["role"] == "assistant"]
    if not answers:
        return None
    text = _THINK_TAGS.sub("", _ACTION_BLOCK.sub("", answers[-1])).strip()
    return text or None


# -- one episode -----------------------------------------------------------------------------------
def task_id_of(directory: Path, exp_args: dict[str, Any] | None = None) -> int | None:
    """The task id in the directory name, else in exp_args' task name. An id beyond the INTEGER column
    is no task id (the episode is then skipped with a problem, never a database error)."""
    names = [directory.name]
    if exp_args:
        names.append(_str(_dict(exp_args.get("env_args")).get("task_name")) or "")
    for name in names:
        match = _TASK_IN_NAME.search(name)
        if match and safe_files.task_id_ok(int(match.group(1))):
            return int(match.group(1))
    return None


def _read_summary(directory: Path, problems: list[Problem], task_id: int | None) -> dict[str, Any] | None:
    path = directory / "summary_info.json"
    if not _regular_file(path):
        return None
    try:
        data = json.loads(path.read_bytes())
    except (ValueError, UnicodeDecodeError, OSError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        problems.append(Problem(task_id=task_id, source_path=str(path), kind="bad_json",
                                message=f"{path.parent.name}/{path.name}: not valid JSON ({reason}); summary ignored"))  # fmt: skip
        return None
    if not isinstance(data, dict):
        problems.append(Problem(task_id=task_id, source_path=str(path), kind="bad_json",
                                message=f"{path.parent.name}/{path.name}: not a JSON object; summary ignored"))  # fmt: skip
        return None
    return data


def _exp_args(directory: Path) -> dict[str, Any]:
    path = directory / "exp_args.pkl"
    if not _regular_file(path):
        return {}
    try:
        return _dict(safe_pickle.load_path(path))
    except (safe_pickle.SafePickleError, OSError):
        return {}


def _goal_from_file(directory: Path) -> str | None:
    path = directory / "goal_object.pkl.gz"
    if not _regular_file(path):
        return None
    try:
        obj = safe_pickle.load_path(path)
    except (safe_pickle.SafePickleError, OSError):
        return None
    texts = [_str(_dict(p).get("text")) for p in (obj if isinstance(obj, list | tuple) else [obj])]
    return "\n".join(t for t in texts if t) or None


def _log_start(directory: Path) -> str | None:
    """Start time from the first line of experiment.log (machine-local time; used only for ordering)."""
    path = directory / "experiment.log"
    if not _regular_file(path):
        return None
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            match = _LOG_START.match(fh.readline())
    except OSError:
        return None
    return match.group(1) if match else None


def _package_versions(directory: Path) -> dict[str, str]:
    path = directory / "package_versions.txt"
    if not _regular_file(path):
        return {}
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return {}
    out = {}
    for line in lines:
        name, sep, version = line.strip().partition("==")
        if sep and (name.startswith("browsergym") or name in ("agentlab", "playwright")):
            out[name] = version
    return out


def _classify(
    summary: dict[str, Any] | None,
    steps: list[_Step],
    executed: list[StepRecord],
    answer: ParsedAction | None,
    unreadable: list[str],
    max_steps: int | None,
) -> tuple[str, str | None]:
    """(termination, termination_detail) of an episode."""
    err = _str((summary or {}).get("err_msg"))
    if err and err.strip():
        line = exception_line(err, _str((summary or {}).get("stack_trace")))
        if not err.lstrip().startswith(_UNCAUGHT_PREFIX):
            return "early_stop", line  # the agent gave up itself, e.g. unparsable LLM answers
        if line and line.startswith("KeyboardInterrupt"):
            return "interrupted", line
        return "error", line
    last = steps[-1] if steps else None
    terminated = (summary or {}).get("terminated") if summary else (last.terminated if last else None)
    truncated = (summary or {}).get("truncated") if summary else (last.truncated if last else None)
    if terminated is True:
        if answer is None and unreadable:
            return "none", "ended by the environment; unreadable: " + "; ".join(unreadable)
        if answer is None:
            # WebArena ends an episode by itself once a navigation/mutation goal is reached.
            return "answered", "the environment ended the episode without a message (goal reached)"
        if answer.verb == "infeasible":
            return "na_answer", "report_infeasible"
        return ("na_answer", "answered N/A") if is_na_answer(answer.answer) else ("answered", None)
    if truncated is True:
        limit = f" (max_steps {max_steps})" if max_steps else ""
        return "truncated", f"stopped at the step limit after {len(executed)} steps{limit}"
    if last is not None and not last.has_obs and last.action is None and (summary or executed):
        return "error", "the episode crashed: its last step has no observation"
    if summary is None:
        detail = "no summary_info.json"
        if unreadable:
            detail += "; unreadable: " + "; ".join(unreadable)
        return "interrupted", detail
    return "none", None


def read_episode(directory: str | Path, name: str | None = None) -> EpisodeRead:
    """Read one episode directory into a trajectory. Pure: touches no database; safe in a worker."""
    directory = Path(directory)
    episode = name or directory.name
    result = EpisodeRead(directory=str(directory))
    exp_args = _exp_args(directory)
    task_id = task_id_of(directory, exp_args)
    if task_id is None:
        result.problems.append(Problem(task_id=None, source_path=str(directory), kind="unknown_task",
                                       message=f"{directory.name}: no webarena.<id> in the name or exp_args; skipped"))  # fmt: skip
        return result
    problems = result.problems
    summary = _read_summary(directory, problems, task_id)

    step_files = sorted(
        (int(m.group(1)), p)
        for p in directory.iterdir()
        if (m := _STEP_FILE.match(p.name)) and os.path.lexists(p)
    )
    for idx, path in [(i, p) for i, p in step_files if not safe_files.is_regular(p)]:
        step_files.remove((idx, path))
        what = "a symbolic link, not followed" if path.is_symlink() else "not a regular file"
        problems.append(Problem(task_id=task_id, source_path=str(path), kind="bad_step_file",
                                message=f"{directory.name}/{path.name}: {what}; step skipped"))  # fmt: skip
    steps: list[_Step] = []
    unreadable: list[str] = []
    for idx, path in step_files:
        try:
            step = _read_step(idx, safe_pickle.load_path(path))
            reason = None if step is not None else "not a BrowserGym StepInfo"
        except safe_pickle.SafePickleError as exc:
            step, reason = None, str(exc)
        except OSError as exc:
            step, reason = None, f"cannot read ({exc.strerror or type(exc).__name__})"
        if step is None:
            unreadable.append(f"{path.name} ({reason})")
            problems.append(Problem(task_id=task_id, source_path=str(path), kind="bad_step_file",
                                    message=f"{directory.name}/{path.name}: {reason}; step skipped"))  # fmt: skip
            continue
        steps.append(step)

    by_idx = {s.idx: s for s in steps}
    executed: list[StepRecord] = []
    for s in steps:
        if not s.action or not s.action.strip():
            continue
        nxt = by_idx.get(s.idx + 1)
        parsed, sentence = parse_action(s.action, s.axtree)
        start = s.profiling.get("agent_start") or s.profiling.get("env_start")
        end = (nxt.profiling.get("env_stop") if nxt else None) or s.profiling.get("agent_stop")
        shot = directory / f"screenshot_step_{s.idx}.png"
        thought = _thought(s)
        obs = {}
        if s.axtree:
            obs["axtree"] = s.axtree
        if s.chat:
            obs["chat"] = orjson.dumps(s.chat).decode()
        executed.append(
            StepRecord(
                idx=s.idx, url=s.url, thought=thought, stated_action=stated_action(thought),
                executed_action=s.action, action=parsed, readable=sentence,
                error=nxt.last_action_error if nxt and nxt.has_obs else None,
                started_at=_timestamp(start),
                elapsed_s=(end - start) if start and end and end >= start else None,
                screenshot_path=str(shot.resolve()) if _regular_file(shot) else None, observations=obs,
            )
        )  # fmt: skip

    env_args = _dict(exp_args.get("env_args"))
    max_steps = env_args.get("max_steps") if isinstance(env_args.get("max_steps"), int) else None
    # The last answer call of the episode: parsed once, for the ending and the final answer.
    answer = next((a for s in reversed(executed) if (a := answer_call(s.executed_action))), None)
    termination, detail = _classify(summary, steps, executed, answer, unreadable, max_steps)
    if not steps and not step_files and termination == "interrupted":
        detail = "no summary_info.json and no step file"

    reward = _num((summary or {}).get("cum_reward"))
    if (
        reward is None
        and steps
        and steps[-1].action is None
        and (steps[-1].terminated or steps[-1].truncated)
    ):
        reward = steps[-1].reward
    success = None if reward is None or termination in ("error", "interrupted") else reward >= 1.0

    starts = [v for s in steps for k, v in s.profiling.items() if k == "env_start" and v > 0]
    stops = [v for s in steps for v in s.profiling.values() if v > 0]
    started = min(starts) if starts else None
    result.trajectory = TrajectoryRecord(
        task_id=task_id, episode=episode, final_answer=answer.answer if answer else None,
        reward=reward, success=success, termination=termination, termination_detail=detail,
        goal=next((s.goal for s in steps if s.goal), None) or _goal_from_file(directory),
        source_path=str(directory.resolve()), started_at=_timestamp(started),
        elapsed_s=(max(stops) - started) if started and stops and max(stops) > started else None,
        order_key=_log_start(directory) or (str(_timestamp(started)) if started else None), steps=executed,
        # The terminal step file observes the page after the last action (it is not a step row).
        final_url=steps[-1].url if steps and not steps[-1].action and steps[-1].has_obs and executed else None,
    )  # fmt: skip
    agent_args = _dict(exp_args.get("agent_args"))
    chat_args = _dict(agent_args.get("chat_model_args"))
    result.model = next((s.model for s in steps if s.model), None) or _str(chat_args.get("model_name"))
    agent_name = _str(agent_args.get("agent_name"))
    result.agent = agent_name.removesuffix("Args") if agent_name else None
    config = {k: chat_args[k] for k in ("model_name", "temperature", "max_new_tokens", "max_total_tokens")
              if isinstance(chat_args.get(k), str | int | float)}  # fmt: skip
    if max_steps:
        config["max_steps"] = max_steps
    versions = _package_versions(directory)
    if versions:
        config["packages"] = versions
    result.config = config or None
    return result


# -- the whole directory ---------------------------------------------------------------------------
def _is_episode(directory: Path) -> bool:
    return any((directory / m).is_file() for m in _EPISODE_MARKERS) or any(
        _STEP_FILE.match(p.name) for p in directory.iterdir()
    )


def find_episodes(root: Path) -> list[tuple[str, Path]]:
    """(episode name, directory) under root: root itself, its subdirectories, or theirs (a study)."""
    if _is_episode(root):
        return [(root.name, root)]
    found = []
    for child in sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink()):
        if _is_episode(child):
            found.append((child.name, child))
            continue
        for grand in sorted(p for p in child.iterdir() if p.is_dir() and not p.is_symlink()):
            if _is_episode(grand):
                found.append((f"{child.name}/{grand.name}", grand))
    return found


def _step_bytes(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.iterdir() if _STEP_FILE.match(p.name))


def read_episodes(
    episodes: Sequence[tuple[str, Path]],
    workers: int | None = None,
    on_progress: ProgressCallback | None = None,
) -> list[EpisodeRead]:
    """Read every episode, in a process pool when there is enough data to pay for it (order kept)."""
    if workers is None:
        big = sum(_step_bytes(d) for _, d in episodes) >= _PARALLEL_MIN_BYTES
        workers = min(2, os.cpu_count() or 1) if big else 1
    return map_chunks(
        _read_episode_chunk, [(name, str(d)) for name, d in episodes], workers=workers, chunk_size=1,
        total=len(episodes), on_progress=on_progress,
    )  # fmt: skip


def _read_episode_chunk(chunk: list[tuple[str, str]]) -> list[EpisodeRead]:
    return [_read_episode_or_problem(directory, name) for name, directory in chunk]


def _read_episode_or_problem(directory: str, name: str) -> EpisodeRead:
    """read_episode, with anything it did not foresee in hostile input as a problem of this episode."""
    try:
        return read_episode(directory, name)
    except Exception as exc:  # one episode must never fail the whole import
        reason = f"{type(exc).__name__}: {first_line(exc)}"[:300]
        problem = Problem(task_id=task_id_of(Path(directory)), source_path=directory, kind="bad_episode",
                          message=f"{Path(directory).name}: cannot be read ({redact_paths(reason)}); skipped")  # fmt: skip
        return EpisodeRead(directory=directory, problems=[problem])


def _most_common(values: Sequence[str | None]) -> str | None:
    counted = Counter(v for v in values if v)
    return counted.most_common(1)[0][0] if counted else None


def import_agentlab(
    store: Store,
    path: str | Path,
    run: str,
    *,
    agent: str | None = None,
    model: str | None = None,
    paradigm: str = "step_by_step",
    workers: int | None = None,
    on_progress: ProgressCallback | None = None,
) -> ImportSummary:
    """Import a directory of BrowserGym/AgentLab episodes as run `run` (replacing a run of that name)."""
    root = Path(path)
    if not root.exists():
        raise InputError(root, "no such directory")
    if not root.is_dir():
        raise InputError(root, "not a directory (give the folder holding the episode directories)")
    episodes = find_episodes(root)
    if not episodes:
        raise InputError(
            root, "no BrowserGym/AgentLab episode found (directories with summary_info.json or step_*.pkl.gz)"
        )
    reads = read_episodes(episodes, workers=workers, on_progress=on_progress)

    # With task datasets loaded, an id outside them is a problem; without, any id is accepted.
    known = {task_id for (task_id,) in store.query("SELECT task_id FROM tasks")} or None
    trajectories, problems = [], []
    for r in reads:
        problems.extend(r.problems)
        t = r.trajectory
        if t is None:
            continue
        if known is not None and t.task_id not in known:
            problems.append(Problem(task_id=t.task_id, source_path=r.directory, kind="unknown_task",
                                    message=f"{Path(r.directory).name}: task {t.task_id} is not a WebArena task; skipped"))  # fmt: skip
            continue
        trajectories.append(t)
    meta = RunMeta(
        name=run, source_format=SOURCE_FORMAT, source_path=str(path),
        agent=agent or _most_common([r.agent for r in reads]), model=model or _most_common([r.model for r in reads]),
        paradigm=paradigm, config=next((r.config for r in reads if r.config), None),
        n_tasks=len({t.task_id for t in trajectories}),
    )  # fmt: skip
    # The episode's own reward is the run's verdict for the task until it is scored otherwise.
    evaluations = source_verdict_rows(run, trajectories, "source-reward")
    import_run(
        store, meta, trajectories, problems,
        extra_writes=[lambda cur: insert_rows(cur, "evaluations", evaluations)],
    )  # fmt: skip
    return ImportSummary(
        run=run, n_episodes=len(trajectories), n_tasks=meta.n_tasks or 0,
        n_steps=sum(t.n_steps for t in trajectories),
        terminations=dict(Counter(t.termination for t in trajectories)), n_problems=len(problems),
        problems=problems,
    )  # fmt: skip
