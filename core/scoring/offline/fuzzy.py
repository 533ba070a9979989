"""WebArena's LLM questions (`fuzzy_match`, and `ua_match` for the N/A rule) through the judge's LLM stage.

The questions use WebArena's own wording (prompts/fuzzy_match.txt, prompts/ua_match.txt) with the
judge's structured reply; verdicts are cached in `judgments` like every LLM verdict, so a re-run asks
nothing twice. An API failure leaves the question unresolved, never "different". Without an LLM
configured (`TRAJREVIEW_LLM_MODEL`), the evaluators stay offline and these questions unresolved.
"""

from __future__ import annotations

from collections.abc import Sequence
from string import Template

from core.measure.judge import Pair, Verdict
from core.measure.judge.cache import JudgmentCache
from core.measure.judge.llm import LLMConfig, LLMStage, Prompt, prompt_versions
from core.paths import PROMPTS_DIR
from core.scoring.offline.webarena import FuzzyAnswer, FuzzyQuestion, TaskRecord, fuzzy_questions
from core.store import ShortLivedStore, Store

KINDS = ("fuzzy_match", "ua_match")


def load_prompts() -> dict[str, Prompt]:
    prompts = {}
    for kind in KINDS:
        first, _, body = (PROMPTS_DIR / f"{kind}.txt").read_text(encoding="utf-8").partition("\n")
        prompts[kind] = Prompt(kind, first.split(":", 1)[1].strip(), Template(body))
    return prompts


def _pair(question: FuzzyQuestion) -> Pair:
    kind, reference, answer, intent = question
    return Pair(kind, reference, answer, intent)  # type: ignore[arg-type]  # kinds of this module


class FuzzyJudge:
    """Answers the LLM questions of many tasks in one batch (cache first), then serves them by lookup."""

    def __init__(self, store: Store | ShortLivedStore, stage: LLMStage):
        self.stage = stage
        self.cache = JudgmentCache(store, model=stage.model, prompt_versions=prompt_versions(stage.prompts))
        self.asked = 0
        self.cache_hits = 0

    @classmethod
    def from_env(cls, store: Store | ShortLivedStore, config: LLMConfig | None = None) -> FuzzyJudge | None:
        config = config or LLMConfig.from_env()
        return cls(store, LLMStage(config, load_prompts())) if config else None

    def prefetch(self, records: Sequence[TaskRecord]) -> FuzzyAnswer:
        questions = list(dict.fromkeys(q for r in records for q in fuzzy_questions(r)))
        pairs = [_pair(q) for q in questions]
        found: dict[Pair, Verdict] = self.cache.get_many(pairs)
        self.cache_hits += len(found)
        missing = [p for p in pairs if p not in found]
        if missing:
            fresh = dict(zip(missing, self.stage.judge_many(missing), strict=True))
            self.asked += len(missing)
            self.cache.put_many(fresh.items())
            found.update(fresh)
        answers = {q: found[_pair(q)].verdict for q in questions}
        return lambda question: answers.get(question)
