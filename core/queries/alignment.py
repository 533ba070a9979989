"""The Alignment tab: human gold | the agent's stated actions | executed actions, one row per aligned
pair or unmatched step, with the judge's verdict and where the trajectory left and rejoined the gold.

Everything here is read from what `trajreview metrics` stored for the chosen (gold set, judge config,
preset): the metrics row, and `alignment_steps` — every agent step against every gold alternative with
its matched gold step, the deviation/recovery/repeat marks and the closest gold step of an unmatched
step. This module never runs the judge; when nothing is stored for a configuration the view says so.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import orjson

from core.measure.judge import VERDICT_WORDS
from core.measure.metrics_run import NULL_REASONS
from core.queries.records import Record
from core.store import Store

NOT_COMPUTED = "metrics not computed for this configuration"
NO_GOLD_THEN = "metrics computed when this task had no gold in this set: recompute them"
NO_ALIGNMENT = "metrics computed before trajreview stored their alignment (schema version 4): recompute them"


class StoredMetrics(Record):
    """One stored `metrics` row of a task (docs/schema.md, metrics)."""

    run: str
    """The run."""
    task_id: int
    """The task."""
    episode: str
    """The measured attempt (the run's answer)."""
    gold_set: str
    """Gold set measured against."""
    judge_config: str
    """Judge configuration: `offline`, `cascade` or `llm`."""
    preset: str
    """Metric preset: `default` or `paper-code`."""
    gold_version: int | None = None
    """Gold version used; below the task's current version the row is stale. None: no gold then."""
    alternative: int | None = None
    """The best-matching gold alternative (0-based), the one SSR and RR were kept from."""
    ssr: float | None = None
    """Step Success Rate."""
    ssr_unordered: float | None = None
    """SSR, unordered variant."""
    rr: float | None = None
    """Recovery Rate."""
    deviations: int | None = None
    """Deviation incidents the RR walk found."""
    recoveries: int | None = None
    """Recovered incidents."""
    missed_gold: int | None = None
    """Gold steps skipped by recoveries or left when the agent stopped."""
    mean_recovery_cost: float | None = None
    """Mean agent steps from an incident's first step to the recovering step."""
    repr: float | None = None
    """Repetitiveness Rate."""
    repr_run_members: float | None = None
    """RepR, run-members variant."""
    psr: float | None = None
    """Partial Success Rate."""
    ear: float | None = None
    """Element Accuracy Rate."""
    n_gold: int | None = None
    """Gold steps of the chosen alternative."""
    n_agent: int | None = None
    """Executed agent steps."""
    n_requirements: int | None = None
    """The task's requirements (PSR denominator)."""
    success: bool | None = None
    """Task success."""
    reward: float | None = None
    """The source's raw reward."""
    termination: str | None = None
    """How the attempt ended."""
    answer_category: str | None = None
    """`na_answer`, `produced_answer` or `early_stop` (paper Table 7)."""
    approximate: bool = False
    """Decided without an LLM in the judge's ambiguous band."""
    unresolved_pairs: int = 0
    """Pairs the judge could not answer (the metrics that needed them are NULL)."""
    computed_at: datetime | None = None
    """When the row was computed."""
    null_reasons: dict[str, str] = {}
    """{metric: reason code} for every NULL metric (`null_reason_text` says it in words)."""

    def value(self, metric: str) -> float | None:
        """A metric's value by name (`ssr`, `rr`, `repr`, `psr`, `ear`, ...)."""
        return getattr(self, metric)


class AlignmentRow(Record):
    """One row of the Alignment table: an aligned gold/agent pair, a gold step no agent step matched, or
    an agent step that matched no gold step."""

    gold_idx: int | None
    """0-based gold step of the chosen alternative; None on an unmatched agent step's row."""
    gold_text: str | None
    """The gold step's text."""
    agent_idx: int | None
    """The agent step (`steps.idx`); None on a missed gold step's row."""
    stated: str | None
    """The action the agent's reasoning said it would take (`steps.stated_action`)."""
    executed: str | None
    """The executed action as the sentence the judge compared with the gold."""
    verdict: str | None = None
    """`same` (the judge's word for a match) on an aligned pair; None otherwise."""
    stage: str | None = None
    """Judge stage that decided the aligned pair: rule, lexical, embedding, llm, offline."""
    score: float | None = None
    """That stage's score."""
    marks: list[str] = []
    """`deviation`, `recovery: rejoined gold #g`, `repeat` (agent rows) or `missed gold` (gold rows)."""


class JudgedPair(Record):
    """One gold/agent pair with the judge's verdict, as the reviewer marks it: every aligned pair, and for
    each agent step left unaligned the gold step the judge scored closest (its "different" verdicts)."""

    gold_idx: int
    """0-based gold step of the chosen alternative."""
    step_idx: int
    """The agent step (`steps.idx`)."""
    gold_text: str
    """The gold step's text."""
    agent_text: str
    """The agent step's sentence the judge compared."""
    verdict: bool | None
    """The judge's verdict: True same, False different, None it could not answer."""
    stage: str | None
    """The deciding stage."""
    score: float | None
    """The stage's score."""
    judge_config: str
    """The judge configuration whose verdict this is."""
    aligned: bool
    """True for an aligned pair, False for an unaligned step's closest gold step."""


class AlignmentView(Record):
    """The Alignment tab of one task for one (gold set, judge config, preset)."""

    gold_set: str
    """The gold set."""
    judge_config: str
    """The judge configuration the rows were computed with."""
    preset: str
    """The metric preset."""
    computed: bool
    """Metrics and alignment are stored for this configuration (else `missing` says why, rows are empty)."""
    missing: str | None = None
    """Why nothing is shown (e.g. "metrics not computed for this configuration"); None when computed."""
    gold_version: int | None
    """The gold version the rows were computed against (the current version when nothing is stored)."""
    current_gold_version: int | None
    """The task's current gold version in the set: above `gold_version`, the rows are stale."""
    alternatives: list[int]
    """The gold alternatives of `gold_version` (0-based)."""
    alternative: int | None
    """The alternative shown."""
    rows: list[AlignmentRow]
    """The table, in gold and agent order."""
    metrics: StoredMetrics | None
    """The stored metrics row; None when not computed."""
    null_reasons: dict[str, str]
    """{metric: reason code} for every NULL metric."""
    plan: list[str] | None
    """The agent's plan (full-plan agents), else None."""
    n_agent: int
    """Executed agent steps."""
    n_gold: int
    """Gold steps of the shown alternative."""
    episode: str = ""
    """The measured attempt."""
    pairs: list[JudgedPair] = []
    """The pairs a reviewer can mark right or wrong, by agent step then gold step."""

    @property
    def stale(self) -> bool:
        """The gold was edited after these metrics were computed."""
        return (
            self.metrics is not None
            and self.current_gold_version is not None
            and (self.metrics.gold_version or 0) < self.current_gold_version
        )

    @property
    def answer_only(self) -> bool:
        """The attempt recorded only its final answer: no gold pair was judged (docs/metrics.md)."""
        return self.null_reasons.get("ssr") == "answer_only"

    @property
    def deviation_summary(self) -> str | None:
        """The deviations of the alternative shown, counted the way the rows below mark them: the steps
        marked `deviation`, plus the incident the RR walk counts when the agent stopped on the gold path
        with gold steps left (no step carries that one). None before metrics exist."""
        m = self.metrics
        if m is None or m.deviations is None:
            return None
        marked = sum("deviation" in r.marks for r in self.rows)
        recovered = sum(any(k.startswith("recovery") for k in r.marks) for r in self.rows)
        if self.alternative != m.alternative:
            return (f"{marked} deviation(s) marked on this alternative's steps, {recovered} recovered "
                    f"(the metrics above are alternative {(m.alternative or 0) + 1}'s)")  # fmt: skip
        at_stop = m.deviations - marked
        stop = f" + {at_stop} where the agent stopped with gold steps left" if at_stop > 0 else ""
        return (
            f"{m.deviations} deviation(s): {marked} marked on the steps below{stop}; {m.recoveries} recovered"
        )


def metric_rows(store: Store, run: str, task_id: int) -> list[StoredMetrics]:
    """Every stored metrics row of the task (one per gold set, judge config and preset), newest first."""
    rows = store.query_dicts(
        "SELECT * FROM metrics WHERE run = ? AND task_id = ? ORDER BY computed_at DESC", [run, task_id]
    )
    for r in rows:
        r["null_reasons"] = orjson.loads(r["null_reasons"]) if r["null_reasons"] else {}
    return [StoredMetrics.model_validate(r) for r in rows]


def null_reason_text(reason: str) -> str:
    return NULL_REASONS.get(reason, reason)


def _gold_texts(store: Store, gold_set: str, task_id: int, version: int) -> dict[int, list[str]]:
    """{alternative: step texts} of one gold version."""
    return {
        alt: list(texts)
        for alt, texts in store.query(
            "SELECT alternative, list(text ORDER BY idx) FROM gold_steps"
            " WHERE gold_set = ? AND task_id = ? AND version = ? GROUP BY alternative ORDER BY alternative",
            [gold_set, task_id, version],
        )
    }


def _stored_steps(store: Store, m: StoredMetrics, alternative: int | None) -> list[dict[str, Any]]:
    """The stored `alignment_steps` of the metrics row's key (of one alternative, or of all)."""
    return store.query_dicts(
        """SELECT a.*, s.stated_action FROM alignment_steps a
           LEFT JOIN steps s ON s.run = a.run AND s.task_id = a.task_id AND s.episode = a.episode
                            AND s.idx = a.agent_idx
           WHERE a.run = $run AND a.task_id = $task AND a.gold_set = $gold AND a.judge_config = $judge
             AND a.preset = $preset AND ($alt IS NULL OR a.alternative = $alt)
           ORDER BY a.alternative, a.agent_idx""",
        {"run": m.run, "task": m.task_id, "gold": m.gold_set, "judge": m.judge_config, "preset": m.preset,
         "alt": alternative},
    )  # fmt: skip


def _marks(step: dict[str, Any]) -> list[str]:
    marks = []
    if step["deviation"]:
        marks.append("deviation")
    if step["rejoined_gold_idx"] is not None:
        marks.append(f"recovery: rejoined gold #{step['rejoined_gold_idx'] + 1}")
    if step["repeats_previous"]:
        marks.append("repeat")
    return marks


def _rows(gold_texts: list[str], steps: list[dict[str, Any]]) -> list[AlignmentRow]:
    """Gold and agent steps interleaved in order: aligned pairs on one row, missed gold steps and
    unmatched agent steps on their own."""

    def missed(g: int) -> AlignmentRow:
        return AlignmentRow(gold_idx=g, gold_text=gold_texts[g], agent_idx=None, stated=None, executed=None,
                            marks=["missed gold"])  # fmt: skip

    def agent_row(step: dict[str, Any]) -> AlignmentRow:
        g = step["gold_idx"]
        return AlignmentRow(
            gold_idx=g, gold_text=gold_texts[g] if g is not None and g < len(gold_texts) else None,
            agent_idx=step["agent_idx"], stated=step["stated_action"], executed=step["agent_text"],
            verdict=VERDICT_WORDS[True] if g is not None else None, stage=step["match_source"] if g is not None else None,
            score=step["match_score"] if g is not None else None, marks=_marks(step),
        )  # fmt: skip

    # Before each aligned pair: the gold steps it skipped, then the agent steps it skipped.
    rows: list[AlignmentRow] = []
    pending: list[AlignmentRow] = []
    g_next = 0
    for step in steps:
        g = step["gold_idx"]
        if g is None:
            pending.append(agent_row(step))
            continue
        rows.extend(missed(i) for i in range(g_next, g))
        rows.extend(pending)
        rows.append(agent_row(step))
        pending, g_next = [], g + 1
    rows.extend(missed(i) for i in range(g_next, len(gold_texts)))
    return rows + pending


def _pairs(
    gold_texts: list[str], rows: list[AlignmentRow], steps: list[dict[str, Any]], judge_config: str
) -> list[JudgedPair]:
    """Every aligned pair (the judge said same) and each unaligned agent step's closest gold step."""
    pairs = [
        JudgedPair(gold_idx=r.gold_idx, step_idx=r.agent_idx, gold_text=r.gold_text or "", agent_text=r.executed or "",
                   verdict=True, stage=r.stage, score=r.score, judge_config=judge_config, aligned=True)
        for r in rows
        if r.verdict is not None and r.gold_idx is not None and r.agent_idx is not None
    ]  # fmt: skip
    for step in steps:
        g = step["closest_gold_idx"]
        if step["gold_idx"] is None and g is not None and g < len(gold_texts):
            pairs.append(JudgedPair(
                gold_idx=g, step_idx=step["agent_idx"], gold_text=gold_texts[g], agent_text=step["agent_text"],
                verdict=step["closest_verdict"], stage=step["closest_source"], score=step["closest_score"],
                judge_config=judge_config, aligned=False,
            ))  # fmt: skip
    pairs.sort(key=lambda p: (p.step_idx, p.gold_idx))
    return pairs


def alignment_view(
    store: Store,
    run: str,
    task_id: int,
    gold_set: str,
    judge_config: str = "offline",
    preset: str = "default",
    alternative: int | None = None,
) -> AlignmentView | None:
    """The three-column view of the run's answer attempt against the gold, as stored by the metrics of
    this configuration; None when the set has no gold for the task or the run no answer attempt."""
    current = store.query(
        "SELECT max(version) FROM gold_steps WHERE gold_set = ? AND task_id = ?", [gold_set, task_id]
    )[0][0]
    attempt = store.query(
        "SELECT episode FROM trajectories WHERE run = ? AND task_id = ? AND is_answer", [run, task_id]
    )
    if current is None or not attempt:
        return None
    found = [
        r for r in metric_rows(store, run, task_id)
        if r.gold_set == gold_set and r.judge_config == judge_config and r.preset == preset
    ]  # fmt: skip
    m = found[0] if found else None
    version = m.gold_version if m is not None and m.gold_version is not None else current
    gold = _gold_texts(store, gold_set, task_id, version)
    alternatives = sorted(gold)
    if alternative is None or alternative not in alternatives:
        chosen = m.alternative if m is not None and m.alternative is not None else 0
        alternative = chosen if chosen in alternatives else (alternatives[0] if alternatives else None)
    gold_texts = gold.get(alternative, []) if alternative is not None else []
    episode = m.episode if m is not None else attempt[0][0]
    plan = store.query(
        "SELECT plan FROM trajectories WHERE run = ? AND task_id = ? AND episode = ?", [run, task_id, episode]
    )
    base = {
        "gold_set": gold_set, "judge_config": judge_config, "preset": preset, "gold_version": version,
        "current_gold_version": current, "alternatives": alternatives, "alternative": alternative, "metrics": m,
        "null_reasons": m.null_reasons if m is not None else {}, "episode": episode,
        "plan": orjson.loads(plan[0][0]) if plan and plan[0][0] else None,
    }  # fmt: skip

    def not_shown(why: str) -> AlignmentView:
        return AlignmentView(**base, computed=False, missing=why, rows=[], n_agent=0, n_gold=len(gold_texts))

    if m is None:
        return not_shown(NOT_COMPUTED)
    if m.gold_version is None:
        return not_shown(NO_GOLD_THEN)
    steps = _stored_steps(store, m, alternative)
    if not steps and (m.n_agent or 0) > 0:
        return not_shown(NO_ALIGNMENT)
    rows = _rows(gold_texts, steps)
    return AlignmentView(
        **base, computed=True, rows=rows, n_agent=len(steps), n_gold=len(gold_texts),
        pairs=_pairs(gold_texts, rows, steps, judge_config),
    )  # fmt: skip
