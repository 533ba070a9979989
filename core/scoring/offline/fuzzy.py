"""WebArena's LLM questions (`fuzzy_match`, and `ua_match` for the N/A rule) through the judge's LLM stage.

The questions use WebArena's own wording (prompts/fuzzy_match.txt, prompts/ua_match.txt) with the
judge's structured reply; verdicts are cached in `judgments` like every LLM verdict, so a re-run asks
nothing twice. An API failure leaves the question unresolved, never "different". Without an LLM
configured (`TRAJREVIEW_LLM_MODEL`), the evaluators stay offline and these questions unresolved.
"""

from __future__ import annotations

from collections.abc import Sequence

from core.measure.judge import Pair
from core.measure.judge.llm import LLMStage, load_prompts
from core.measure.llm.config import LLMConfig
from core.scoring.offline.webarena import FuzzyAnswer, FuzzyQuestion, TaskRecord, fuzzy_questions
from core.store import ShortLivedStore, Store

KINDS = ("fuzzy_match", "ua_match")


def _pair(question: FuzzyQuestion) -> Pair:
    kind, reference, answer, intent = question
    return Pair(kind, reference, answer, intent)  # type: ignore[arg-type]  # kinds of this module


class FuzzyJudge:
    """Answers the LLM questions of many tasks in one batch (cache first), then serves them by lookup."""

    def __init__(self, store: Store | ShortLivedStore, stage: LLMStage):
        self.stage = stage
        self.cache = stage.cache(store)

    @classmethod
    def from_env(cls, store: Store | ShortLivedStore, config: LLMConfig | None = None) -> FuzzyJudge | None:
        config = config or LLMConfig.from_env()
        return cls(store, LLMStage(config, load_prompts(kinds=KINDS))) if config else None

    def prefetch(self, records: Sequence[TaskRecord]) -> FuzzyAnswer:
        questions = list(dict.fromkeys(q for r in records for q in fuzzy_questions(r)))
        verdicts = self.stage.judge_many([_pair(q) for q in questions], cache=self.cache)
        answers = {q: v.verdict for q, v in zip(questions, verdicts, strict=True)}
        return lambda question: answers.get(question)
