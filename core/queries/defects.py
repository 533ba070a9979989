"""Suspected evaluator defects of a run: every failed or errored task with an `evaluator_strict` row in
`failure_causes` (primary or not: the benchmark's check refused an answer that looks right), with what a
benchmark maintainer needs to judge it — the check, the reference the run was scored with, what the agent
gave, WebArena-Verified's value, other runs as witnesses, the rule's sentence — and whether a reviewer
confirmed or rejected it (core.queries.defect_rate). A task a reviewer labelled `evaluator too strict`
without such a row is listed too (rule empty): the figure "with confirmed defects" counts it.

The comparison comes from the rule's evidence (`failure_causes.evidence`: an item of kind `evaluator` may
carry `check`, `reference`, `actual`, `verified`; items of kind `witness` carry `run`, `task_id`, `text`,
`supports`). Rows written before those keys fall back to the stored task: the failing evaluator's name,
its `expected` and `actual` (`evaluator_results`), the reference of the verdict (`original_tasks`, the
run's recorded config, `tasks.eval`), the answer (`trajectories.final_answer`, `agent_responses.raw_text`)
or the last page, and the other runs' attempts at the task (same answer and failed: supports; passed with
another answer: against). core.queries.defect_list writes them as the list a team sends to the
benchmark's maintainers (`trajreview diagnose --defects`, the page's downloads). Agent text is data:
callers show it as text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson
import pandas as pd

from core.diagnose.facts import WitnessFact
from core.diagnose.rules_defects import compact, split_witnesses, verified_value_text, witness_text
from core.measure.run_summaries import VERDICT_SQL, verdict_joins, verdicts_sql
from core.queries.defect_rate import (
    CONFIRMED_LABEL,
    DEFECT_CAUSE,
    DefectRate,
    confirmed_defects_sql,
    defect_rate,
)
from core.queries.evidence import (
    ORIGINAL,
    original_reference,
    parse_json,
    verdict_reference,
    verified_reference,
)
from core.store import Store, require_runs
from core.values import is_missing, normalise_text

CONFIRMED, REJECTED, NOT_REVIEWED = "confirmed", "rejected", "not reviewed"
# Checks that read the last page (or the trace), not the answer: the agent's side is its last URL.
PAGE_CHECKS = frozenset({"url_match", "program_html", "NetworkEventEvaluator"})
TEXT_LIMIT = 500  # a cell of the list; the task page shows the whole text
_NO_VERIFIED_VALUE = "(no value: WebArena-Verified checks nothing this run records)"
_CHECK_PREFIX = re.compile(r"^\s*([A-Za-z_]+):")


@dataclass(frozen=True)
class Witness:
    """Another run's attempt at the task."""

    run: str
    task_id: int
    text: str
    supports: bool | None
    """True: it gave our agent's answer and failed too (evidence against the reference); False: it passed
    with another answer (evidence against our agent)."""


@dataclass(frozen=True)
class Defect:
    """One task of the run whose evaluator is suspected of refusing a right answer."""

    run: str
    task_id: int
    sites: str
    intent: str
    rule: str | None
    """The rule that suggested it; None: only a reviewer's label says so."""
    is_primary: bool
    check: str
    """The evaluator (check) that failed the task: `string_match`, `url_match`, `program_html`,
    `AgentResponseEvaluator`, ..."""
    reference: str
    """The value that check compared against, as the run was scored."""
    actual: str
    """What the agent gave: its answer, or its last page for a page check."""
    verified: str
    """WebArena-Verified's value for the task."""
    witnesses: tuple[Witness, ...]
    summary: str
    review: str
    """`confirmed`, `rejected` or `not reviewed`."""
    reviewed_by: str | None
    reviewed_at: datetime | None
    from_evidence: bool
    """check, reference, actual and verified are the rule's own record (else read from the stored task)."""

    def witnesses_text(self) -> str:
        """'supports: run A; against: run B', or 'none' without another run's attempt to cite."""
        parts = []
        for label, flag in (("supports", True), ("against", False), ("not compared", None)):
            runs = [w.run for w in self.witnesses if w.supports is flag]
            if runs:
                parts.append(f"{label}: {', '.join(runs)}")
        return "; ".join(parts) or "none"


_SQL = """
WITH v AS ({verdicts}),
confirmed AS ({confirmed}),
suggested AS (
    SELECT task_id, is_primary, rule, summary, evidence FROM failure_causes WHERE run = $run AND cause = $cause
),
ids AS (
    SELECT task_id FROM suggested UNION SELECT task_id FROM confirmed
),
rejected AS (
    SELECT task_id, arg_max(author, id) AS author, arg_max(created_at, id) AS at FROM annotations
    WHERE target = 'diagnosis' AND run = $run AND label = 'rejected' AND note = $cause GROUP BY task_id
),
failing AS (
    SELECT task_id, arg_min(evaluator, (status <> 'failure', idx)) AS evaluator,
           arg_min(expected, (status <> 'failure', idx))::VARCHAR AS expected,
           arg_min(actual, (status <> 'failure', idx))::VARCHAR AS actual
    FROM evaluator_results WHERE run = $run AND status <> 'success' GROUP BY task_id
)
SELECT ids.task_id, s.is_primary, s.rule, s.summary, s.evidence::VARCHAR AS evidence, v.verdict_source,
       coalesce(k.site_key, array_to_string(list_sort(o.sites), '-'), '') AS sites,
       coalesce(k.intent, o.intent, '') AS intent, k.eval::VARCHAR AS verified_eval,
       o.reference_answers::VARCHAR AS reference_answers, o.reference_url, o.program_html::VARCHAR AS program_html,
       o.string_note, o.eval_types, t.task_config::VARCHAR AS task_config,
       coalesce(t.final_answer, ar.raw_text) AS answer, t.final_url,
       f.evaluator, f.expected, f.actual,
       c.decided_by, c.decided_at, r.author AS rejected_by, r.at AS rejected_at
FROM ids
JOIN v ON v.task_id = ids.task_id AND v.verdict IN ('failure', 'error')
LEFT JOIN suggested s ON s.task_id = ids.task_id
LEFT JOIN confirmed c ON c.task_id = ids.task_id
LEFT JOIN rejected r ON r.task_id = ids.task_id
LEFT JOIN failing f ON f.task_id = ids.task_id
LEFT JOIN tasks k ON k.task_id = ids.task_id
LEFT JOIN original_tasks o ON o.task_id = ids.task_id
LEFT JOIN trajectories t ON t.run = $run AND t.task_id = ids.task_id AND t.is_answer
LEFT JOIN agent_responses ar ON ar.run = $run AND ar.task_id = ids.task_id
ORDER BY ids.task_id
"""

# The other runs' attempts at the listed tasks (runs of the same agent left out, as the rules do).
_OTHERS = """
SELECT e.task_id, e.run, r.agent, e.status, coalesce(t.final_answer, ar.raw_text) AS answer
FROM evaluations e
JOIN runs r ON r.name = e.run
LEFT JOIN trajectories t ON t.run = e.run AND t.task_id = e.task_id AND t.is_answer
LEFT JOIN agent_responses ar ON ar.run = e.run AND ar.task_id = e.task_id
WHERE e.run <> $run AND list_contains($tasks, e.task_id)
  AND (r.agent IS NULL OR r.agent IS DISTINCT FROM (SELECT agent FROM runs WHERE name = $run))
ORDER BY e.task_id, e.run
"""


def _clip(text: str, limit: int = TEXT_LIMIT) -> str:
    text = normalise_text(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def value_text(value: Any) -> str:
    """A stored reference or answer value as one line: a string as itself, the original reference's
    approaches as their values joined with '; ', a list of scalars joined, anything else as JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and {"must_include", "exact_match", "fuzzy_match"} & value.keys():
        parts: list[str] = []
        for approach in ("must_include", "exact_match", "fuzzy_match"):
            found = value.get(approach)
            if isinstance(found, list):
                parts += [str(f) for f in found]
            elif found:
                parts.append(str(found))
        return "; ".join(parts)
    if isinstance(value, list) and all(isinstance(v, str | int | float) for v in value):
        return "; ".join(str(v) for v in value)
    return compact(value, TEXT_LIMIT)


def _reference_text(row: dict[str, Any]) -> str:
    """The reference of the run's verdict, from the config it was scored on (no failing check recorded)."""
    original = None
    if row["eval_types"] is not None:
        original = original_reference(
            ORIGINAL, {"reference_answers": parse_json(row["reference_answers"]), "reference_url": row["reference_url"],
                       "program_html": parse_json(row["program_html"])}, row["string_note"],
        )  # fmt: skip
    verified = verified_reference(parse_json(row["verified_eval"]))
    ref = verdict_reference(row["verdict_source"], verified, parse_json(row["task_config"]), original)
    if ref is None:
        return "(no reference stored)"
    answers = ref.answers.get("retrieved_data") if ref.config == "webarena-verified" and isinstance(ref.answers, dict) else ref.answers  # fmt: skip
    parts = [
        value_text(answers),
        ref.url or "",
        *(str(n.get("url")) for n in ref.network if isinstance(n, dict)),
    ]
    if ref.program_html:
        parts.append(f"program_html: {len(ref.program_html)} page checks")
    return "; ".join(p for p in parts if p) or "(no reference stored)"


def _evidence(raw: str | None) -> tuple[dict[str, Any] | None, list[dict[str, Any]], str | None]:
    """(the evaluator item carrying the comparison, the witness items, the first evaluator item's text)."""
    items = [e for e in (orjson.loads(raw) if raw else []) if isinstance(e, dict)]
    evaluators = [e for e in items if e.get("kind") == "evaluator"]
    compared = next((e for e in evaluators if e.get("check")), None)
    witnesses = [e for e in items if e.get("kind") == "witness"]
    return compared, witnesses, (str(evaluators[0].get("text") or "") if evaluators else None)


def _fallback_witnesses(row: dict[str, Any], others: list[dict[str, Any]]) -> tuple[Witness, ...]:
    """The other runs' attempts at the task read as the witness rule reads them (rows without witness
    evidence: written before it, or a reviewer's label alone)."""
    facts = [WitnessFact(o["run"], o["agent"], o["status"], o["answer"], None) for o in others]
    agree, against = split_witnesses(row["answer"], None, facts)  # _OTHERS left the same agent's runs out
    return tuple(
        Witness(w.run, row["task_id"], witness_text(w, row["task_id"]), supports)
        for group, supports in ((agree, True), (against, False))
        for w in group
    )


def _defect(run: str, row: dict[str, Any], others: list[dict[str, Any]]) -> Defect:
    compared, witness_items, first_text = _evidence(row["evidence"])
    prefix = _CHECK_PREFIX.match(first_text or "")
    check = (
        (compared or {}).get("check") or row["evaluator"] or (prefix.group(1) if prefix else None)
        or f"the run's own verdict ({row['verdict_source'] or 'unknown source'})"
    )  # fmt: skip
    if compared and compared.get("reference") is not None:
        reference = str(compared["reference"])
    elif row["expected"] is not None:
        reference = value_text(parse_json(row["expected"]))
    else:
        reference = _reference_text(row)
    if compared and compared.get("actual") is not None:
        actual = str(compared["actual"])
    elif row["final_url"] and (
        check in PAGE_CHECKS or (row["evaluator"] is None and set(row["eval_types"] or ["?"]) <= PAGE_CHECKS)
    ):  # a page check failed, or only the run's own verdict did on a task that checks only pages
        actual = row["final_url"]
    elif row["answer"]:
        actual = row["answer"]
    else:
        actual = value_text(parse_json(row["actual"])) or "(nothing recorded)"
    verified = (
        str(compared["verified"])
        if compared and compared.get("verified") is not None
        else verified_value_text(parse_json(row["verified_eval"])) or _NO_VERIFIED_VALUE
    )
    if witness_items:
        witnesses = tuple(
            Witness(str(w.get("run") or ""), int(w.get("task_id") or row["task_id"]), str(w.get("text") or ""),
                    w.get("supports"))
            for w in witness_items
        )  # fmt: skip
    else:
        witnesses = _fallback_witnesses(row, others)
    if not is_missing(row["decided_at"]):
        review, by, at = CONFIRMED, row["decided_by"], row["decided_at"]
    elif not is_missing(row["rejected_at"]):
        review, by, at = REJECTED, row["rejected_by"], row["rejected_at"]
    else:
        review, by, at = NOT_REVIEWED, None, None
    summary = row["summary"] or f"A reviewer labelled this task '{CONFIRMED_LABEL}'; no rule suggests it."
    return Defect(
        run=run, task_id=int(row["task_id"]), sites=row["sites"], intent=row["intent"], rule=row["rule"],
        is_primary=bool(row["is_primary"]), check=check, reference=_clip(reference), actual=_clip(actual),
        verified=_clip(verified), witnesses=witnesses, summary=summary, review=review, reviewed_by=by,
        reviewed_at=at, from_evidence=compared is not None,
    )  # fmt: skip


def run_defects(store: Store, run: str) -> list[Defect]:
    """The run's suspected evaluator defects, by task id; `NotFound` for a run the database lacks."""
    require_runs(store, [run])
    sql = _SQL.format(verdicts=verdicts_sql(), confirmed=confirmed_defects_sql())
    rows = store.query_dicts(sql, {"run": run, "cause": DEFECT_CAUSE})
    others: dict[int, list[dict[str, Any]]] = {}
    if rows:
        for o in store.query_dicts(_OTHERS, {"run": run, "tasks": [r["task_id"] for r in rows]}):
            others.setdefault(o["task_id"], []).append(o)
    return [_defect(run, r, others.get(r["task_id"], [])) for r in rows]


def run_defect_rate(store: Store, run: str) -> DefectRate:
    """The run's success over its scored tasks, and with its confirmed evaluator defects counted as passes."""
    rows = store.query(
        f"""WITH v AS ({verdicts_sql()}), c AS ({confirmed_defects_sql()})
            SELECT v.verdict, c.task_id IS NOT NULL FROM v LEFT JOIN c ON c.task_id = v.task_id""",
        {"run": run},
    )
    return defect_rate([v for v, _ in rows], [c for _, c in rows])


def defect_counts(store: Store) -> pd.DataFrame:
    """run, suspected, confirmed, rejected for every run with at least one suspected evaluator defect
    (the links of the Runs and Triage pages; the counts `run_defects` lists). The verdicts of those tasks
    only are read: the Runs page asks for every run."""
    return store.query_df(
        f"""
        WITH confirmed AS ({confirmed_defects_sql("TRUE")}),
        ids AS (SELECT run, task_id FROM failure_causes WHERE cause = '{DEFECT_CAUSE}'
                UNION SELECT run, task_id FROM confirmed),
        rejected AS (SELECT DISTINCT run, task_id FROM annotations
                     WHERE target = 'diagnosis' AND label = 'rejected' AND note = '{DEFECT_CAUSE}')
        SELECT ids.run, count(*) AS suspected, count(c.task_id) AS confirmed,
               count(r.task_id) FILTER (WHERE c.task_id IS NULL) AS rejected
        FROM ids {verdict_joins("ids")}
        LEFT JOIN confirmed c ON c.run = ids.run AND c.task_id = ids.task_id
        LEFT JOIN rejected r ON r.run = ids.run AND r.task_id = ids.task_id
        WHERE {VERDICT_SQL} IN ('failure', 'error')
        GROUP BY ids.run ORDER BY ids.run
        """
    )
