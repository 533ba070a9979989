"""The failure taxonomy (docs/failure-causes.md): cause codes in their order of precedence, and the
`label_vocabulary` label a suggested cause becomes when a reviewer accepts it (migration 7)."""

from __future__ import annotations

from core.measure.llm.diagnosis import CAUSES

UNDECIDED = "undecided"
# The rule of last resort: `wrong_answer` found by it says only that the answer differs from the reference.
FALLBACK_RULE = "answered_wrong"
# What pages, filters and agreement call a primary cause the fallback found that no reviewer accepted: it
# is shown apart from the specific causes and kept out of the headline shares (docs/failure-causes.md).
NO_SPECIFIC = "no_specific_cause"

# The codes a task's primary cause may take, first in precedence first; `undecided` is not a cause.
PRECEDENCE: tuple[str, ...] = tuple(c for c in CAUSES if c != UNDECIDED)
# Every code a page shows as a task's primary cause, the fallback's and `undecided` last: the order every
# page and filter lists them in.
ORDER: tuple[str, ...] = (*PRECEDENCE, NO_SPECIFIC, UNDECIDED)


def cause_rank(cause: str) -> int:
    """A code's place in ORDER (an unknown code after every known one)."""
    return ORDER.index(cause) if cause in ORDER else len(ORDER)


CAUSE_LABEL: dict[str, str] = {
    "environment": "environment broken",
    "evaluator_strict": "evaluator too strict",
    "looped": "looped",
    "step_limit": "hit the step limit",
    "invalid_action": "invalid action",
    "gave_up": "gave up early",
    "wrong_element": "wrong element",
    "drifted": "context drift",
    "wrong_answer": "answered wrong",
}

CAUSE_NAME: dict[str, str] = {
    "environment": "environment broken",
    "evaluator_strict": "evaluator stricter than the task",
    "looped": "looped",
    "step_limit": "hit the step limit",
    "invalid_action": "invalid action",
    "gave_up": "gave up early",
    "wrong_element": "wrong element",
    "drifted": "drifted from the goal",
    "wrong_answer": "answered wrong",
    NO_SPECIFIC: "no specific cause found",
    UNDECIDED: "undecided",
}
NO_SPECIFIC_SENTENCE = "No specific cause found; the answer differs from the reference."
# What a failed task without a primary cause shows (its run not diagnosed, or diagnosed before it failed).
NOT_DIAGNOSED = "not diagnosed"


def cause_name(cause: str | None) -> str:
    """A cause code in words, as every page and the command line say it (`NOT_DIAGNOSED` for none)."""
    return NOT_DIAGNOSED if cause is None else CAUSE_NAME.get(cause, cause)


def cause_of_label(label: str | None) -> str | None:
    """The cause code a reviewer's task label stands for (None: a label outside the taxonomy, such as
    incoherent decomposition)."""
    for cause, cause_label in CAUSE_LABEL.items():
        if label == cause_label:
            return cause
    return None
