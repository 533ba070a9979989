"""Import original WebArena `render_<task_id>.html` files (RenderHelper output) as one run.

The render holds, per step, the URL, the accessibility-tree observation, the raw model output, the
action repr and the readable `parsed_action`; its header `<pre>` holds the task config as Python repr.
PASS/FAIL is never in the render: it comes from the run's logs (`[Result] (PASS|FAIL) <config>`),
either per-task logs (`log_files/task_<id>_<timestamp>.log`) or one `merge_log.txt`.

Model output is pasted into the HTML unescaped, so it is hostile markup: a `<style>` or `<title>`
in a tool result swallows the rest of the file (41 of the 812 babelcloud renders), and pasted
documents bring their own `<html>`/`<select>`/`<template>` tags. Nothing is HTML-escaped either, so
`&amp;` in a file is what the model wrote. Before parsing with a real HTML parser we therefore escape
the whole body (`&` and `<`) and turn back into markup only the exact sequences RenderHelper writes;
the pasted markup and entities then stay the text they were. Everything is read through the parser
or plain string search, never with regex over the document.
"""

from __future__ import annotations

import ast
import codecs
import os
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
from selectolax.lexbor import LexborHTMLParser, LexborNode

from core.errors import InputError, Problem
from core.files import safe_files
from core.files.safe_files import task_id_ok
from core.ingest.records import Paradigm, RunMeta, StepRecord, TrajectoryRecord
from core.ingest.tasks import ensure_tasks
from core.ingest.tool_transcript import (
    TRANSCRIPT,
    CallTiming,
    apply_timings,
    is_timing_line,
    is_tool_transcript,
    read_call_timings,
    transcript_steps,
)
from core.ingest.writer import import_run
from core.measure.action_grammar import ParsedAction, is_na_answer
from core.measure.action_grammar.webarena import (
    EARLY_STOP_PREFIX,
    ERROR_STOP_PREFIX,
    describe,
    element_from_axtree,
    parse_webarena_action,
    stated_action,
    valid_text,
)
from core.progress import ProgressCallback
from core.store import Store, insert_rows, utcnow

SOURCE_FORMAT = "webarena-render"
# ASCII digits only (`\d` takes any script's digits), and few enough that int() is cheap; ids beyond
# the INTEGER column are refused where they are read (safe_files.task_id_ok).
_RENDER_NAME = re.compile(r"^render_([0-9]{1,12})\.html$")
_TASK_LOG_NAME = re.compile(r"^task_([0-9]{1,12})_.*\.log$")
_CONFIG_ID = re.compile(r"(?<![0-9])([0-9]{1,12})\.json\s*$")
_LOG_TIME = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3})")
_SESSION_MODEL = re.compile(r"Starting new session \(model: ([^)\s]+)\)")
_HEADER_KEY = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*): ?(.*)$")

# The exact markup RenderHelper writes around a step's parts (upstream, and the ranked-candidates
# variant). Everything else after the header is text pasted from the page or the model: the body is
# escaped whole, then only these sequences are turned back into markup (plain string replacement,
# linear in the file size; no regex over the document). Order matters where two share a tag: the
# end of a step's last part comes before the end of its previous action, and a context before the
# bare class prefix.
_HARNESS_SEQUENCES = (
    "</pre></div></div>\n</div>", "</pre></div></div>", "</pre></div><div class='action_object'",
    "</pre></div><div class='parsed_action'", "</pre><div>",
    "</div>\n<div class='predict_action'>", "</div>\n<div class='top_actions'>",
    "</strong> <div class='raw_parsed_prediction'", "</strong><div class='raw_parsed_prediction'",
    "<strong>Rank #", "<div class='state_obv'><pre>", "style='background-color:grey'><pre>",
    "style='background-color:yellow'><pre>", "<h2>New Page</h2>", "<h3 class='url'><a href=", "</a></h3>",
    "<img src='data:image/",
    *(f"<div class='{kind}'" for kind in (
        "state_obv", "prev_action", "predict_action", "raw_parsed_prediction", "action_object",
        "parsed_action", "top_actions",
    )),
)  # fmt: skip


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;")


def neutralise(body: str) -> str:
    """Body markup in which only RenderHelper's own tags are tags; pasted markup and entities are text."""
    text = _escape(body)
    for sequence in _HARNESS_SEQUENCES:
        escaped = _escape(sequence)
        if escaped in text:
            text = text.replace(escaped, sequence)
    return text


_STEP_PARTS = (
    "h3.url, div.state_obv, div.prev_action, div.predict_action, div.raw_parsed_prediction, "
    "div.action_object, div.parsed_action"
)
# The harness's feedback after a failed step, shown as the next step's "previous action".
_STEP_ERROR_PREFIXES = ("The previous prediction you issued", "Attempt to perfom", "Attempt to perform")
# Header values longer or deeper than this are kept as text, not literal_eval'd (real ones: ≤ 5.3 KB, depth 3).
_MAX_LITERAL = 100_000
_MAX_DEPTH = 20
# Header values RenderHelper writes with str(), never repr: kept as text even when they look like a literal.
_TEXT_KEYS = frozenset({"intent", "intent_template", "start_url", "storage_state"})


class NotARender(ValueError):
    """The file is HTML but not a RenderHelper render."""


@dataclass
class RenderStep:
    url: str | None = None
    observation: str | None = None
    prev_action: str | None = None
    raw_output: str | None = None
    parsed_action: str | None = None
    n_candidates: int = 0


@dataclass
class Render:
    header: dict[str, Any]
    steps: list[RenderStep]


@dataclass
class LogResult:
    task_id: int
    passed: bool
    log_path: str
    elapsed_s: float | None = None
    # A tool-using agent's calls as a per-task log records them (issued at, think and execution time).
    calls: list[CallTiming] = field(default_factory=list)


@dataclass
class RenderImportSummary:
    run: str
    n_files: int = 0
    n_tasks: int = 0
    n_steps: int = 0
    n_observe: int = 0  # steps of kind observe (a tool-using agent's screenshots, waits, ...)
    n_pass: int = 0
    n_fail: int = 0
    n_without_log: int = 0
    terminations: Counter = field(default_factory=Counter)
    problems: list[Problem] = field(default_factory=list)
    log_files: int = 0


# -- the render file ---------------------------------------------------------------------------------


def _text(node: LexborNode | None) -> str | None:
    return None if node is None else node.text(deep=True)


def _first_pre(node: LexborNode) -> LexborNode | None:
    # The state_obv div is never closed, so it contains every later step: only look at its first child.
    child = node.child
    if child is not None and child.tag == "pre":
        return child
    return node.css_first("pre")


def _depth(text: str) -> int:
    depth = deepest = 0
    for ch in text:
        if ch in "[{(":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]})":
            depth -= 1
    return deepest


def _literal(value: str) -> Any:
    """A header value: Python repr (single quotes, True/None) when it parses, else the text itself."""
    stripped = value.strip()
    if (
        not stripped
        or len(stripped) > _MAX_LITERAL
        or stripped[0] not in "[{('\"-0123456789TFN"
        or _depth(stripped) > _MAX_DEPTH
    ):
        return stripped
    try:
        return _jsonable(ast.literal_eval(stripped))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return stripped


def _jsonable(value: Any) -> Any:
    """What the store can hold as JSON: str keys, no lone surrogates, integers within 64 bits."""
    if isinstance(value, dict):
        return {_jsonable(str(k)): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, set | frozenset):
        return sorted((_jsonable(v) for v in value), key=repr)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, str):
        return valid_text(value)
    if isinstance(value, bool) or value is None or isinstance(value, float):
        return value
    if isinstance(value, int):
        return value if -(2**63) <= value < 2**64 else str(value)
    return repr(value)


def parse_header(text: str) -> dict[str, Any]:
    """`key: value` lines (values as Python repr); a line without `key:` continues the previous value."""
    # Lines are collected per key and joined once: `+=` on a dict value copies the whole value per
    # line (an 18 MB header of continuation lines took minutes).
    raw: dict[str, list[str]] = {}
    last = None
    for line in text.splitlines():
        match = _HEADER_KEY.match(line)
        if match and (match.group(1) not in raw):
            last = match.group(1)
            raw[last] = [match.group(2)]
        elif last is not None:
            raw[last].append(line)
    joined = {key: "\n".join(lines) for key, lines in raw.items()}
    return {key: value.strip() if key in _TEXT_KEYS else _literal(value) for key, value in joined.items()}


def decode_render(data: bytes) -> tuple[str, str]:
    """(text, encoding): UTF-8 as RenderHelper writes it (a BOM's encoding when there is one), else
    cp1252, what upstream's `open()` without an encoding writes on Windows."""
    for bom, encoding in (
        (codecs.BOM_UTF8, "utf-8"),
        (codecs.BOM_UTF16_LE, "utf-16"),
        (codecs.BOM_UTF16_BE, "utf-16"),
    ):
        if data.startswith(bom):
            return data.decode(encoding, errors="replace").lstrip("\ufeff"), encoding
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace"), "cp1252"


def parse_render(html: str) -> Render:
    """The header config and the steps of one render file; NotARender when it is some other HTML."""
    _, body_tag, body = html.partition("<body>")
    if not body_tag:
        raise NotARender("no <body> element")
    # The header <pre> comes first in the body; inside it every character is text.
    start = body.find("<pre>")
    end = body.find("</pre>", start)
    if start < 0 or end < 0 or body[:start].strip():
        raise NotARender("no task config header (<pre> at the start of the body)")
    header = parse_header(body[start + len("<pre>") : end])
    if "task_id" not in header and "intent" not in header:
        raise NotARender("no task config header (<pre> with task_id and intent)")
    rest = body[end + len("</pre>") :]
    closing = rest.rfind("</body>")
    tree = LexborHTMLParser(f"<body>{neutralise(rest if closing < 0 else rest[:closing])}</body>")
    steps: list[RenderStep] = []
    for node in tree.css(_STEP_PARTS):
        kind = node.attributes.get("class")
        if kind == "url":
            text = (_text(node) or "").strip()
            steps.append(RenderStep(url=text.removeprefix("URL:").strip() or None))
            continue
        if not steps:  # harness parts before any step heading: not from this harness
            continue
        step = steps[-1]
        if kind == "state_obv":
            step.observation = _text(_first_pre(node))
        elif kind == "prev_action":
            step.prev_action = _text(node)
        elif kind == "predict_action":
            step.n_candidates += 1
        elif step.n_candidates > 1:
            continue  # a variant renderer shows ranked candidates: the first one is the executed one
        elif kind == "raw_parsed_prediction":
            step.raw_output = _text(node)
        elif kind == "parsed_action":
            step.parsed_action = (_text(node) or "").strip()
    return Render(header=header, steps=steps)


# -- logs and run metadata -------------------------------------------------------------------------


def _log_time(line: str) -> datetime | None:
    match = _LOG_TIME.match(line)
    if not match:
        return None
    try:
        return datetime.strptime(f"{match.group(1)}.{match.group(2)}", "%Y-%m-%d %H:%M:%S.%f")
    except ValueError:  # an impossible date (month 13, 25 o'clock): no time, not a failed import
        return None


def _task_in_range(task: int | None) -> int | None:
    return task if task is not None and task_id_ok(task) else None


def read_log_results(
    paths: Sequence[Path], problems: list[Problem] | None = None, root: Path | None = None
) -> tuple[dict[int, LogResult], Counter]:
    """`[Result] (PASS|FAIL)` per task (the last one wins) and the models the logs name.

    The task id comes from a per-task log's file name, else from the result line's config path
    (`.../<id>.json`). Elapsed time runs from the task's `[Config file]` line to its result.
    """
    results: dict[int, LogResult] = {}
    models: Counter = Counter()
    for path in sorted(paths):
        name_match = _TASK_LOG_NAME.match(path.name)
        file_task = _task_in_range(int(name_match.group(1))) if name_match else None
        started: dict[int | None, datetime | None] = {}
        try:
            handle = safe_files.open_text(path, "log", root=root)
        except InputError as exc:
            if problems is not None:
                problems.append(Problem(task_id=None, source_path=str(path), kind="refused_file",
                                        message=f"{path}: log refused: {exc.reason}"))  # fmt: skip
            continue
        tool_lines: list[str] = []
        with handle:
            for line in handle:
                if file_task is not None and is_timing_line(line):
                    tool_lines.append(line)
                if "[Config file]" in line:
                    config = _CONFIG_ID.search(line)
                    task = file_task if file_task is not None else _config_task(config)
                    started[task] = _log_time(line)
                elif "[Result] (" in line:
                    at = line.index("[Result] (") + len("[Result] (")
                    verdict = line[at : at + 4]
                    if verdict not in ("PASS", "FAIL"):
                        continue
                    config = _CONFIG_ID.search(line[at + 5 :])
                    task = file_task if file_task is not None else _config_task(config)
                    if task is None:
                        continue
                    start, end = started.get(task), _log_time(line)
                    elapsed = (end - start).total_seconds() if start and end else None
                    results[task] = LogResult(task, verdict == "PASS", str(path), elapsed)
                elif "Starting new session (model:" in line:
                    model = _SESSION_MODEL.search(line)
                    if model:
                        models[model.group(1)] += 1
        found = results.get(file_task) if file_task is not None else None
        if tool_lines and found is not None and found.log_path == str(path):
            found.calls = read_call_timings(tool_lines)
    return results, models


def _config_task(match: re.Match | None) -> int | None:
    return _task_in_range(int(match.group(1))) if match else None


def find_logs(root: Path) -> list[Path]:
    """Logs of a run: `log_files/*.log` and `merge_log.txt` anywhere under root (or root itself)."""
    if root.is_file():
        return [root]
    found = [p for p in root.rglob("*.log") if p.parent.name == "log_files"]
    found += list(root.rglob("merge_log.txt"))
    return sorted(set(found))


def _all_logs(root: Path) -> list[Path]:
    if root.is_file():
        return [root]
    return sorted({*root.rglob("*.log"), *root.rglob("merge_log.txt")})


def read_error_file(path: Path, root: Path | None = None) -> dict[int, str]:
    """`error.txt` written by run.py: the last `[Unhandled Error]` line recorded per task config."""
    errors: dict[int, str] = {}
    task = None
    with safe_files.open_text(path, "error file", root=root) as handle:
        for line in handle:
            if line.startswith("[Config file]:"):
                task = _config_task(_CONFIG_ID.search(line))
            elif line.startswith("[Unhandled Error]") and task is not None:
                errors[task] = line.strip()[:500]
    return errors


def _read_json_config(path: Path, problems: list[Problem], root: Path) -> Any:
    try:
        return orjson.loads(safe_files.read_bytes(path, "run config", root=root))
    except InputError as exc:
        problems.append(Problem(task_id=None, source_path=str(path), kind="refused_file",
                                message=f"{path}: config refused: {exc.reason}"))  # fmt: skip
        return None
    except (orjson.JSONDecodeError, OSError) as exc:
        problems.append(Problem(task_id=None, source_path=str(path), kind="bad_json",
                                message=f"{path}: not valid JSON ({exc})"))  # fmt: skip
        return None


# -- from render to trajectory -----------------------------------------------------------------------


def _step_record(idx: int, step: RenderStep, next_step: RenderStep | None) -> StepRecord:
    raw = step.raw_output if step.raw_output and step.raw_output.strip() else None
    executed = step.parsed_action or None
    action = parse_webarena_action(executed) if executed else None
    if action is None and executed:
        action = ParsedAction(raw=executed, verb="unknown")
    if action is not None and action.element_id and not action.element_role:
        role, label = element_from_axtree(step.observation, action.element_id)
        action.element_role = role
        action.element_label = action.element_label or label
    error = None
    if next_step is not None and next_step.prev_action:
        prev = next_step.prev_action.strip()
        if prev.startswith(_STEP_ERROR_PREFIXES):
            error = prev
    return StepRecord(
        idx=idx,
        url=step.url,
        thought=raw,
        stated_action=stated_action(raw),
        executed_action=executed,
        action=action,
        readable=describe(action) if action else None,
        error=error,
        observations={"axtree": step.observation} if step.observation else {},
    )


def _termination(steps: list[StepRecord], crash: str | None) -> tuple[str, str | None, str | None]:
    """(termination, detail, final answer) from the last step, per the render README."""
    if not steps:
        return "interrupted", "no step was rendered (header only)", None
    last = steps[-1].action
    if last is None or last.verb != "answer":
        if crash:
            return "error", crash, None
        return "interrupted", f"the render ends after {len(steps)} steps without a stop action", None
    answer = last.answer if last.answer is not None else ""
    if answer.startswith(EARLY_STOP_PREFIX):
        return "early_stop", answer[len(EARLY_STOP_PREFIX) :].strip(), None
    if answer.startswith(ERROR_STOP_PREFIX):
        return "error", answer[len(ERROR_STOP_PREFIX) :].strip(), None
    if is_na_answer(answer):
        return "na_answer", None, answer
    return "answered", None, answer


def _with_tool_calls(render: Render, harness: list[StepRecord]) -> list[StepRecord]:
    """The harness's steps, each render step whose output is a tool-using agent's session replaced by one
    step per tool call (core.ingest.tool_transcript); the harness's own stop stays as the last step
    when the session has no answer call. Other renders come back unchanged."""
    if not any(is_tool_transcript(s.raw_output) for s in render.steps):
        return harness
    steps: list[StepRecord] = []
    for step, record in zip(render.steps, harness, strict=True):
        if not is_tool_transcript(step.raw_output):
            steps.append(record.model_copy(update={"idx": len(steps)}))
            continue
        calls = transcript_steps(step.raw_output or "", len(steps), step.url)
        if calls and step.observation:
            calls[0].observations["axtree"] = step.observation
        steps += calls
        answered = any(c.action and c.action.verb == "answer" for c in calls)
        if record.action is not None and record.action.verb == "answer" and not answered:
            steps.append(record.model_copy(update={"idx": len(steps), "thought": None, "stated_action": None,
                                                   "url": None, "observations": {}}))  # fmt: skip
    return steps


def _time_tool_calls(trajectory: TrajectoryRecord, log: LogResult | None, problems: list[Problem]) -> None:
    """Steps made from tool calls take their timings from the task's own log (`task_<id>_*.log`), which
    records when each call was issued and how long it thought and ran; a log whose calls differ from
    the transcript's sets none."""
    if log is None or not log.calls or not any(TRANSCRIPT in s.observations for s in trajectory.steps):
        return
    if not apply_timings(trajectory.steps, log.calls):
        problems.append(Problem(task_id=trajectory.task_id, source_path=log.log_path, kind="log_mismatch",
                                message=f"{log.log_path}: its tool calls differ from the render's; steps untimed"))  # fmt: skip


def render_trajectory(
    task_id: int, episode: str, path: Path, render: Render, crash: str | None, log: LogResult | None
) -> TrajectoryRecord:
    harness = [
        _step_record(i, s, render.steps[i + 1] if i + 1 < len(render.steps) else None)
        for i, s in enumerate(render.steps)
    ]
    termination, detail, answer = _termination(harness, crash)
    steps = _with_tool_calls(render, harness)
    intent = render.header.get("intent")
    return TrajectoryRecord(
        task_id=task_id,
        episode=episode,
        final_answer=answer,
        success=None if log is None else log.passed,
        termination=termination,
        termination_detail=detail,
        goal=intent if isinstance(intent, str) else None,
        task_config=render.header,
        source_path=str(path),
        elapsed_s=None if log is None else log.elapsed_s,
        order_key=episode,
        steps=steps,
    )


def find_renders(root: Path) -> list[Path]:
    return sorted(root.rglob("render_*.html"))


def _episodes(paths: list[tuple[int, Path]], root: Path) -> dict[Path, str]:
    """'0' for a task's only render; the render's folder (relative to root) when a task has several."""
    per_task = Counter(task for task, _ in paths)
    return {
        path: "0" if per_task[task] == 1 else (path.parent.relative_to(root).as_posix() or ".")
        for task, path in paths
    }


def import_webarena_render(
    store: Store,
    directory: str | Path,
    run: str,
    *,
    logs: str | Path | None = None,
    agent: str | None = None,
    model: str | None = None,
    paradigm: Paradigm = "step_by_step",
    on_progress: ProgressCallback | None = None,
) -> RenderImportSummary:
    """Import every `render_<id>.html` under `directory` as run `run` (replacing a run of that name)."""
    root = Path(directory)
    if not root.is_dir():
        raise InputError(root, "not a directory")
    problems: list[Problem] = []
    named: list[tuple[int, Path]] = []
    for path in find_renders(root):
        match = _RENDER_NAME.match(path.name)
        if not match:
            problems.append(Problem(task_id=None, source_path=str(path), kind="bad_file_name",
                                    message=f"{path}: not named render_<task_id>.html"))  # fmt: skip
            continue
        if not task_id_ok(int(match.group(1))):
            problems.append(Problem(task_id=None, source_path=str(path), kind="bad_file_name",
                                    message=f"{path}: task id out of range"))  # fmt: skip
            continue
        named.append((int(match.group(1)), path))
    if not named:
        raise InputError(root, "no render_<task_id>.html files found")

    if logs is not None:
        log_root = Path(logs)
        if not log_root.exists():
            raise InputError(log_root, "no such file or directory")
        log_paths = _all_logs(log_root)
        if not log_paths:
            raise InputError(log_root, "no *.log or merge_log.txt files found")
    else:
        log_paths = find_logs(root)
    log_results, log_models = read_log_results(log_paths, problems, log_root if logs is not None else root)

    # Run metadata written next to the renders by run.py.
    folders = sorted({p.parent for _, p in named})
    config = None
    crashes: dict[Path, dict[int, str]] = {}
    for folder in folders:
        if config is None and os.path.lexists(folder / "config.json"):
            config = _read_json_config(folder / "config.json", problems, root)
        if os.path.lexists(folder / "error.txt"):
            try:
                crashes[folder] = read_error_file(folder / "error.txt", root)
            except InputError as exc:
                problems.append(Problem(task_id=None, source_path=str(folder / "error.txt"),
                                        kind="refused_file", message=f"{exc}"))  # fmt: skip
    if model is None and isinstance(config, dict) and isinstance(config.get("model"), str):
        model = config["model"]
    if model is None and log_models:
        model = log_models.most_common(1)[0][0]

    ensure_tasks(store)
    known = {t for (t,) in store.query("SELECT task_id FROM tasks")}
    episodes = _episodes(named, root)
    trajectories: list[TrajectoryRecord] = []
    summary = RenderImportSummary(run=run, n_files=len(named), log_files=len(log_paths))
    for done, (task_id, path) in enumerate(named):
        if on_progress:
            on_progress(done, len(named))
        try:
            html, encoding = decode_render(safe_files.read_bytes(path, "render", root=root))
            render = parse_render(html)
        except InputError as exc:  # a link, a FIFO, a file beyond the render limit
            problems.append(Problem(task_id=task_id, source_path=str(path), kind="refused_file",
                                    message=f"{exc}"))  # fmt: skip
            continue
        except NotARender as exc:
            problems.append(Problem(task_id=task_id, source_path=str(path), kind="not_a_render",
                                    message=f"{path}: not a WebArena render file ({exc})"))  # fmt: skip
            continue
        except OSError as exc:
            problems.append(Problem(task_id=task_id, source_path=str(path), kind="unreadable",
                                    message=f"{path}: cannot be read ({exc.strerror or exc})"))  # fmt: skip
            continue
        if encoding != "utf-8":
            problems.append(Problem(task_id=task_id, source_path=str(path), kind="encoding",
                                    message=f"{path}: not UTF-8; read as {encoding}"))  # fmt: skip
        header_id = render.header.get("task_id")
        if isinstance(header_id, int) and header_id != task_id:
            problems.append(Problem(task_id=task_id, source_path=str(path), kind="task_id_mismatch",
                                    message=f"{path}: header says task {header_id}; the file name wins"))  # fmt: skip
        if known and task_id not in known:
            problems.append(Problem(task_id=task_id, source_path=str(path), kind="unknown_task",
                                    message=f"{path}: task {task_id} is not in the task dataset"))  # fmt: skip
        missing = [i for i, s in enumerate(render.steps) if s.parsed_action is None]
        if missing:
            problems.append(Problem(task_id=task_id, source_path=str(path), kind="damaged_step",
                                    message=f"{path}: step(s) {missing} have no parsed_action"))  # fmt: skip
        crash = crashes.get(path.parent, {}).get(task_id)
        trajectory = render_trajectory(task_id, episodes[path], path, render, crash, log_results.get(task_id))
        _time_tool_calls(trajectory, log_results.get(task_id), problems)
        trajectories.append(trajectory)
    if on_progress:
        on_progress(len(named), len(named))

    rendered = {t.task_id for t in trajectories}
    for task_id in sorted(set(log_results) - rendered):
        problems.append(Problem(task_id=task_id, source_path=log_results[task_id].log_path,
                                kind="missing_render",
                                message=f"{log_results[task_id].log_path}: a result for task {task_id} "
                                "but no render file"))  # fmt: skip
    now = utcnow()
    evaluations = [
        {"run": run, "task_id": r.task_id, "status": "success" if r.passed else "failure",
         "score": 1.0 if r.passed else 0.0, "source": "source-log", "evaluated_at": now}
        for r in sorted(log_results.values(), key=lambda r: r.task_id)
    ]  # fmt: skip
    meta = RunMeta(
        name=run, source_format=SOURCE_FORMAT, source_path=str(directory), agent=agent, model=model,
        paradigm=paradigm, config=config, n_tasks=len(rendered),
        notes=f"PASS/FAIL from {len(log_paths)} log file(s)" if log_paths else "no logs: success unknown",
    )  # fmt: skip
    import_run(
        store,
        meta,
        trajectories,
        problems,
        extra_writes=[lambda cur: insert_rows(cur, "evaluations", evaluations)],
    )

    summary.n_tasks = len(rendered)
    summary.n_steps = sum(len(t.steps) for t in trajectories)
    summary.n_observe = sum(s.kind == "observe" for t in trajectories for s in t.steps)
    summary.n_pass = sum(1 for r in log_results.values() if r.passed)
    summary.n_fail = sum(1 for r in log_results.values() if not r.passed)
    summary.n_without_log = len(rendered - set(log_results))
    summary.terminations = Counter(t.termination for t in trajectories)
    summary.problems = problems
    return summary
