"""What a diagnosis rule returns: a `Finding` (cause, rule, one sentence, the evidence it cites) and the
helpers that write its sentence (quotes, step numbers, the failing evaluator's line)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.diagnose.facts import StepFact, TaskFacts

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
