"""What a diagnosis rule returns: a `Finding` (cause, rule, one sentence, the evidence it cites) and the
helpers that write its sentence (quotes, step numbers, the failing evaluator's line)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from core.diagnose.facts import StepFact, TaskFacts

QUOTE_CHARS = 60

# An answer that says the agent could not find or do it (N/A, not found, cannot, unable, ...).
GAVE_UP = re.compile(
    r"^\s*n/?a\b|\bnot found\b|\bno \w+(?: \w+)? (?:found|exists?)\b|\bcannot\b|\bcan't\b|\bcould not\b|"
    r"\bcouldn't\b|\bunable\b|\bnot able\b|\bnot (?:been )?completed?\b|\bfailed to\b|\binfeasible\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Evidence:
    kind: str  # step | event | evaluator | response | metric | template | witness
    text: str
    step_idx: int | None = None
    seq: int | None = None
    status: int | None = None
    # An evaluator defect's comparison (kind `evaluator`): the check, the value it compared against, what
    # the agent gave, and WebArena-Verified's value.
    check: str | None = None
    reference: str | None = None
    actual: str | None = None
    verified: str | None = None
    # A witness (kind `witness`): another run's attempt at the task, and whether it supports the agent
    # (the same answer, also failed) or speaks against it (passed with another answer).
    run: str | None = None
    task_id: int | None = None
    supports: bool | None = None

    def as_json(self) -> dict[str, Any]:
        """The stored form: absent keys omitted (docs/schema.md, failure_causes.evidence)."""
        fields = {k: v for k, v in vars(self).items() if k != "text"}
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


def steps_text(values: list[int]) -> str:
    """'step 66' or 'steps 4 and 10'."""
    return f"step{'s' if len(values) > 1 else ''} {numbers(values)}"


def actions_text(n: int) -> str:
    return f"{n} action" if n == 1 else f"{n} actions"


def answer_step(facts: TaskFacts) -> StepFact | None:
    for step in reversed(facts.steps):
        if step.answer:
            return step
    return None


def answered_at(facts: TaskFacts) -> str:
    step = answer_step(facts)
    return f" at step {step.idx}" if step else ""


def failing_sentence(facts: TaskFacts) -> Evidence:
    for ev in facts.evaluators:
        if ev.status == "failure" and ev.explanation:
            return Evidence("evaluator", f"{ev.evaluator}: {ev.explanation}", seq=ev.nearest_event_seq)
    if facts.explanation:
        return Evidence("evaluator", facts.explanation)
    return Evidence(
        "evaluator", f"the run's own verdict ({facts.verdict_source or 'unknown source'}) is failure"
    )


def template_evidence(facts: TaskFacts) -> tuple[Evidence, ...]:
    """Supporting evidence only, it decides nothing (on the tune labels 9 of 10 wrong answers had a passing
    task of the same template too): tasks of the same template that passed in the run."""
    if not facts.template_passed:
        return ()
    tasks = list(facts.template_passed)
    text = f"task{'s' if len(tasks) > 1 else ''} {numbers(tasks)} of the same template passed in this run"
    return (Evidence("template", text),)
