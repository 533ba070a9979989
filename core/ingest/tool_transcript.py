"""Split a tool-using agent's session transcript into steps: one step per tool call.

Some runs record a whole agent session as one render step (the babelcloud renders: Claude driving a
browser through the GBOX MCP server). Its `predict_action` text is the session as the agent wrote it:

    I'll close this welcome dialog first.                                  <- reasoning (the thought)
    [tool] mcp__gbox-browser__click: {'boxId': '…', 'target': 'X button'}  <- the call (a Python dict)
    [result] Click action completed successfully {'type': 'image', …}      <- what the tool returned
    [error] Error: 500 Internal server error                               <- or its error
    [complete] <answer>                                                    <- the harness's echo of the answer

Rules, from the 812 babelcloud renders checked against their per-task logs (which hold every result
whole): a step's thought is the prose since the previous call's result; calls issued back to back
(parallel calls) get their results in the order they were issued, except that a sub-agent's call
(`Task`) waits until the calls made inside it have theirs. The transcript cuts every result to its
first 200 characters, so a result's text continues onto the next lines only when that cut lands at a
line end (1,344 of the logs' 23,774 results are multi-line and longer than 200 characters, 6 are
multi-line and shorter: their later lines read as the next step's thought). Screenshots inside results
(`{'type': 'image', 'source': {…}}`, the bytes already removed by the harness, or inline base64) are
dropped and counted. Every step keeps the transcript text it came from (`raw`): the steps' raw texts,
joined, are the whole transcript again.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any

from core.ingest.records import StepRecord
from core.measure.action_grammar.tool_calls import announced_action, parse_tool_call

RESULT_CUT = 200  # the transcript keeps this many characters of each result
TRANSCRIPT = "transcript"  # the observation kind holding a step's part of the transcript
_TOOL = "[tool] "
_MARKERS = ("[tool] ", "[result] ", "[error] ", "[complete] ")
_TOOL_NAME = re.compile(r"\[tool\] ([A-Za-z_][\w.-]*): ")
_MARKER_LINE = re.compile(r"^\[(?:tool|result|error|complete)\] ", re.M)
_IMAGE_START = "{'type': 'image'"
# The block the GBOX harness writes for every screenshot, its bytes already removed (checked first).
_IMAGE_BLOCK = "{'type': 'image', 'source': {'data': '<image_bytes_removed>', 'media_type': 'image/png', 'type': 'base64'}}"
_BASE64 = re.compile(r"[A-Za-z0-9+/]{400,}={0,2}")
_MAX_ARGS = 200_000  # a call's arguments longer than this are kept as text, not literal_eval'd
_SUB_AGENT = "Task"


@dataclass
class TranscriptCall:
    """One tool call of a transcript, with the reasoning before it and what it returned."""

    thought: str | None
    tool: str
    args: dict[str, Any] | None  # None when the arguments are not a Python dict literal
    raw_args: str
    result: str | None = None  # the result text, screenshots dropped; None when none was recorded
    images: int = 0  # screenshots dropped from the result
    failed: bool = False  # the tool reported an error (`[error]`)
    completion: str | None = None  # `[complete]`: the harness's echo of the final answer
    raw: str = ""  # the transcript text this step came from
    start: int = field(default=0, repr=False)


def is_tool_transcript(text: str | None) -> bool:
    """The text holds at least one `[tool] name: {…}` call at the start of a line."""
    if not text or _TOOL not in text:
        return False
    return any(_TOOL_NAME.match(line) for line in text.splitlines() if line.startswith(_TOOL))


_LITERAL_CHARS = re.compile(r"[\\'\"{}\[\]()]")


def _literal_end(text: str, start: int) -> int:
    """End (exclusive) of the Python literal that opens at text[start] (a bracket): quotes and escapes
    respected, brackets counted; -1 when it never closes."""
    depth = 0
    quote = None
    pos = start
    search = _LITERAL_CHARS.search
    while (found := search(text, pos)) is not None:
        ch = found.group(0)
        pos = found.end()
        if quote:
            if ch == "\\":
                pos += 1
            elif ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch in "{[(":
            depth += 1
        elif ch in "}])":
            depth -= 1
            if depth == 0:
                return pos
    return -1


def _line_end(text: str, start: int) -> int:
    end = text.find("\n", start)
    return len(text) if end < 0 else end


def _at_marker(text: str, pos: int) -> bool:
    return text.startswith(_MARKERS, pos)


def _result_end(text: str, start: int) -> int:
    """End of a result's text that starts at `start` (after `[result] `): its line, or, when the
    transcript's 200-character cut lands at a line end further on, up to the cut."""
    first = _line_end(text, start)
    cut = start + RESULT_CUT
    if first >= cut or _ends_with_image(text, start, first):
        return first
    # Only lines that are not themselves markers can continue a result.
    lines = []
    pos = first + 1
    while pos < min(cut, len(text)) and not _at_marker(text, pos):
        lines.append(_line_end(text, pos))
        pos = lines[-1] + 1
    if cut in lines:
        return cut  # a longer result, cut by the transcript at the end of one of its lines
    # A short result whose later lines hold a bracketed block (`Details: {…}`) that closes in the cut.
    depth = _depth(text[start:first])
    opened = depth > 0
    for end in lines:
        line_start = text.rfind("\n", start, end) + 1
        depth += _depth(text[line_start:end])
        opened = opened or depth > 0
        if opened and depth <= 0:
            return end
    return first


def _depth(line: str) -> int:
    """Brackets opened minus closed on a line (quotes ignored: result lines are JSON or prose)."""
    return sum(line.count(c) for c in "{[") - sum(line.count(c) for c in "}]")


def _image_end(text: str, at: int) -> int:
    """End of the screenshot block opening at `at`; -1 when the transcript cut it."""
    return at + len(_IMAGE_BLOCK) if text.startswith(_IMAGE_BLOCK, at) else _literal_end(text, at)


def _ends_with_image(text: str, start: int, end: int) -> bool:
    """The line holds a screenshot block that closes on it: the result is complete there."""
    at = text.find(_IMAGE_START, start, end)
    return at >= 0 and 0 <= _image_end(text, at) <= end


def drop_images(text: str) -> tuple[str, int]:
    """The result text without its screenshot blocks and inline base64, and how many were dropped."""
    count = 0
    out = []
    pos = 0
    while True:
        at = text.find(_IMAGE_START, pos)
        if at < 0:
            out.append(text[pos:])
            break
        end = _image_end(text, at)
        out.append(text[pos:at])
        count += 1
        if end < 0:  # cut by the transcript: the block runs to the end
            break
        pos = end
    cleaned, inline = _BASE64.subn("", "".join(out))
    return " ".join(cleaned.split()) if cleaned.strip() else "", count + inline


def _parse_args(raw: str) -> dict[str, Any] | None:
    """The call's arguments (a fresh dict: callers may keep it); None when not a dict literal."""
    value = _literal_dict(raw) if len(raw) <= _MAX_ARGS else None
    return dict(value) if value is not None else None


@lru_cache(maxsize=4096)
def _literal_dict(raw: str) -> dict[str, Any] | None:
    # Cached: a session repeats its calls (screenshots, waits, scrolls) word for word.
    try:
        value = ast.literal_eval(raw)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _next_open_call(pending: list[Any]) -> Any:
    """The call a result belongs to: the oldest waiting one, skipping a sub-agent that has made calls
    since it started (their results come first)."""
    for call in pending:
        if call.tool == _SUB_AGENT and any(c.start > call.start for c in pending):
            continue
        return call
    return pending[0] if pending else None


def split_transcript(text: str) -> list[TranscriptCall]:
    """The tool calls of a transcript in the order they were made (empty when it holds none)."""
    calls: list[TranscriptCall] = []
    pending: list[TranscriptCall] = []
    prose_start = 0  # where the reasoning before the next call starts
    chunk_start = 0  # where the next step's raw text starts
    pos = 0
    for marker in _MARKER_LINE.finditer(text):  # only marker lines need a look: prose is skipped whole
        if marker.start() < pos:
            continue  # inside the previous call's arguments or result
        pos = marker.start()
        eol = _line_end(text, pos)
        if text.startswith(_TOOL, pos) and (name := _TOOL_NAME.match(text, pos)):
            args_at = name.end()
            args = _parse_args(text[args_at:eol]) if text.startswith("{", args_at) else None
            end = eol
            if args is None and text.startswith(("{", "[", "("), args_at):  # arguments over several lines
                end = _literal_end(text, args_at)
                if end < 0 or any(f"\n{m}" in text[args_at:end] for m in _MARKERS):
                    end = eol  # unbalanced, or running into the next marker: the line is all there is
                args = _parse_args(text[args_at:end])
            raw_args = text[args_at:end]
            thought = text[prose_start:pos].strip() or None
            call = TranscriptCall(thought, name.group(1), args, raw_args, start=pos)
            if calls:
                calls[-1].raw = text[chunk_start : prose_start if thought else pos]
                chunk_start = prose_start if thought else pos
            calls.append(call)
            pending.append(call)
            pos = _line_end(text, end) + 1
            prose_start = pos
            continue
        if text.startswith(("[result] ", "[error] "), pos):
            failed = text.startswith("[error] ", pos)
            start = pos + (len("[error] ") if failed else len("[result] "))
            end = _result_end(text, start)
            owner = _next_open_call(pending)
            if owner is not None:
                pending.remove(owner)
                owner.result, owner.images = drop_images(text[start:end])
                owner.failed = failed
            pos = end + 1
            prose_start = pos
            continue
        if text.startswith("[complete] ", pos):
            start = pos + len("[complete] ")
            answer = next((c for c in reversed(calls) if c.args and "finalAnswer" in c.args), None)
            final = answer.args.get("finalAnswer") if answer and answer.args else None
            end = (
                start + len(final)
                if isinstance(final, str) and final and text.startswith(final, start)
                else eol
            )
            if answer is not None:
                answer.completion = text[start:end]
            pos = _line_end(text, end) + 1
            prose_start = pos
            continue
        pos = eol + 1
    if calls:
        calls[-1].raw = text[chunk_start:]
    return calls


def transcript_steps(text: str, first_idx: int, url: str | None) -> list[StepRecord]:
    """One step per tool call of a transcript, numbered from `first_idx`.

    The thought is the reasoning before the call, the stated action its last sentence announcing an
    action (`announced_action`), the executed action the call without session arguments, the
    outcome what the tool returned. Only the first step has a page: the transcript records none after
    the session's start (`url`). Each step keeps its part of the transcript as observation `transcript`.
    """
    steps = []
    for i, call in enumerate(split_transcript(text)):
        parsed = parse_tool_call(call.tool, call.args, call.raw_args)
        outcome = call.result if call.result is not None else call.completion
        steps.append(
            StepRecord(
                idx=first_idx + i, url=url if i == 0 else None, thought=call.thought,
                stated_action=announced_action(call.thought) if parsed.kind == "action" else None,
                executed_action=parsed.action.raw, action=parsed.action, readable=parsed.readable,
                error=(call.result or "the tool reported an error") if call.failed else None,
                kind=parsed.kind, outcome=outcome or None, outcome_image=call.images > 0 if outcome is not None else None,
                observations={TRANSCRIPT: call.raw} if call.raw.strip() else {},
            )
        )  # fmt: skip
    return steps


# -- timings from the run's per-task log ------------------------------------------------------------
# `2025-10-27 14:10:19,653 - INFO - 🔧 [+5.83s think] mcp__gbox-browser__list_tabs({...})` and
# `… - INFO - 📥 [⏱️ 1.47s exec] Tool result: …` (`❌` for an error): when each call was issued, how
# long the agent thought before it, how long it ran.
_LOG_ENTRY = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3}) - \w+ - (.*)$")
_LOG_CALL = re.compile(r"^🔧 \[\+([0-9]{1,7}(?:\.[0-9]+)?)s think\] ([A-Za-z_][\w.-]*)\(")
_LOG_RESULT = re.compile(r"^(?:📥|❌) \[⏱️ ([0-9]{1,7}(?:\.[0-9]+)?)s exec\]")
_LOG_SESSION = ("Starting new session", "Resuming session")


@dataclass
class CallTiming:
    """One tool call as the run's log recorded it."""

    tool: str
    issued_at: datetime
    think_s: float
    exec_s: float | None = None
    start: int = field(default=0, repr=False)


def is_timing_line(line: str) -> bool:
    """A log line `read_call_timings` needs (a call, a result, a session starting); a cheap test."""
    return "🔧 [+" in line or "s exec]" in line or " session" in line


def read_call_timings(lines: Iterable[str]) -> list[CallTiming]:
    """Every tool call of a per-task log in order, with its think and execution time (results go to
    their calls as in the transcript; a call left unanswered when a new session starts keeps none)."""
    calls: list[CallTiming] = []
    pending: list[CallTiming] = []
    for line in lines:
        entry = _LOG_ENTRY.match(line)
        if entry is None:
            continue
        body = entry.group(3)
        if call := _LOG_CALL.match(body):
            try:
                at = datetime.fromisoformat(f"{entry.group(1)}.{entry.group(2)}")
            except ValueError:  # an impossible date: no timings for this log
                return []
            timing = CallTiming(call.group(2), at, float(call.group(1)), start=len(calls))
            calls.append(timing)
            pending.append(timing)
        elif result := _LOG_RESULT.match(body):
            owner = _next_open_call(pending)
            if owner is not None:
                pending.remove(owner)
                owner.exec_s = float(result.group(1))
        elif body.startswith(_LOG_SESSION):
            pending.clear()
    return calls


def apply_timings(steps: list[StepRecord], timings: list[CallTiming]) -> bool:
    """Give the steps made from tool calls their log timings: `started_at` when the agent began thinking
    about the call, `elapsed_s` thinking plus running it. The transcript holds the log's last calls;
    nothing is set unless every one of them is the same tool in the same place."""
    calls = [s for s in steps if TRANSCRIPT in s.observations]
    if not calls or len(timings) < len(calls):
        return False
    tail = timings[len(timings) - len(calls) :]
    if any((s.executed_action or "").split(":", 1)[0] != t.tool for s, t in zip(calls, tail, strict=True)):
        return False
    for step, timing in zip(calls, tail, strict=True):
        step.started_at = timing.issued_at - timedelta(seconds=timing.think_s)
        step.elapsed_s = None if timing.exec_s is None else round(timing.think_s + timing.exec_s, 3)
    return True
