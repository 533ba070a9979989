"""The diagnosis rules: pure functions over one failed task's facts (core.diagnose.facts). Each returns
zero or one `Finding` (a cause, the rule's name, one plain sentence and the evidence it cites); a task's
primary cause is the first of its findings in the taxonomy's precedence. docs/failure-causes.md states
every rule as coded here; bump RULES_VERSION when a rule changes what it decides.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from core.diagnose.facts import StepFact, TaskFacts
from core.diagnose.taxonomy import PRECEDENCE

RULES_VERSION = "rules-1"

# Thresholds, chosen on the `tune` half of the labels only (tests/fixtures/failure_labels).
LOOP_MIN_REPEATS = 5  # the same action at least this often ...
LOOP_MIN_SHARE = 0.15  # ... and at least this share of the attempt's actions
SERVER_ERROR_STEPS = 2  # tool calls that failed with a 5xx before the site counts as broken
INVALID_MIN_ERRORS = 3  # failed actions (not server errors) ...
INVALID_MIN_SHARE = 0.3  # ... and their share of the actions
QUOTE_CHARS = 60


@dataclass(frozen=True)
class Evidence:
    kind: str  # step | event | evaluator | response | metric | template
    text: str
    step_idx: int | None = None
    seq: int | None = None
    status: int | None = None

    def as_json(self) -> dict[str, Any]:
        """The stored form: absent keys omitted (docs/schema.md, failure_causes.evidence)."""
        fields = {"kind": self.kind, "step_idx": self.step_idx, "seq": self.seq, "status": self.status}
        return {k: v for k, v in fields.items() if v is not None} | {"text": self.text}


@dataclass(frozen=True)
class Finding:
    cause: str
    rule: str
    summary: str
    evidence: tuple[Evidence, ...]


def quote(text: str | None, limit: int = QUOTE_CHARS) -> str:
    text = " ".join((text or "").split())
    return f"'{text[: limit - 1]}…'" if len(text) > limit else f"'{text}'"


def numbers(values: list[int]) -> str:
    """'3', '3 and 5', '3, 5 and 9', '3, 5, 9, … and 40' (at most six named)."""
    shown = [str(v) for v in values]
    if len(shown) > 6:
        shown = [*shown[:5], "…", shown[-1]]
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]


def _actions(n: int) -> str:
    return f"{n} action" if n == 1 else f"{n} actions"


def _answer_step(facts: TaskFacts) -> StepFact | None:
    for step in reversed(facts.steps):
        if step.answer:
            return step
    return None


def _answered_at(facts: TaskFacts) -> str:
    step = _answer_step(facts)
    return f" at step {step.idx}" if step else ""


def _failing_sentence(facts: TaskFacts) -> Evidence:
    for ev in facts.evaluators:
        if ev.status == "failure" and ev.explanation:
            return Evidence("evaluator", f"{ev.evaluator}: {ev.explanation}", seq=ev.nearest_event_seq)
    if facts.explanation:
        return Evidence("evaluator", facts.explanation)
    return Evidence(
        "evaluator", f"the run's own verdict ({facts.verdict_source or 'unknown source'}) is failure"
    )


# --- environment ---------------------------------------------------------------------------------------

_SITE_FAILED = re.compile(
    r"\b5\d\d\b|server error|unreachable|can.?t be reached|not (?:load|respond|reachable)|timed? ?out|"
    r"site (?:is )?down|connection (?:refused|reset|failed)|bad gateway|service unavailable",
    re.IGNORECASE,
)
_STEP_SERVER_ERROR = re.compile(
    r"\b(?:HTTP )?5\d\d\b.*(?:server error|bad gateway|unavailable)|\(HTTP 5\d\d\)", re.I
)
_STEP_UNREACHABLE = re.compile(
    r"can.?t be reached|ERR_(?:CONNECTION|NAME_NOT_RESOLVED|TIMED_OUT|ADDRESS)|chromewebdata|"
    r"status is terminated",
    re.IGNORECASE,
)


def trace_server_errors(facts: TaskFacts) -> Finding | None:
    """Responses of 5xx (or none at all) in the task's network trace."""
    if not facts.server_errors:
        return None
    events = facts.server_errors
    statuses = sorted({e.status for e in events})
    what = " or ".join("no response" if s <= 0 else f"HTTP {s}" for s in statuses)
    n = len(events)
    summary = (
        f"{n} {'response was' if n == 1 else 'responses were'} {what} "
        f"(event{'s' if n > 1 else ''} {numbers([e.seq for e in events])}) in the task's trace"
    )
    if facts.answer:
        summary += f" before the agent answered {quote(facts.answer, 40)}{_answered_at(facts)}"
    evidence = tuple(
        Evidence("event", f"{e.method} {e.url}", seq=e.seq, status=e.status) for e in events[:10]
    )
    return Finding("environment", "trace_server_errors", summary + ".", evidence)


def response_site_failed(facts: TaskFacts) -> Finding | None:
    """The agent reported UNKNOWN_ERROR and its error details say the site failed."""
    if facts.response_status != "UNKNOWN_ERROR" or not _SITE_FAILED.search(facts.response_error or ""):
        return None
    text = f"status UNKNOWN_ERROR: {facts.response_error}"
    return Finding(
        "environment", "response_site_failed",
        f"The agent reported UNKNOWN_ERROR saying the site failed: {quote(facts.response_error)}.",
        (Evidence("response", text),),
    )  # fmt: skip


def tool_server_errors(facts: TaskFacts) -> Finding | None:
    """Browser calls that failed with a server error (at least SERVER_ERROR_STEPS) or an unreachable page."""
    server = [s for s in facts.steps if s.error and _STEP_SERVER_ERROR.search(s.error)]
    unreachable = [s for s in facts.steps if s.error and _STEP_UNREACHABLE.search(s.error)]
    if len(server) < SERVER_ERROR_STEPS and not unreachable:
        return None
    failed = sorted({s.idx: s for s in server + unreachable}.values(), key=lambda s: s.idx)
    summary = (
        f"{len(failed)} browser calls failed with a server error or an unreachable page "
        f"(steps {numbers([s.idx for s in failed])}), first {quote(failed[0].error)}."
    )
    return Finding(
        "environment", "tool_server_errors", summary,
        tuple(Evidence("step", s.error or "", step_idx=s.idx) for s in failed[:10]),
    )  # fmt: skip


# --- evaluator stricter than the task -----------------------------------------------------------------


def _template_evidence(facts: TaskFacts) -> tuple[Evidence, ...]:
    """Supporting evidence only, it decides nothing (on the tune labels 9 of 10 wrong answers had a passing
    task of the same template too): tasks of the same template that passed in the run."""
    if not facts.template_passed:
        return ()
    tasks = list(facts.template_passed)
    text = f"task{'s' if len(tasks) > 1 else ''} {numbers(tasks)} of the same template passed in this run"
    return (Evidence("template", text),)


def offline_evaluators_pass(facts: TaskFacts) -> Finding | None:
    """The offline WebArena evaluators pass the task that the run's own verdict failed."""
    if facts.offline_status != "success" or not facts.offline_disagrees:
        return None
    return Finding(
        "evaluator_strict", "offline_evaluators_pass",
        f"The run's own verdict is {facts.status}, but every offline evaluator passes the answer "
        f"{quote(facts.answer, 40)}.",
        (Evidence("evaluator", facts.explanation or "offline evaluators: success"), *_template_evidence(facts)),
    )  # fmt: skip


_DIFFER_ONLY = re.compile(r"differ only in", re.IGNORECASE)


def loose(text: str) -> str:
    """Case, whitespace, punctuation, escaped quotes and URL schemes removed: what a reader would not
    call a different answer."""
    text = text.replace('\\"', '"').replace("%20", " ").lower()
    text = re.sub(r"https?://", "", text)
    return re.sub(r"[^0-9a-z\u00c0-\uffff]+", "", text)


def differs_only_in_format(facts: TaskFacts) -> Finding | None:
    """A failing evaluator's sentence says the values differ only in case or spaces, or every original
    reference string is in the answer once case, spaces, punctuation and URL schemes are set aside."""
    for ev in facts.evaluators:
        if ev.status == "failure" and ev.explanation and _DIFFER_ONLY.search(ev.explanation):
            return Finding(
                "evaluator_strict", "differs_only_in_format",
                f"The {ev.evaluator} check failed on a difference of format only: {quote(ev.explanation, 160)}.",
                (Evidence("evaluator", ev.explanation, seq=ev.nearest_event_seq), *_template_evidence(facts)),
            )  # fmt: skip
    string_failed = any(ev.evaluator == "string_match" and ev.status == "failure" for ev in facts.evaluators)
    ref = facts.original_reference
    wanted = [*ref.get("must_include", []), *([ref["exact_match"]] if ref.get("exact_match") else [])]
    wanted = [w for w in wanted if isinstance(w, str) and loose(w)]
    if not string_failed or not wanted or not facts.answer:
        return None
    answer = loose(facts.answer)
    if not all(loose(w) in answer for w in wanted):
        return None
    return Finding(
        "evaluator_strict", "differs_only_in_format",
        f"The answer {quote(facts.answer, 50)} holds every reference string "
        f"({', '.join(quote(w, 30) for w in wanted[:4])}) once case, spaces and punctuation are set aside.",
        (_failing_sentence(facts), Evidence("response", facts.answer[:300]), *_template_evidence(facts)),
    )  # fmt: skip


def _leaves(value: Any) -> list[list[Any]]:
    """Verified's expected values as a list of requirements, each a list of alternatives (a nested list
    in retrieved_data is read as alternatives)."""
    if isinstance(value, dict):
        return [req for v in value.values() for req in _leaves(v)]
    if isinstance(value, list):
        if value and all(isinstance(v, list) for v in value) and len(value) == 1:
            return [[a for a in value[0] if isinstance(a, str | int | float) and not isinstance(a, bool)]]
        return [req for v in value for req in _leaves(v)]
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        return [[value]]
    return []


def _value_in(value: str | int | float, answer: str) -> bool:
    if isinstance(value, int | float):
        number = float(value)
        shapes = {
            f"{number:g}",
            f"{number:.2f}",
            f"{number:,.2f}",
            f"{int(number)}" if number.is_integer() else "",
        }
        return any(s and re.search(rf"(?<![\d.]){re.escape(s)}(?![\d]|\.\d)", answer) for s in shapes)
    words = " ".join(re.sub(r"[^\w]+", " ", value.lower()).split())
    text = " ".join(re.sub(r"[^\w]+", " ", answer.lower()).split())
    return bool(words) and re.search(rf"\b{re.escape(words)}\b", text) is not None


def verified_reference_matches(facts: TaskFacts) -> Finding | None:
    """The run was scored against the original reference, and the answer holds every value the
    corrected WebArena-Verified reference expects."""
    if facts.verdict_source == "webarena-verified" or facts.expected_status not in (None, "SUCCESS"):
        return None
    requirements = _leaves(facts.verified_data)
    if not requirements or not facts.answer:
        return None
    if not all(any(_value_in(alt, facts.answer) for alt in req) for req in requirements):
        return None
    expected = [str(req[0]) if len(req) == 1 else " or ".join(map(str, req)) for req in requirements]
    return Finding(
        "evaluator_strict", "verified_reference_matches",
        f"The answer {quote(facts.answer, 50)} holds every value of the corrected WebArena-Verified "
        f"reference ({', '.join(quote(e, 30) for e in expected[:5])}), but the run was scored with the original one.",
        (_failing_sentence(facts), Evidence("response", facts.answer[:300]), *_template_evidence(facts)),
    )  # fmt: skip


# --- the agent's attempt ------------------------------------------------------------------------------

_CAP = re.compile(r"\bcap\b|step limit|max(?:imum)? (?:steps|actions|turns)|turn limit|time limit", re.I)


def step_limit(facts: TaskFacts) -> Finding | None:
    """The harness cut the attempt at its step, action or time limit."""
    detail = facts.termination_detail or ""
    if facts.termination != "truncated" and not _CAP.search(detail):
        return None
    why = f" ({detail})" if detail else ""
    return Finding(
        "step_limit", "step_limit",
        f"The run was cut after {_actions(facts.n_steps)}{why} before the agent finished.",
        (Evidence("step", detail or "truncated", step_idx=facts.actions[-1].idx if facts.actions else None),),
    )  # fmt: skip


def _repeated(facts: TaskFacts) -> tuple[str, list[int]] | None:
    actions = [s for s in facts.actions if s.action and s.action != "none" and not s.answer]
    if not actions:
        return None
    action, count = Counter(s.action for s in actions).most_common(1)[0]
    if count < LOOP_MIN_REPEATS or count / len(actions) < LOOP_MIN_SHARE:
        return None
    return action, [s.idx for s in actions if s.action == action]


def looped(facts: TaskFacts) -> Finding | None:
    """The same action repeated (at least LOOP_MIN_REPEATS times, LOOP_MIN_SHARE of the actions) in an
    attempt that did not end with an answer, or a harness that stopped it for repeating itself."""
    detail = facts.termination_detail or ""
    if re.search(r"same action", detail, re.IGNORECASE):
        return Finding(
            "looped", "looped", f"The harness stopped the agent for repeating itself ({detail}).",
            (Evidence("step", detail, step_idx=facts.actions[-1].idx if facts.actions else None),),
        )  # fmt: skip
    repeated = _repeated(facts)
    if repeated is None or facts.termination == "answered":
        return None
    action, steps = repeated
    return Finding(
        "looped", "looped",
        f"The agent repeated {quote(action, 50)} {len(steps)} times (steps {numbers(steps)}) of "
        f"{len(facts.actions)} actions and ended without an answer ({facts.termination}).",
        tuple(Evidence("step", action, step_idx=i) for i in steps[:10]),
    )  # fmt: skip


_PARSE_FAILED = re.compile(
    r"(?:failed to|could not|couldn.t|cannot) parse|unparse|invalid action|not a valid action", re.IGNORECASE
)


def invalid_action(facts: TaskFacts) -> Finding | None:
    """The harness could not parse the agent's output, or many actions failed (not on server errors)."""
    detail = facts.termination_detail or ""
    if _PARSE_FAILED.search(detail):
        return Finding(
            "invalid_action", "invalid_action", f"The harness stopped the agent: {detail}.",
            (Evidence("step", detail, step_idx=facts.steps[-1].idx if facts.steps else None),),
        )  # fmt: skip
    failed = [s for s in facts.actions if s.error and not _STEP_SERVER_ERROR.search(s.error)]
    if len(failed) < INVALID_MIN_ERRORS or len(failed) / max(1, len(facts.actions)) < INVALID_MIN_SHARE:
        return None
    return Finding(
        "invalid_action", "invalid_action",
        f"{len(failed)} of {len(facts.actions)} actions could not be executed (steps "
        f"{numbers([s.idx for s in failed])}), first {quote(failed[0].error)}.",
        tuple(Evidence("step", s.error or "", step_idx=s.idx) for s in failed[:10]),
    )  # fmt: skip


_GAVE_UP = re.compile(
    r"^\s*n/?a\b|\bnot found\b|\bno \w+(?: \w+)? (?:found|exists?)\b|\bcannot\b|\bcan't\b|\bcould not\b|"
    r"\bcouldn't\b|\bunable\b|\bnot able\b|\bnot (?:been )?completed?\b|\bfailed to\b|\binfeasible\b",
    re.IGNORECASE,
)


def gave_up(facts: TaskFacts) -> Finding | None:
    """The task was achievable (Verified expects SUCCESS) but the agent stopped early (N/A, an early
    stop) or answered that it could not find or do it."""
    if facts.expected_status not in (None, "SUCCESS"):
        return None
    if facts.termination in ("na_answer", "early_stop"):
        what = f"stopped early ({facts.termination_detail or facts.termination})"
    elif facts.answer and _GAVE_UP.search(facts.answer[:300]):
        what = f"answered {quote(facts.answer)}"
    else:
        return None
    step = _answer_step(facts)
    return Finding(
        "gave_up", "gave_up",
        f"After {_actions(facts.n_steps)} the agent {what}{_answered_at(facts)}, though the task is achievable.",
        (Evidence("response", facts.answer[:300] if facts.answer else what, step_idx=step.idx if step else None),),
    )  # fmt: skip


_WORD = re.compile(r"[a-z][a-z0-9'-]+")
NEAR_MISS_SHARE = 0.5  # a reference entity whose words the answer holds at least half of, not all


def _reference_entities(facts: TaskFacts) -> list[str]:
    ref = facts.original_reference
    strings = [*ref.get("must_include", []), ref.get("exact_match")]
    return [s for s in strings if isinstance(s, str) and len(_WORD.findall(s.lower())) >= 2]


def near_miss_entity(facts: TaskFacts) -> Finding | None:
    """The answer names a different item of the same kind as the reference's (it holds at least half of a
    reference name's words, not all of them): the agent picked the wrong row, result or option."""
    if not facts.answer or not any(ev.status == "failure" for ev in facts.evaluators):
        return None
    answer_words = set(_WORD.findall(facts.answer.lower()))
    for entity in _reference_entities(facts):
        words = set(_WORD.findall(entity.lower()))
        shared = words & answer_words
        if (
            len(shared) >= 2
            and NEAR_MISS_SHARE <= len(shared) / len(words) < 1
            and loose(entity) not in loose(facts.answer)
        ):
            return Finding(
                "wrong_element", "near_miss_entity",
                f"The answer {quote(facts.answer, 50)} names an item like the expected {quote(entity, 50)} "
                f"but not it (shares {len(shared)} of its {len(words)} words).",
                (_failing_sentence(facts), Evidence("response", facts.answer[:300])),
            )  # fmt: skip
    return None


def answered_wrong(facts: TaskFacts) -> Finding | None:
    """The agent finished with an answer (or a final state) and the evaluator failed it."""
    if facts.termination not in ("answered", None) and not facts.answer:
        return None
    if facts.termination in ("none", "error", "interrupted") or (not facts.answer and facts.n_steps == 0):
        return None
    failing = _failing_sentence(facts)
    what = (
        f"answered {quote(facts.answer, 50)}" if facts.answer else f"finished after {facts.n_steps} actions"
    )
    return Finding(
        "wrong_answer", "answered_wrong", f"The agent {what}{_answered_at(facts)}; {failing.text}".rstrip(".") + ".",
        (failing,),
    )  # fmt: skip


RULES: tuple[Callable[[TaskFacts], Finding | None], ...] = (
    trace_server_errors, response_site_failed, tool_server_errors,
    offline_evaluators_pass, differs_only_in_format, verified_reference_matches,
    step_limit, looped, invalid_action, gave_up, near_miss_entity, answered_wrong,
)  # fmt: skip


def find_causes(facts: TaskFacts) -> list[Finding]:
    """One finding per cause (the first rule that found it), ordered by the taxonomy's precedence: the
    first is the task's primary cause; none means undecided."""
    found: dict[str, Finding] = {}
    for rule in RULES:
        finding = rule(facts)
        if finding is not None and finding.cause not in found:
            found[finding.cause] = finding
    return sorted(found.values(), key=lambda f: PRECEDENCE.index(f.cause))


def undecided_reason(facts: TaskFacts) -> str:
    """What the record shows of a task no rule decided (the reason beside `undecided`)."""
    if not facts.answer:
        return f"the attempt ended ({facts.termination or 'unknown'}) without an answer after {facts.n_steps} actions"
    return f"the attempt ended ({facts.termination or 'unknown'}) after {facts.n_steps} actions"
