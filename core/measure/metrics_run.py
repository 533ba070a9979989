"""Orchestration: load a run's trajectories and a gold set from the store, ask the judge every pair
the metrics need (in one batch, so the LLM stage can run concurrently and the cache is hit once), compute
the pure metrics of `core.measure.metrics`, and write `metrics`, `alignments` (the best alternative's
matched pairs) and `alignment_steps` (every agent step against every gold alternative: what the Alignment
tab shows, so the read model never runs the judge).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import orjson
import pyarrow as pa

from core.errors import InputError, NotFound
from core.measure import metrics as m
from core.measure.action_grammar import ParsedAction, readable
from core.measure.judge import Judge, Pair, Verdict
from core.measure.llm.client import LLMStats
from core.measure.requirements import ensure_requirements, requirements_by_task
from core.measure.run_summaries import refresh_run_summary
from core.progress import ProgressCallback
from core.store import ShortLivedStore, Store, insert_rows, require_runs, utcnow

# Run formats whose stated action *is* the executed one: EAR counts a browser error as the mismatch.
STATED_IS_EXECUTED = frozenset({"agentlab"})
# Run formats whose executed actions are screen coordinates (OpAgent's grounder): which element a step
# hit is not recorded, so EAR (the stated element vs the executed one) is undefined, not "no error".
COORDINATE_ACTIONS = frozenset({"opagent"})
# Metrics over the agent's steps: undefined for a trajectory that records only its final answer.
STEP_METRICS = ("ssr", "ssr_unordered", "rr", "mean_recovery_cost", "repr", "repr_run_members", "ear")

# Why a metric is NULL; the report and the real-data test rely on every NULL having one of these.
NULL_REASONS = {
    "no_gold": "the gold set has no steps for this task",
    "no_agent_steps": "the trajectory has no executed action",
    "no_deviation": "the agent never left the gold path: nothing to recover from (RR)",
    "no_recovery": "no deviation was recovered: no recovery cost",
    "fewer_than_2_requirements": "PSR is defined only for tasks with at least two requirements",
    "no_requirements": "the task has no requirements (not a retrieve task, no must_include)",
    "unresolved_pairs": "the judge could not answer a pair this metric needs (flagged)",
    "answer_only": "the trajectory records only the final answer, no browser action (step metrics do not apply)",
    "coordinate_actions": "the executed actions are screen coordinates: which element they hit is not recorded",
}


METRIC_VALUE_COLUMNS = (
    "gold_version", "alternative", "ssr", "ssr_unordered", "rr", "deviations", "recoveries", "missed_gold",
    "mean_recovery_cost", "repr", "repr_run_members", "psr", "ear", "n_gold", "n_agent", "n_requirements",
    "success", "reward", "termination", "answer_category",
)  # fmt: skip

# Column types of `alignment_steps` (migration 4), so a batch whose column is all NULL still inserts.
ALIGNMENT_STEPS_SCHEMA = pa.schema(
    [("run", pa.string()), ("task_id", pa.int32()), ("episode", pa.string()), ("gold_set", pa.string()),
     ("gold_version", pa.int32()), ("alternative", pa.int32()), ("judge_config", pa.string()),
     ("preset", pa.string()), ("agent_idx", pa.int32()), ("agent_text", pa.string()), ("gold_idx", pa.int32()),
     ("match_source", pa.string()), ("match_score", pa.float64()), ("deviation", pa.bool_()),
     ("rejoined_gold_idx", pa.int32()), ("repeats_previous", pa.bool_()), ("closest_gold_idx", pa.int32()),
     ("closest_verdict", pa.bool_()), ("closest_source", pa.string()), ("closest_score", pa.float64())]
)  # fmt: skip


@dataclass
class AgentStep:
    idx: int
    text: str  # readable sentence compared with gold
    repeat_text: str  # sentence plus the element id: RepR equivalence
    stated: str | None
    executed: str | None
    error: str | None
    parsed: bool


@dataclass
class TaskInput:
    task_id: int
    episode: str
    steps: list[AgentStep]
    final_answer: str | None
    termination: str | None
    success: bool | None
    reward: float | None
    gold_version: int | None = None
    gold: dict[int, list[str]] = field(default_factory=dict)  # alternative -> step texts
    requirements: list[str] = field(default_factory=list)
    intent: str = ""
    stated_is_executed: bool = False
    answer_only: bool = False
    coordinate_actions: bool = False


@dataclass(frozen=True)
class StepAlignment:
    """One agent step against one gold alternative, as the Alignment tab shows it (`alignment_steps`)."""

    alternative: int
    agent: int  # position in TaskInput.steps (not steps.idx)
    gold_idx: int | None = None  # matched by the ordered alignment (LCS)
    match: Verdict | None = None  # the matched pair's verdict
    deviation: bool | None = None  # the RR walk left the gold path here; None: not judged
    rejoined_gold_idx: int | None = None  # recovery: the gold step rejoined at this step
    repeats_previous: bool | None = None  # same action as the step before; None: not judged
    closest_gold_idx: int | None = None  # unmatched step: the gold step the judge scored highest
    closest: Verdict | None = None  # that pair's verdict


class TaskResult(NamedTuple):
    """What `compute_task` finds for one task."""

    values: dict[str, Any]  # the metrics row's values
    alignment: list[tuple[int, int, int, Verdict]]  # (alt, gold_idx, agent position, verdict): best alt
    null_reasons: dict[str, str]
    approximate: bool
    unresolved: int  # pairs the metrics needed and the judge could not answer
    steps: list[StepAlignment]  # every agent step against every gold alternative


@dataclass
class RunSummary:
    tasks: int = 0
    tasks_with_gold: int = 0
    pairs: int = 0
    stages: dict[str, int] = field(default_factory=dict)
    llm_calls: int = 0
    cache_hits: int = 0
    llm: LLMStats | None = None  # what the LLM stage did, when the judge has one
    approximate_tasks: int = 0
    unresolved_tasks: int = 0
    null_reasons: Counter = field(default_factory=Counter)  # (metric, reason) -> tasks


# -- loading -------------------------------------------------------------------------------------
def _step_text(row: dict[str, Any]) -> str:
    if row["readable"]:
        return row["readable"]
    if row["verb"]:
        fields = {k: row[k] for k in ("verb", "element_id", "element_role", "element_label", "value", "key",
                                      "direction", "target_url", "answer")}  # fmt: skip
        return readable(ParsedAction(raw=row["executed_action"] or "", **fields))
    return row["executed_action"] or ""


step_text = _step_text  # the readable sentence of a stored step (the gold editor's draft uses it too)


def load_task_inputs(
    store: Store | ShortLivedStore, run: str, gold_set: str | None, task_ids: Sequence[int] | None = None
) -> list[TaskInput]:
    """The run's answer trajectory of every task (or of `task_ids`), with its gold (current version)
    and requirements."""
    params: dict[str, Any] = {"run": run}
    if task_ids is not None:
        params["tasks"] = [int(t) for t in task_ids]

    def only(alias: str) -> str:
        return "" if task_ids is None else f" AND list_contains($tasks, {alias}.task_id)"

    fmt = store.query("SELECT source_format FROM runs WHERE name = ?", [run])
    stated_is_executed = bool(fmt) and fmt[0][0] in STATED_IS_EXECUTED
    coordinate_actions = bool(fmt) and fmt[0][0] in COORDINATE_ACTIONS
    trajectories = store.query_dicts(
        """SELECT t.task_id, t.episode, t.final_answer, t.termination, t.success, t.reward,
                  coalesce(t.answer_only, FALSE) AS answer_only, e.status AS eval_status, k.intent
           FROM trajectories t
           LEFT JOIN evaluations e ON e.run = t.run AND e.task_id = t.task_id
           LEFT JOIN tasks k ON k.task_id = t.task_id
           WHERE t.run = $run AND t.is_answer"""
        + only("t")
        + " ORDER BY t.task_id",
        params,
    )
    steps: dict[int, list[AgentStep]] = {}
    for row in store.query_dicts(
        """SELECT s.* FROM steps s JOIN trajectories t
             ON t.run = s.run AND t.task_id = s.task_id AND t.episode = s.episode AND t.is_answer
           WHERE s.run = $run AND s.executed_action IS NOT NULL AND coalesce(s.kind, 'action') = 'action'"""
        + only("s")
        + " ORDER BY s.task_id, s.idx",
        params,
    ):
        text = _step_text(row)
        bid = f" [bid {row['element_id']}]" if row["element_id"] else ""
        steps.setdefault(row["task_id"], []).append(
            AgentStep(row["idx"], text, text + bid, row["stated_action"], row["executed_action"], row["error"],
                      bool(row["verb"]) and row["verb"] != "unknown")
        )  # fmt: skip
    gold: dict[int, tuple[int, dict[int, list[str]]]] = {}
    if gold_set:
        for task_id, version, alternative, texts in store.query(
            """SELECT task_id, version, alternative, list(text ORDER BY idx) FROM gold_steps g
               WHERE gold_set = $gold AND version = (SELECT max(version) FROM gold_steps h
                                                 WHERE h.gold_set = g.gold_set AND h.task_id = g.task_id)"""
            + only("g")
            + " GROUP BY task_id, version, alternative ORDER BY task_id, alternative",
            {"gold": gold_set, **({"tasks": params["tasks"]} if task_ids is not None else {})},
        ):
            gold.setdefault(task_id, (version, {}))[1][alternative] = list(texts)
    if store.query("SELECT count(*) FROM tasks")[0][0]:
        ensure_requirements(store)
    requirements = requirements_by_task(store)
    inputs = []
    for t in trajectories:
        version, alternatives = gold.get(t["task_id"], (None, {}))
        inputs.append(
            TaskInput(
                task_id=t["task_id"], episode=t["episode"], steps=steps.get(t["task_id"], []),
                final_answer=t["final_answer"], termination=t["termination"],
                success=m.task_success(t["eval_status"], t["success"], t["reward"]), reward=t["reward"],
                gold_version=version, gold=alternatives,
                requirements=requirements.get(t["task_id"], ("", []))[1], intent=t["intent"] or "",
                stated_is_executed=stated_is_executed, answer_only=t["answer_only"],
                coordinate_actions=coordinate_actions,
            )
        )  # fmt: skip
    return inputs


# -- the questions a task needs ------------------------------------------------------------------
def _ear_askable(step: AgentStep) -> bool:
    """EAR asks the judge only when there is a stated action and a parsed executed one."""
    executed = (step.executed or "").strip()
    return bool(step.stated and step.stated.strip() and step.parsed and executed.lower() not in ("", "none"))


def task_pairs(task: TaskInput) -> list[Pair]:
    ctx = task.intent
    if task.answer_only:  # no step metric: only the answer is judged
        return _answer_pairs(task)
    pairs = [
        Pair("gold_vs_agent", g, s.text, ctx) for alt in task.gold.values() for g in alt for s in task.steps
    ]
    pairs += [
        Pair("agent_vs_agent", task.steps[i - 1].repeat_text, task.steps[i].repeat_text, "")
        for i in range(1, len(task.steps))
    ]
    if not task.stated_is_executed and not task.coordinate_actions:
        pairs += [Pair("stated_vs_executed", s.stated, s.executed, "") for s in task.steps if _ear_askable(s)]
    return pairs + _answer_pairs(task)


def _answer_pairs(task: TaskInput) -> list[Pair]:
    if task.final_answer and task.final_answer.strip():
        return [Pair("requirement_in_answer", r, task.final_answer, task.intent) for r in task.requirements]
    return []


# -- per-task computation (pure given the verdicts) ----------------------------------------------
def _best_alternative(scored: list[tuple]) -> tuple | None:
    """The (alt, gold, ordered, unordered, recovery, primary) with the best primary SSR (ties: lowest alt).

    An alternative whose SSR is unresolved might have been the best one, so the choice is unknown and
    every gold-based metric becomes unresolved, unless a scored alternative already reached 1.0:
    picking the best scored one would count the unanswered pairs as "different".
    """
    if not scored:
        return None
    if len(scored) == 1:
        return scored[0]
    resolved = [s for s in scored if not s[5].unresolved]
    top = max((s[5].value for s in resolved if s[5].value is not None), default=None)
    if len(resolved) < len(scored) and (top is None or top < 1.0):
        alt, gold = scored[0][:2]
        unknown = m.StepSuccess(None, unresolved=True)
        return alt, gold, unknown, unknown, m.Recovery(None, unresolved=True), unknown
    return max(resolved, key=lambda s: -1.0 if s[5].value is None else s[5].value)


def compute_task(task: TaskInput, verdict_of: Callable[[Pair], Verdict], preset: m.Preset) -> TaskResult:
    """Metrics of one task, the best alternative's alignment, and every agent step against every gold
    alternative (what the Alignment tab shows: matches, deviation/recovery/repeat marks, closest gold)."""
    ctx = task.intent
    steps = task.steps
    used: dict[Pair, Verdict] = {}

    def ask(pair: Pair) -> bool | None:
        verdict = verdict_of(pair)
        used[pair] = verdict
        return verdict.verdict

    reasons: dict[str, str] = {}
    # Every column on every row: the bulk insert takes its columns from the rows.
    values: dict[str, Any] = dict.fromkeys(METRIC_VALUE_COLUMNS)
    values.update(n_agent=len(steps), n_requirements=len(task.requirements))
    if task.answer_only:
        # Only the final answer was recorded: step metrics are undefined, not 0; PSR still applies.
        if task.gold:
            alt = min(task.gold)
            values.update(gold_version=task.gold_version, alternative=alt, n_gold=len(task.gold[alt]))
        reasons.update(dict.fromkeys(STEP_METRICS, "answer_only"))
        _answer_metrics(task, ask, preset, values, reasons)
        approximate = any(v.approximate for v in used.values())
        unjudged = [StepAlignment(alt, a) for alt in sorted(task.gold) for a in range(len(steps))]
        return TaskResult(values, [], reasons, approximate, sum(1 for v in used.values() if v.verdict is None),
                          unjudged)  # fmt: skip
    # SSR and RR against every gold alternative; keep the best by SSR.
    scored = []
    for alt, gold in sorted(task.gold.items()):

        def eq(g: int, a: int, gold: list[str] = gold) -> bool | None:
            return ask(Pair("gold_vs_agent", gold[g], steps[a].text, ctx))

        ordered = m.step_success_ordered(len(gold), len(steps), eq)
        unordered = m.step_success_unordered(len(gold), len(steps), eq)
        recovery = m.recovery_rate(
            len(gold), len(steps), eq, lookahead=preset.lookahead, paper_code=preset.paper_code_recovery
        )
        primary = unordered if preset.ssr_unordered_primary else ordered
        scored.append((alt, gold, ordered, unordered, recovery, primary))
    best = _best_alternative(scored)
    alignment: list[tuple[int, int, int, Verdict]] = []
    if best is None:
        values.update(gold_version=None, alternative=None, n_gold=None)
        for name in ("ssr", "ssr_unordered", "rr", "mean_recovery_cost"):
            reasons[name] = "no_gold"
    else:
        alt, gold, ordered, unordered, recovery, primary = best
        values.update(
            gold_version=task.gold_version, alternative=alt, n_gold=len(gold), ssr=primary.value,
            ssr_unordered=unordered.value, rr=recovery.value, deviations=recovery.deviations,
            recoveries=recovery.recoveries, missed_gold=recovery.missed_gold,
            mean_recovery_cost=recovery.mean_recovery_cost,
        )  # fmt: skip
        for name, result in (("ssr", primary), ("ssr_unordered", unordered)):
            if result.value is None:
                reasons[name] = "unresolved_pairs" if result.unresolved else "no_gold"
        if recovery.value is None:
            reasons["rr"] = (
                "unresolved_pairs" if recovery.unresolved else ("no_gold" if not gold else "no_deviation")
            )
        if values["mean_recovery_cost"] is None:
            reasons["mean_recovery_cost"] = reasons.get("rr", "no_recovery")
        for g, a in ordered.matches:
            alignment.append((alt, g, a, used[Pair("gold_vs_agent", gold[g], steps[a].text, ctx)]))
    # RepR over executed steps.
    rep = m.repetitiveness(
        len(steps),
        lambda i: ask(Pair("agent_vs_agent", steps[i - 1].repeat_text, steps[i].repeat_text, "")),
    )
    values.update(repr=rep.value, repr_run_members=rep.run_members)
    if rep.value is None:
        reasons["repr"] = reasons["repr_run_members"] = (
            "unresolved_pairs" if rep.unresolved else "no_agent_steps"
        )
    # EAR: stated vs executed.
    kept = steps
    if preset.ear_truncate_early_stop:
        kept = steps[: m.truncate_at_early_stop([s.executed for s in steps])]
    if task.coordinate_actions:
        matches = [None] * len(kept)  # not a question for the judge: EAR is undefined (reason below)
    elif task.stated_is_executed:
        matches = [s.parsed and not s.error for s in kept]
    else:
        # No stated action, or an executed one that did not parse, is a mismatch by definition (paper
        # Fig. 4 and 5): not a question for the judge, which in the `llm` configuration could answer it.
        matches = [
            ask(Pair("stated_vs_executed", s.stated, s.executed, "")) if _ear_askable(s) else False
            for s in kept
        ]
    ear = m.element_accuracy(matches)
    values["ear"] = ear.value
    if ear.value is None:
        reasons["ear"] = "unresolved_pairs" if ear.unresolved else "no_agent_steps"
    if task.coordinate_actions and kept:
        reasons["ear"] = "coordinate_actions"
    _answer_metrics(task, ask, preset, values, reasons)
    approximate = any(v.approximate for v in used.values())
    unresolved = sum(1 for v in used.values() if v.verdict is None)
    return TaskResult(
        values, alignment, reasons, approximate, unresolved, _step_alignments(task, scored, verdict_of)
    )


def _step_alignments(
    task: TaskInput, scored: list[tuple], verdict_of: Callable[[Pair], Verdict]
) -> list[StepAlignment]:
    """Every agent step against every gold alternative, from the verdicts the metrics already have
    (task_pairs asks every gold x agent pair of every alternative and every consecutive agent pair).
    Read through `verdict_of`, not the metrics' `ask`: showing a pair never changes which pairs a metric
    needed (approximate, unresolved)."""
    steps, ctx = task.steps, task.intent
    repeats = [None] + [
        verdict_of(Pair("agent_vs_agent", steps[i - 1].repeat_text, steps[i].repeat_text, "")).verdict
        for i in range(1, len(steps))
    ]
    found: list[StepAlignment] = []
    for alt, gold, ordered, _unordered, recovery, _primary in scored:
        matched = {a: g for g, a in ordered.matches}
        deviated = set(recovery.deviated_at)
        rejoined = dict(recovery.recovered_at)
        walked = not recovery.unresolved
        for a, step in enumerate(steps):
            g = matched.get(a)
            match = closest = closest_g = None
            if g is not None:
                match = verdict_of(Pair("gold_vs_agent", gold[g], step.text, ctx))
            elif gold:
                # The gold step scored highest (ties: the earliest): the judge's "different" answer to check.
                scores = [
                    (verdict_of(Pair("gold_vs_agent", text, step.text, ctx)), i)
                    for i, text in enumerate(gold)
                ]
                closest, closest_g = max(
                    scores, key=lambda vi: (-1.0 if vi[0].score is None else vi[0].score, -vi[1])
                )
            found.append(
                StepAlignment(
                    alt, a, gold_idx=g, match=match, deviation=(a in deviated) if walked else None,
                    rejoined_gold_idx=rejoined.get(a), repeats_previous=repeats[a], closest_gold_idx=closest_g,
                    closest=closest,
                )
            )  # fmt: skip
    return found


def _answer_metrics(
    task: TaskInput, ask: Callable[[Pair], bool | None], preset: m.Preset, values: dict, reasons: dict
) -> None:
    """PSR against the final answer, and the task's facts (success, termination, answer category)."""
    has_answer = bool(task.final_answer and task.final_answer.strip())
    found = (
        [
            ask(Pair("requirement_in_answer", r, task.final_answer or "", task.intent))
            for r in task.requirements
        ]
        if has_answer
        else [False] * len(task.requirements)
    )
    psr = m.partial_success(
        found,
        has_answer=has_answer,
        min_requirements=preset.psr_min_requirements,
        empty_score=preset.psr_empty_score,
    )
    values["psr"] = psr.value
    if psr.value is None:
        reasons["psr"] = (
            "unresolved_pairs" if psr.unresolved else "no_requirements" if not task.requirements
            else "fewer_than_2_requirements"
        )  # fmt: skip
    values.update(
        success=task.success, reward=task.reward, termination=task.termination,
        answer_category=m.answer_category(task.termination, task.final_answer),
    )  # fmt: skip


# -- the whole run -------------------------------------------------------------------------------
def compute_run(
    tasks: Sequence[TaskInput],
    judge: Judge,
    preset: m.Preset,
    on_progress: ProgressCallback | None = None,
) -> list[tuple[TaskInput, TaskResult]]:
    pairs = list(dict.fromkeys(p for t in tasks for p in task_pairs(t)))
    verdicts = dict(zip(pairs, judge.judge_many(pairs, on_progress), strict=True))

    def verdict_of(pair: Pair) -> Verdict:
        found = verdicts.get(pair)
        if found is None:  # a question task_pairs did not foresee: ask it alone
            found = verdicts[pair] = judge.judge_many([pair])[0]
        return found

    return [(t, compute_task(t, verdict_of, preset)) for t in tasks]


def run_metrics(
    store: Store | ShortLivedStore, run: str, gold_set: str, judge: Judge, *, preset: str = "default",
    on_progress: ProgressCallback | None = None, task_ids: Sequence[int] | None = None,
) -> RunSummary:  # fmt: skip
    """Compute and store the metrics of `run` against `gold_set`; replaces earlier rows of the same
    (run, gold set, judge config, preset) — of every task, or only of `task_ids` (one task's button)."""
    if preset not in m.PRESETS:
        raise InputError("--preset", f"{preset!r} is not one of {', '.join(m.PRESETS)}")
    require_runs(store, [run], hint="import it first")
    if not store.query("SELECT 1 FROM gold_steps WHERE gold_set = ? LIMIT 1", [gold_set]):
        raise NotFound(
            "gold set", gold_set, where="with gold steps", hint="import it with `trajreview import gold`"
        )
    tasks = load_task_inputs(store, run, gold_set, task_ids)
    results = compute_run(tasks, judge, m.PRESETS[preset], on_progress)
    now = utcnow()
    summary = RunSummary(tasks=len(tasks), tasks_with_gold=sum(1 for t in tasks if t.gold))
    metric_rows, alignment_rows, step_rows = [], [], []
    for task, (values, alignment, reasons, approximate, unresolved, step_alignments) in results:
        metric_rows.append(
            {
                "run": run, "task_id": task.task_id, "episode": task.episode, "gold_set": gold_set,
                "judge_config": judge.name, "preset": preset, **values, "approximate": approximate,
                "unresolved_pairs": unresolved, "computed_at": now,
                "null_reasons": orjson.dumps(reasons).decode() if reasons else None,
            }
        )  # fmt: skip
        for alt, g, a, verdict in alignment:
            alignment_rows.append(
                {
                    "run": run, "task_id": task.task_id, "episode": task.episode, "gold_set": gold_set,
                    "gold_version": task.gold_version, "alternative": alt, "judge_config": judge.name,
                    "gold_idx": g, "agent_idx": task.steps[a].idx, "source": verdict.source,
                    "score": verdict.score,
                }
            )  # fmt: skip
        for sa in step_alignments:
            step = task.steps[sa.agent]
            step_rows.append(
                {
                    "run": run, "task_id": task.task_id, "episode": task.episode, "gold_set": gold_set,
                    "gold_version": task.gold_version, "alternative": sa.alternative, "judge_config": judge.name,
                    "preset": preset, "agent_idx": step.idx, "agent_text": step.text, "gold_idx": sa.gold_idx,
                    "match_source": sa.match.source if sa.match else None,
                    "match_score": sa.match.score if sa.match else None, "deviation": sa.deviation,
                    "rejoined_gold_idx": sa.rejoined_gold_idx, "repeats_previous": sa.repeats_previous,
                    "closest_gold_idx": sa.closest_gold_idx,
                    "closest_verdict": sa.closest.verdict if sa.closest else None,
                    "closest_source": sa.closest.source if sa.closest else None,
                    "closest_score": sa.closest.score if sa.closest else None,
                }
            )  # fmt: skip
        summary.approximate_tasks += approximate
        summary.unresolved_tasks += unresolved > 0
        for metric, reason in reasons.items():
            summary.null_reasons[(metric, reason)] += 1
    with store.transaction() as cur:
        only = "" if task_ids is None else " AND list_contains(?, task_id)"
        extra = [] if task_ids is None else [[int(t) for t in task_ids]]
        cur.execute(
            "DELETE FROM metrics WHERE run = ? AND gold_set = ? AND judge_config = ? AND preset = ?" + only,
            [run, gold_set, judge.name, preset, *extra],
        )
        cur.execute(
            "DELETE FROM alignments WHERE run = ? AND gold_set = ? AND judge_config = ?" + only,
            [run, gold_set, judge.name, *extra],
        )
        cur.execute(
            "DELETE FROM alignment_steps WHERE run = ? AND gold_set = ? AND judge_config = ? AND preset = ?"
            + only,
            [run, gold_set, judge.name, preset, *extra],
        )
        insert_rows(cur, "metrics", metric_rows)
        insert_rows(cur, "alignments", alignment_rows)
        insert_rows(cur, "alignment_steps", step_rows, schema=ALIGNMENT_STEPS_SCHEMA)
        refresh_run_summary(cur, run)  # its metric sets
    stats = getattr(judge, "summary", lambda: {})()
    summary.llm_calls = stats.pop("llm_calls", 0)
    summary.cache_hits = stats.pop("cache_hits", 0)
    summary.llm = getattr(judge, "llm_stats", None)
    summary.stages = stats
    summary.pairs = sum(stats.values())
    return summary


def run_task_metrics(
    store: Store, run: str, task_id: int, gold_set: str, preset: str = "default"
) -> RunSummary:
    """Compute and store one task's metrics with the offline judge, as `trajreview metrics` would (the task
    page's button)."""
    from core.measure.judge.cascade import make_judge

    return run_metrics(store, run, gold_set, make_judge("offline", store), preset=preset, task_ids=[task_id])
