"""The diagnosis rules: pure functions over one failed task's facts (core.diagnose.facts). Each returns
zero or one `Finding` (a cause, the rule's name, one plain sentence and the evidence it cites); a task's
primary cause is the first of its findings in the taxonomy's precedence. docs/failure-causes.md states
every rule as coded here and in `rules_site` (the environment, a strict evaluator); bump RULES_VERSION when
a rule changes what it decides.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

from core.diagnose.facts import TaskFacts
from core.diagnose.findings import (
    Evidence,
    Finding,
    actions_text,
    answer_step,
    answered_at,
    failing_sentence,
    numbers,
    quote,
)
from core.diagnose.rules_site import (
    STEP_SERVER_ERROR,
    differs_only_in_format,
    loose,
    offline_evaluators_pass,
    response_site_failed,
    tool_server_errors,
    trace_server_errors,
    verified_reference_matches,
)  # fmt: skip
from core.diagnose.taxonomy import PRECEDENCE

RULES_VERSION = "rules-1"

# Thresholds, chosen on the `tune` half of the labels only (tests/fixtures/failure_labels).
LOOP_MIN_REPEATS = 5  # the same action at least this often ...
LOOP_MIN_SHARE = 0.15  # ... and at least this share of the attempt's actions
INVALID_MIN_ERRORS = 3  # failed actions (not server errors) ...
INVALID_MIN_SHARE = 0.3  # ... and their share of the actions

_CAP = re.compile(r"\bcap\b|step limit|max(?:imum)? (?:steps|actions|turns)|turn limit|time limit", re.I)


def step_limit(facts: TaskFacts) -> Finding | None:
    """The harness cut the attempt at its step, action or time limit."""
    detail = facts.termination_detail or ""
    if facts.termination != "truncated" and not _CAP.search(detail):
        return None
    why = f" ({detail})" if detail else ""
    return Finding(
        "step_limit", "step_limit",
        f"The run was cut after {actions_text(facts.n_steps)}{why} before the agent finished.",
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
        f"{len(facts.actions)} actions and ended without an answer"
        f"{'' if facts.termination in (None, 'none', 'unknown') else f' ({facts.termination})'}.",
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
    failed = [s for s in facts.actions if s.error and not STEP_SERVER_ERROR.search(s.error)]
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
    step = answer_step(facts)
    return Finding(
        "gave_up", "gave_up",
        f"After {actions_text(facts.n_steps)} the agent {what}{answered_at(facts)}, though the task is achievable.",
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
                (failing_sentence(facts), Evidence("response", facts.answer[:300])),
            )  # fmt: skip
    return None


def answered_wrong(facts: TaskFacts) -> Finding | None:
    """The agent finished with an answer (or a final state) and the evaluator failed it."""
    if facts.termination not in ("answered", None) and not facts.answer:
        return None
    if facts.termination in ("none", "error", "interrupted") or (not facts.answer and facts.n_steps == 0):
        return None
    failing = failing_sentence(facts)
    what = (
        f"answered {quote(facts.answer, 50)}" if facts.answer else f"finished after {facts.n_steps} actions"
    )
    return Finding(
        "wrong_answer", "answered_wrong", f"The agent {what}{answered_at(facts)}; {failing.text}".rstrip(".") + ".",
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
    how = "" if facts.termination in (None, "none", "unknown") else f" ({facts.termination})"
    if not facts.answer:
        return f"the attempt ended{how} without an answer after {facts.n_steps} actions"
    return f"the attempt ended{how} after {facts.n_steps} actions"
