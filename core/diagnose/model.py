"""The model stage: the `diagnosis` question (core.measure.llm.diagnosis) for the failed tasks no rule
decided, through the same client, bounds and answer cache as the judge. A reply naming a cause becomes a
suggestion `suggested by a model` with its reasoning; a reply of `undecided`, or none (timed out,
malformed, cut off), leaves the task undecided with the reason: never a cause."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from core.diagnose.facts import TaskFacts
from core.diagnose.taxonomy import UNDECIDED
from core.measure.llm.cache import JudgmentCache
from core.measure.llm.client import LLMClient, LLMStats
from core.measure.llm.config import LLMConfig
from core.measure.llm.diagnosis import DiagnosisReply, FailedTask, diagnosis_kind
from core.paths import PROMPTS_DIR
from core.progress import ProgressCallback
from core.store import ShortLivedStore, Store

# What the question quotes of the attempt: its last steps and the answer, within a few thousand characters
# (the prompt, the reply cap and a 2048-token context all fit).
MAX_STEPS_QUOTED = 30
MAX_STEP_CHARS = 120
MAX_ATTEMPT_CHARS = 3000
MAX_CONTEXT_CHARS = 800


@dataclass(frozen=True)
class ModelVerdict:
    cause: str  # a taxonomy code, or undecided
    reasoning: str | None
    reason: str | None  # why undecided


def question(facts: TaskFacts) -> FailedTask:
    """The diagnosis question of one task: its intent, what the agent did, why it failed."""
    lines = [
        f"{s.idx}. {s.action[:MAX_STEP_CHARS]}" + (f" [error: {s.error[:80]}]" if s.error else "")
        for s in facts.steps[-MAX_STEPS_QUOTED:]
    ]
    skipped = len(facts.steps) - len(lines)
    head = [f"({skipped} earlier steps not shown)"] if skipped > 0 else []
    ending = f"Ended: {facts.termination or 'unknown'}" + (
        f" ({facts.termination_detail})" if facts.termination_detail else ""
    )
    answer = f"Final answer: {facts.answer}" if facts.answer else "No final answer."
    first = "\n".join(head) + "\n" if head else ""
    did = first + "\n".join([*lines, ending, answer])[-(MAX_ATTEMPT_CHARS - len(first)) :]
    why = [ev.explanation for ev in facts.evaluators if ev.explanation] or [facts.explanation or ""]
    context = "; ".join(w for w in why if w) or f"the run's own verdict is {facts.status}"
    return FailedTask(a=facts.intent, b=did, context=context[:MAX_CONTEXT_CHARS])


def ask_model(
    store: Store | ShortLivedStore,
    undecided: Sequence[TaskFacts],
    config: LLMConfig,
    *,
    prompts_dir=PROMPTS_DIR,
    on_progress: ProgressCallback | None = None,
) -> tuple[dict[int, ModelVerdict], LLMStats]:
    """One verdict per task (by task id); answers cached in `judgments` in short transactions of their own."""
    kinds = {"diagnosis": diagnosis_kind(prompts_dir)}
    client = LLMClient(config)
    questions = [question(f) for f in undecided]
    answers = client.ask_many(
        questions, kinds, cache=JudgmentCache(store, model=config.model, kinds=kinds), on_progress=on_progress
    )
    verdicts = {}
    for facts, answer in zip(undecided, answers, strict=True):
        reply = answer.reply
        if not isinstance(reply, DiagnosisReply):
            verdicts[facts.task_id] = ModelVerdict(
                UNDECIDED, None, f"the model could not decide: {answer.problem}"
            )
        elif reply.cause == UNDECIDED:
            verdicts[facts.task_id] = ModelVerdict(
                UNDECIDED, reply.reasoning, f"the model could not decide: {reply.reasoning}"
            )
        else:
            verdicts[facts.task_id] = ModelVerdict(reply.cause, reply.reasoning, None)
    return verdicts, client.stats
