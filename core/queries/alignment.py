"""The Alignment tab: human gold | the agent's stated actions | executed actions, one row per aligned
pair or unmatched step, with the judge's verdict and where the trajectory left and rejoined the gold.

Pair verdicts (stage, score) are the stored `alignments` of the chosen judge configuration. Where the
agent deviated, recovered or repeated itself is replayed for this one task with the offline judge
(rules and fuzzy matching: fast and deterministic); the result says when that replay is not the stored
configuration, so the page can say so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from core.gold.versions import current_gold
from core.measure import metrics as m
from core.measure.judge import Pair
from core.measure.metrics_run import NULL_REASONS, load_task_inputs
from core.store import Store

METRIC_NAMES = ("ssr", "ssr_unordered", "rr", "mean_recovery_cost", "repr", "psr", "ear")


@dataclass
class AlignmentRow:
    gold_idx: int | None
    gold_text: str | None
    agent_idx: int | None  # the step's idx in `steps`
    stated: str | None
    executed: str | None
    verdict: str | None = None  # equivalent | None for unmatched rows
    stage: str | None = None  # rule | lexical | embedding | llm | offline
    score: float | None = None
    marks: list[str] = field(default_factory=list)  # deviation, recovery, repeat, missed gold


@dataclass
class JudgedPair:
    """One gold/agent pair with the judge's verdict, as the reviewer marks it: every aligned pair, and for
    each agent step left unaligned the gold step the judge scored closest (its "different" verdicts)."""

    gold_idx: int
    step_idx: int  # the agent step's idx in `steps`
    gold_text: str
    agent_text: str
    verdict: bool | None  # None: the judge could not answer
    stage: str | None
    score: float | None
    judge_config: str  # the configuration whose verdict this is
    aligned: bool


@dataclass
class AlignmentView:
    gold_set: str
    judge_config: str
    preset: str
    gold_version: int | None
    alternatives: list[int]
    alternative: int | None
    rows: list[AlignmentRow]
    metrics: dict[str, Any] | None  # the stored metrics row, None when not computed
    null_reasons: dict[str, str]
    replayed_with: str  # which judge decided the marks
    plan: list[str] | None
    n_agent: int
    n_gold: int
    episode: str = ""
    pairs: list[JudgedPair] = field(default_factory=list)


def metric_rows(store: Store, run: str, task_id: int) -> list[dict[str, Any]]:
    """Every stored metrics row of the task (one per gold set, judge config and preset)."""
    rows = store.query_dicts(
        "SELECT * FROM metrics WHERE run = ? AND task_id = ? ORDER BY computed_at DESC", [run, task_id]
    )
    for r in rows:
        r["null_reasons"] = orjson.loads(r["null_reasons"]) if r["null_reasons"] else {}
    return rows


def null_reason_text(reason: str) -> str:
    return NULL_REASONS.get(reason, reason)


def _stored_pairs(
    store: Store, run: str, task_id: int, episode: str, gold_set: str, judge_config: str, alternative: int
) -> dict[tuple[int, int], tuple[str, float | None]]:
    rows = store.query(
        "SELECT gold_idx, agent_idx, source, score FROM alignments WHERE run = ? AND task_id = ? AND episode = ?"
        " AND gold_set = ? AND judge_config = ? AND alternative = ?",
        [run, task_id, episode, gold_set, judge_config, alternative],
    )
    return {(g, a): (source, score) for g, a, source, score in rows}


def alignment_view(
    store: Store,
    run: str,
    task_id: int,
    gold_set: str,
    judge_config: str = "offline",
    preset: str = "default",
    alternative: int | None = None,
) -> AlignmentView | None:
    """The three-column view of the run's answer attempt against the gold; None without gold or attempt."""
    from core.measure.judge.cascade import CascadeJudge

    gold = current_gold(store, gold_set, task_id)
    inputs = load_task_inputs(store, run, gold_set, [task_id])
    if gold is None or not inputs:
        return None
    task = inputs[0]
    stored = [
        r
        for r in metric_rows(store, run, task_id)
        if r["gold_set"] == gold_set and r["judge_config"] == judge_config and r["preset"] == preset
    ]
    metrics_row = stored[0] if stored else None
    alternatives = list(range(len(gold.alternatives)))
    if alternative is None or alternative not in alternatives:
        chosen = metrics_row["alternative"] if metrics_row and metrics_row["alternative"] is not None else 0
        alternative = chosen if chosen in alternatives else 0
    gold_texts = [s.text for s in gold.alternatives[alternative]]
    agent = task.steps
    preset_obj = m.PRESETS.get(preset, m.PRESETS["default"])

    judge = CascadeJudge("offline")
    pairs: list[Pair] = [Pair("gold_vs_agent", g, s.text, task.intent) for g in gold_texts for s in agent]
    pairs += [
        Pair("agent_vs_agent", agent[i - 1].repeat_text, agent[i].repeat_text, "")
        for i in range(1, len(agent))
    ]
    verdicts = dict(zip(pairs, judge.judge_many(pairs), strict=True))

    def eq(g: int, a: int) -> bool | None:
        return verdicts[Pair("gold_vs_agent", gold_texts[g], agent[a].text, task.intent)].verdict

    ordered = m.step_success_ordered(len(gold_texts), len(agent), eq)
    recovery = m.recovery_rate(
        len(gold_texts),
        len(agent),
        eq,
        lookahead=preset_obj.lookahead,
        paper_code=preset_obj.paper_code_recovery,
    )
    repeats = {
        i for i in range(1, len(agent))
        if verdicts[Pair("agent_vs_agent", agent[i - 1].repeat_text, agent[i].repeat_text, "")].verdict
    }  # fmt: skip

    # Pairs: the stored alignment of the chosen configuration when there is one, else the replay's.
    stored_pairs = _stored_pairs(store, run, task_id, task.episode, gold_set, judge_config, alternative)
    by_step_idx = {s.idx: i for i, s in enumerate(agent)}
    if stored_pairs:
        matches = sorted(
            (g, by_step_idx[a]) for (g, a) in stored_pairs if a in by_step_idx and g < len(gold_texts)
        )
    else:
        matches = list(ordered.matches)

    marks: dict[int, list[str]] = {}
    for a in recovery.deviated_at:
        marks.setdefault(a, []).append("deviation")
    for a, g in recovery.recovered_at:
        marks.setdefault(a, []).append(f"recovery: rejoined gold #{g + 1}")
    for a in repeats:
        marks.setdefault(a, []).append("repeat")

    rows: list[AlignmentRow] = []

    def agent_row(a: int, g: int | None = None) -> AlignmentRow:
        s = agent[a]
        row = AlignmentRow(
            g, gold_texts[g] if g is not None else None, s.idx, s.stated, s.text, marks=list(marks.get(a, []))
        )
        if g is not None:
            found = stored_pairs.get((g, s.idx))
            if found:
                row.stage, row.score = found
            else:
                v = verdicts[Pair("gold_vs_agent", gold_texts[g], s.text, task.intent)]
                row.stage, row.score = v.source, v.score
            row.verdict = "equivalent"
        return row

    g_next = a_next = 0
    for g, a in matches:
        while g_next < g:
            rows.append(AlignmentRow(g_next, gold_texts[g_next], None, None, None, marks=["missed gold"]))
            g_next += 1
        while a_next < a:
            rows.append(agent_row(a_next))
            a_next += 1
        rows.append(agent_row(a, g))
        g_next, a_next = g + 1, a + 1
    while g_next < len(gold_texts):
        rows.append(AlignmentRow(g_next, gold_texts[g_next], None, None, None, marks=["missed gold"]))
        g_next += 1
    while a_next < len(agent):
        rows.append(agent_row(a_next))
        a_next += 1

    # The pairs a reviewer can mark. Aligned pairs carry the stored configuration's verdict (or the
    # replay's when nothing is stored); an unaligned agent step is paired with its closest gold step under
    # the replayed offline judge, so the judge's "different" answers get checked too.
    pairs: list[JudgedPair] = []
    matched_steps = {r.agent_idx for r in rows if r.verdict is not None}
    for r in rows:
        if r.verdict is not None and r.gold_idx is not None and r.agent_idx is not None:
            pairs.append(JudgedPair(r.gold_idx, r.agent_idx, r.gold_text or "", r.executed or "", True, r.stage,
                                    r.score, judge_config if stored_pairs else "offline", True))  # fmt: skip
    for s in agent:
        if s.idx in matched_steps or not gold_texts:
            continue
        scored = [
            (verdicts[Pair("gold_vs_agent", g, s.text, task.intent)], i) for i, g in enumerate(gold_texts)
        ]
        best, g = max(scored, key=lambda vi: (vi[0].score if vi[0].score is not None else -1.0, -vi[1]))
        pairs.append(JudgedPair(g, s.idx, gold_texts[g], s.text, best.verdict, best.source, best.score, "offline",
                                False))  # fmt: skip
    pairs.sort(key=lambda p: (p.step_idx, p.gold_idx))

    plan = store.query(
        "SELECT plan FROM trajectories WHERE run = ? AND task_id = ? AND episode = ?",
        [run, task_id, task.episode],
    )
    return AlignmentView(
        gold_set=gold_set, judge_config=judge_config, preset=preset, gold_version=gold.version,
        alternatives=alternatives, alternative=alternative, rows=rows, metrics=metrics_row,
        null_reasons=(metrics_row or {}).get("null_reasons") or {}, replayed_with="offline (rules and fuzzy matching)",
        plan=orjson.loads(plan[0][0]) if plan and plan[0][0] else None, n_agent=len(agent), n_gold=len(gold_texts),
        episode=task.episode, pairs=pairs,
    )  # fmt: skip
