"""The five trajectory metrics as pure functions (spec: ../shared/docs/trajectory-metrics.md).

Every function takes step counts and an equivalence callback `eq(i, j) -> bool | None` answered by a
judge (True = equivalent, False = different, None = unresolved). A metric that consults an unresolved
pair is itself undefined (None) and says so with `unresolved=True`: an unanswered question never
counts as "different". Undefined metrics are None, never 0 or 999.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from core.measure.action_grammar import is_na_answer

Equiv = Callable[[int, int], bool | None]


class _Unresolved(Exception):
    """Raised inside a metric when it needs a pair the judge could not answer."""


def _strict(eq: Equiv) -> Callable[[int, int], bool]:
    def ask(i: int, j: int) -> bool:
        answer = eq(i, j)
        if answer is None:
            raise _Unresolved
        return answer

    return ask


# -- Step Success Rate ---------------------------------------------------------------------------
@dataclass(frozen=True)
class StepSuccess:
    value: float | None
    matches: tuple[tuple[int, int], ...] = ()  # (gold_idx, agent_idx)
    unresolved: bool = False


def step_success_ordered(n_gold: int, n_agent: int, eq: Equiv) -> StepSuccess:
    """Matched gold steps / gold steps, with the largest order-preserving one-to-one matching (LCS)."""
    if n_gold == 0:
        return StepSuccess(None)
    ask = _strict(eq)
    try:
        same = [[ask(g, a) for a in range(n_agent)] for g in range(n_gold)]
    except _Unresolved:
        return StepSuccess(None, unresolved=True)
    # Classic LCS table; lengths[g][a] = best matching of gold[g:] with agent[a:].
    lengths = [[0] * (n_agent + 1) for _ in range(n_gold + 1)]
    for g in range(n_gold - 1, -1, -1):
        for a in range(n_agent - 1, -1, -1):
            if same[g][a]:
                lengths[g][a] = lengths[g + 1][a + 1] + 1
            else:
                lengths[g][a] = max(lengths[g + 1][a], lengths[g][a + 1])
    matches = []
    g = a = 0
    while g < n_gold and a < n_agent:
        # Prefer the earliest agent step for each gold step, so drawn rows read naturally.
        if same[g][a] and lengths[g][a] == lengths[g + 1][a + 1] + 1:
            matches.append((g, a))
            g, a = g + 1, a + 1
        elif lengths[g][a + 1] >= lengths[g + 1][a]:
            a += 1
        else:
            g += 1
    return StepSuccess(len(matches) / n_gold, tuple(matches))


def step_success_unordered(n_gold: int, n_agent: int, eq: Equiv) -> StepSuccess:
    """The paper's prompt procedure: each gold step, in order, takes the first free equivalent agent step."""
    if n_gold == 0:
        return StepSuccess(None)
    ask = _strict(eq)
    used: set[int] = set()
    matches = []
    try:
        for g in range(n_gold):
            for a in range(n_agent):
                if a not in used and ask(g, a):
                    used.add(a)
                    matches.append((g, a))
                    break
    except _Unresolved:
        return StepSuccess(None, unresolved=True)
    return StepSuccess(len(matches) / n_gold, tuple(matches))


# -- Recovery Rate -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Recovery:
    value: float | None
    deviations: int | None = None
    recoveries: int | None = None
    missed_gold: int | None = None
    costs: tuple[int, ...] = ()
    unresolved: bool = False
    # Where the walk happened, for reviewers: agent index of each incident's first off-gold step, and
    # (agent index, gold index) of each recovery.
    deviated_at: tuple[int, ...] = ()
    recovered_at: tuple[tuple[int, int], ...] = ()

    @property
    def mean_recovery_cost(self) -> float | None:
        return sum(self.costs) / len(self.costs) if self.costs else None


def recovery_rate(
    n_gold: int, n_agent: int, eq: Equiv, *, lookahead: int = 5, paper_code: bool = False
) -> Recovery:
    """Recoveries / deviation incidents, walking executed steps against a gold pointer.

    `paper_code=True` reproduces the released code: no deviation with all gold fulfilled scores 1.0,
    and each gold step left when the agent stops on track is its own unrecovered incident.
    """
    if n_gold == 0:
        return Recovery(None)
    ask = _strict(eq)
    g = 0
    deviating = False
    start = -1
    deviations = recoveries = missed = 0
    costs: list[int] = []
    deviated_at: list[int] = []
    recovered_at: list[tuple[int, int]] = []
    try:
        for a in range(n_agent):
            if g >= n_gold:
                break  # agent steps after the gold is exhausted only count in RepR and n_agent
            if not deviating and ask(g, a):
                g += 1
                continue
            if not deviating:
                deviating, start = True, a
                deviations += 1
                deviated_at.append(a)
            # While deviating (and for the incident's first step), look ahead on the gold side.
            for k in range(g, min(g + lookahead, n_gold)):
                if ask(k, a):
                    missed += k - g
                    g = k + 1
                    recoveries += 1
                    costs.append(a - start + 1)
                    recovered_at.append((a, k))
                    deviating = False
                    break
    except _Unresolved:
        return Recovery(None, unresolved=True)
    if g < n_gold:
        if not deviating:
            # Stopping on track with gold left: one more, unrecovered incident (paper code: one each).
            deviations += (n_gold - g) if paper_code else 1
        missed += n_gold - g
    if deviations == 0:
        value = 1.0 if paper_code else None
        return Recovery(value, 0, 0, missed, ())
    return Recovery(
        recoveries / deviations, deviations, recoveries, missed, tuple(costs),
        deviated_at=tuple(deviated_at), recovered_at=tuple(recovered_at),
    )  # fmt: skip


# -- Repetitiveness Rate -------------------------------------------------------------------------
@dataclass(frozen=True)
class Repetitiveness:
    value: float | None  # 1 - later copies / actions
    run_members: float | None  # 1 - members of runs of >= 2 / actions
    repeats: int | None = None
    unresolved: bool = False


def repetitiveness(n_actions: int, same_as_previous: Callable[[int], bool | None]) -> Repetitiveness:
    """`same_as_previous(i)` says whether action i (i >= 1) is equivalent to action i-1."""
    if n_actions == 0:
        return Repetitiveness(None, None)
    flags = [False]
    for i in range(1, n_actions):
        answer = same_as_previous(i)
        if answer is None:
            return Repetitiveness(None, None, unresolved=True)
        flags.append(answer)
    repeats = sum(flags)
    members = sum(1 for i in range(n_actions) if flags[i] or (i + 1 < n_actions and flags[i + 1]))
    return Repetitiveness(1 - repeats / n_actions, 1 - members / n_actions, repeats)


# -- Partial Success Rate ------------------------------------------------------------------------
@dataclass(frozen=True)
class PartialSuccess:
    value: float | None
    found: int | None = None
    required: int = 0
    unresolved: bool = False


def partial_success(
    found: Sequence[bool | None], *, has_answer: bool, min_requirements: int = 2,
    empty_score: float | None = None,
) -> PartialSuccess:  # fmt: skip
    """Requirements found in the final answer / requirements; only for tasks with >= 2 of them.

    No answer at all (early stop, error) finds nothing: 0, not None. `empty_score` is what a task
    with zero requirements scores (None by default; the paper code's 1.0 in its preset).
    """
    n = len(found)
    if n == 0:
        return PartialSuccess(empty_score, 0, 0)
    if n < min_requirements:
        return PartialSuccess(None, None, n)
    if not has_answer:
        return PartialSuccess(0.0, 0, n)
    if any(f is None for f in found):
        return PartialSuccess(None, None, n, unresolved=True)
    hits = sum(1 for f in found if f)
    return PartialSuccess(hits / n, hits, n)


# -- Element Accuracy Rate -----------------------------------------------------------------------
@dataclass(frozen=True)
class ElementAccuracy:
    value: float | None
    matched: int | None = None
    steps: int = 0
    unresolved: bool = False


def element_accuracy(step_matches: Sequence[bool | None]) -> ElementAccuracy:
    """Agent steps whose executed action equals the stated one / agent steps.

    The caller has already turned "no stated action" and "executed action failed to parse or errored"
    into False (a mismatch, paper Fig. 4 and 5).
    """
    n = len(step_matches)
    if n == 0:
        return ElementAccuracy(None)
    if any(m is None for m in step_matches):
        return ElementAccuracy(None, None, n, unresolved=True)
    hits = sum(1 for m in step_matches if m)
    return ElementAccuracy(hits / n, hits, n)


def truncate_at_early_stop(actions: Sequence[str | None]) -> int:
    """Paper-code EAR: how many steps to keep (those before the first one mentioning "early stop")."""
    for i, action in enumerate(actions):
        if action and "early stop" in action.lower():
            return i
    return len(actions)


# -- Per-task facts ------------------------------------------------------------------------------
ANSWER_CATEGORIES = ("na_answer", "produced_answer", "early_stop")


def answer_category(termination: str | None, final_answer: str | None) -> str:
    """Paper Table 7: N/A answer, any other answer, or no answer at all."""
    if termination == "na_answer":
        return "na_answer"
    if final_answer is not None and final_answer.strip():
        if is_na_answer(final_answer):
            return "na_answer"
        return "produced_answer"
    return "early_stop"


def task_success(
    evaluation_status: str | None, source_success: bool | None, reward: float | None
) -> bool | None:
    """The evaluation's verdict when there is one; else the source's success; else reward >= 1."""
    if evaluation_status is not None:
        return {"success": True, "failure": False}.get(evaluation_status)
    if source_success is not None:
        return source_success
    if reward is not None:
        return reward >= 1.0
    return None


# -- Presets -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Preset:
    name: str
    lookahead: int = 5
    paper_code_recovery: bool = False
    ssr_unordered_primary: bool = False  # the `ssr` column holds the unordered procedure
    ear_truncate_early_stop: bool = False
    psr_min_requirements: int = 2
    psr_empty_score: float | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)


PRESETS = {
    "default": Preset("default"),
    "paper-code": Preset(
        "paper-code",
        lookahead=1,
        paper_code_recovery=True,
        ssr_unordered_primary=True,
        ear_truncate_early_stop=True,
        psr_min_requirements=1,
        psr_empty_score=1.0,
        notes=("empty gold gives None, not the code's 999", "no recovery gives a NULL mean cost, not inf"),
    ),
}
