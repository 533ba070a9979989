"""The cascade judge: rule -> lexical -> (embedding, reject only) -> LLM, cheapest first.

Configurations (the `judge_config` stored with every alignment and metric):
- `offline`: no LLM; pairs left in the ambiguous band are settled by lexical evidence, source `offline`,
  marked approximate;
- `cascade`: the same stages, the ambiguous band goes to the LLM (cached);
- `llm`: every pair goes to the LLM (the paper's way; the reference for judge agreement).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from core.errors import InputError
from core.measure.judge import Pair, Verdict
from core.measure.judge.lexical import DEFAULT_BAND, Band, score_pair, settle_offline
from core.measure.judge.llm import LLMStage, load_prompts, reply_of
from core.measure.judge.rules import (
    decide_repeat,
    decide_requirement,
    decide_stated_vs_executed,
    decide_steps,
)
from core.measure.llm.client import LLMStats
from core.measure.llm.config import LLMConfig
from core.progress import ProgressCallback
from core.store import ShortLivedStore, Store

JUDGE_CONFIGS = ("offline", "cascade", "llm")
EMBEDDING_KINDS = frozenset({"gold_vs_agent", "agent_vs_agent"})


def rule_stage(pair: Pair):
    if pair.kind == "gold_vs_agent":
        return decide_steps(pair.a, pair.b)
    if pair.kind == "agent_vs_agent":
        return decide_repeat(pair.a, pair.b)
    if pair.kind == "stated_vs_executed":
        return decide_stated_vs_executed(pair.a, pair.b)
    return decide_requirement(pair.a, pair.b)


class CascadeJudge:
    """Implements the `Judge` protocol; `stats` counts verdicts per deciding stage."""

    def __init__(
        self,
        name: str = "offline",
        *,
        store: Store | ShortLivedStore | None = None,
        llm: LLMStage | None = None,
        embeddings=None,
        band: Band = DEFAULT_BAND,
        batch_dir: Path | None = None,
    ):
        if name not in JUDGE_CONFIGS:
            raise InputError("--judge", f"{name!r} is not one of {', '.join(JUDGE_CONFIGS)}")
        if name != "offline" and llm is None:
            raise InputError(
                "--judge", f"{name!r} needs an LLM: set TRAJREVIEW_LLM_MODEL (and _BASE_URL, _API_KEY)"
            )
        self.name = name
        self.llm = llm
        self.embeddings = embeddings
        self.band = band
        self.batch_dir = batch_dir  # when set, LLM questions go through the Batch API
        self.cache = llm.cache(store) if (store is not None and llm is not None) else None
        self.stats: Counter[str] = Counter()
        self._batch_cache_hits = 0

    @property
    def llm_calls(self) -> int:
        return self.llm.calls if self.llm else 0

    @property
    def cache_hits(self) -> int:
        return (self.llm.stats.cache_hits if self.llm else 0) + self._batch_cache_hits

    @property
    def llm_stats(self) -> LLMStats | None:
        """What the LLM stage did (mode, requests, answers, unresolved pairs by reason); None without one."""
        return self.llm.stats if self.llm else None

    def cheap_verdict(self, pair: Pair) -> tuple[Verdict | None, float]:
        """Rule then lexical; (None, evidence) when the pair is in the ambiguous band."""
        rule = rule_stage(pair)
        if rule.verdict is not None:
            return Verdict(rule.verdict, "rule", rule.score, rationale=rule.rationale), 1.0
        lexical = score_pair(pair.kind, pair.a, pair.b, self.band)
        if lexical.verdict is not None:
            return Verdict(lexical.verdict, "lexical", lexical.score), lexical.score
        return None, lexical.score

    def judge_many(self, pairs: Sequence[Pair], on_progress: ProgressCallback | None = None) -> list[Verdict]:
        unique = list(dict.fromkeys(pairs))
        decided: dict[Pair, Verdict] = {}
        pending: list[tuple[Pair, float]] = []
        for pair in unique:
            if self.name == "llm":
                pending.append((pair, 0.0))
                continue
            verdict, evidence = self.cheap_verdict(pair)
            if verdict is None:
                pending.append((pair, evidence))
            else:
                decided[pair] = verdict
        if pending and self.embeddings is not None and self.name != "llm":
            # Only step sentences: a short requirement against a long answer embeds far apart even when
            # the answer contains it ('11min' in 'It takes 11 minutes ...'), so that kind is never rejected.
            steps = [(p, e) for p, e in pending if p.kind in EMBEDDING_KINDS]
            still = [(p, e) for p, e in pending if p.kind not in EMBEDDING_KINDS]
            for (pair, evidence), (reject, similarity) in zip(
                steps, self.embeddings.rejects([p for p, _ in steps]), strict=True
            ):
                if reject:
                    decided[pair] = Verdict(False, "embedding", similarity)
                else:
                    still.append((pair, (evidence + similarity) / 2))
            pending = still
        if on_progress:
            on_progress(len(decided), len(unique))
        if pending:
            if self.name == "offline":
                for pair, evidence in pending:
                    decided[pair] = Verdict(
                        settle_offline(pair.kind, evidence, self.band), "offline", evidence, approximate=True
                    )
            else:
                decided.update(self._ask_llm([p for p, _ in pending], on_progress, len(decided), len(unique)))
        for verdict in decided.values():
            self.stats[verdict.source] += 1
        return [decided[p] for p in pairs]

    def _ask_llm(self, pairs: list[Pair], on_progress, offset: int, total: int) -> dict[Pair, Verdict]:
        assert self.llm is not None
        if self.batch_dir is None:
            progress = (lambda done, _n: on_progress(offset + done, total)) if on_progress else None
            return dict(zip(pairs, self.llm.judge_many(pairs, progress, cache=self.cache), strict=True))
        found = self.cache.get_many(pairs) if self.cache else {}
        self._batch_cache_hits += len(found)
        verdicts = {p: Verdict(r.equivalent, "llm", 1.0 if r.equivalent else 0.0, rationale=r.rationale)
                    for p, r in found.items()}  # fmt: skip
        missing = [p for p in pairs if p not in found]
        if missing:
            keyed = [(self.cache.key(p) if self.cache else str(i), p) for i, p in enumerate(missing)]
            by_id = self.llm.run_batch(keyed, self.batch_dir)
            fresh = {p: by_id[cid] for cid, p in keyed}
            if self.cache:
                self.cache.put_many((p, reply_of(v)) for p, v in fresh.items())
            verdicts.update(fresh)
        return verdicts

    def summary(self) -> dict[str, int]:
        return {"llm_calls": self.llm_calls, "cache_hits": self.cache_hits, **dict(self.stats)}


def make_judge(
    name: str, store: Store | ShortLivedStore | None = None, *, llm_config: LLMConfig | None = None, use_embeddings: bool = True,
    batch_dir: Path | None = None,
) -> CascadeJudge:  # fmt: skip
    """A judge by configuration name; the LLM comes from `llm_config` or the environment."""
    config = llm_config or (LLMConfig.from_env() if name != "offline" else None)
    llm = LLMStage(config, load_prompts()) if config else None
    embedder = None
    if use_embeddings and name != "llm":
        from core.measure.judge import embeddings

        ok, _ = embeddings.available()
        embedder = embeddings.EmbeddingStage() if ok else None
    return CascadeJudge(name, store=store, llm=llm, embeddings=embedder, batch_dir=batch_dir)
