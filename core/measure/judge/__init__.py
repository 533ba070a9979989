"""The semantic judge: pairwise equivalence questions answered by a cascade of stages.

Four kinds of question, each a pair of texts (a, b) with optional context:
- `gold_vs_agent`: a human gold step vs an agent step sentence;
- `agent_vs_agent`: two agent actions (repetitiveness);
- `stated_vs_executed`: the action the reasoning states vs the one sent to the browser;
- `requirement_in_answer`: a requirement (a) found in a final answer (b)?

Every verdict says which stage decided it (`source`). `verdict=None` means unresolved (an API failure,
an unparsable reply): callers must never count it as "different".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from core.progress import ProgressCallback

Kind = Literal["gold_vs_agent", "agent_vs_agent", "stated_vs_executed", "requirement_in_answer"]
KINDS: tuple[Kind, ...] = ("gold_vs_agent", "agent_vs_agent", "stated_vs_executed", "requirement_in_answer")
STAGES: tuple[str, ...] = ("rule", "lexical", "embedding", "llm", "offline", "none")


# The judge's verdict in words, the same on every page and in the CLI.
VERDICT_WORDS = {True: "same", False: "different", None: "could not answer"}


@dataclass(frozen=True)
class Pair:
    kind: Kind
    a: str
    b: str
    context: str = ""


@dataclass(frozen=True)
class Verdict:
    verdict: bool | None  # True equivalent, False different, None unresolved
    source: str
    score: float | None = None
    approximate: bool = False  # settled without an LLM inside the ambiguous band
    rationale: str | None = None

    @property
    def label(self) -> str:
        return VERDICT_WORDS[self.verdict]


class Judge(Protocol):
    """Anything that answers a batch of pairs, one verdict per pair, in order."""

    name: str

    def judge_many(
        self, pairs: Sequence[Pair], on_progress: ProgressCallback | None = None
    ) -> list[Verdict]: ...
