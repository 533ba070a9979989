"""`trajreview show`: everything the task page shows about one task of one run, as one JSON-able dict."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from core.queries.alignment import alignment_view, metric_rows, null_reason_text
from core.queries.causes import is_diagnosed, task_causes
from core.queries.evidence import Reference, step_evidence
from core.queries.task import cannot_pass_evidence, episodes, evaluator_rows, gold_sets_with_task, task_header
from core.store import Store
from core.values import or_none


def _reference(ref: Reference | None) -> dict[str, Any] | None:
    return None if ref is None else ref.model_dump(exclude_defaults=True)


def task_report(store: Store, run: str, task_id: int, gold_set: str | None = None) -> dict[str, Any] | None:
    """Everything the task page shows, as one JSON-able dict: what the agent was told (and the Verified
    intent where it differs), the verdict with its source and sentences, the reference that verdict was
    scored with (and the Verified one where it differs), the agent's answer and last page, the task's
    template in this run, every step with thought, plan, pages before and after, full error and
    screenshot, per-evaluator results, the suggested failure causes with their evidence and the reviewer's
    decision, metrics with the reason for every NULL, the gold alignment summary, import problems."""
    header = task_header(store, run, task_id)
    if header is None:
        return None
    attempts = episodes(store, run, task_id)
    episode = attempts[0]["episode"] if attempts else None
    steps = step_evidence(store, run, task_id, episode) if episode is not None else []
    template = header.template
    report: dict[str, Any] = {
        "run": run, "task_id": task_id, "site": header.site_key,
        "instruction": header.instruction, "intent": header.intent,
        "instruction_differs": header.instruction_differs,
        "verdict": header.verdict, "verdict_source": header.verdict_source,
        "explanations": header.explanations, "error": header.error,
        "cannot_pass": bool(header.cannot_pass) or cannot_pass_evidence(task_id) is not None,
        "cannot_pass_evidence": cannot_pass_evidence(task_id),
        "reference": _reference(header.reference),
        "verified_reference": _reference(header.verified_reference),
        "references_differ": header.references_differ,
        "expected_answer": header.expected_answer, "reference_answers": header.reference_answers,
        "reference_url": header.reference_url, "agent_answer": header.agent_answer,
        "final_url": header.final_url,
        "termination": header.termination, "termination_detail": header.termination_detail,
        "template": None if template is None else {**template.model_dump(), "sentence": template.sentence},
        "response_lint": [f.model_dump() for f in header.response_lint],
        "problems": [p.model_dump() for p in header.problems],
        "episode": episode, "attempts": len(attempts),
        "steps": [
            {"idx": s.idx, "kind": s.kind, "readable": s.action, "executed": s.executed_action, "stated": s.stated_action,
             "thought": s.thought, "plan": s.plan, "url": s.page_before, "page_after": s.page_after,
             "error": s.error, "screenshot": s.screenshot, "outcome": s.outcome}
            for s in steps
        ],
        "evaluators": [
            {"evaluator": e["evaluator"], "idx": e["idx"], "status": e["status"], "explanation": e["explanation"],
             "error": e["error"]}
            for e in evaluator_rows(store, run, task_id)
        ],
        "metrics": [],
        "alignment": None,
    }  # fmt: skip
    found = task_causes(store, run, task_id)
    report["diagnosed"] = is_diagnosed(store, run)
    report["causes"] = [
        {**asdict(c), "evidence": [{k: v for k, v in asdict(e).items() if v is not None} for e in c.evidence]}
        for c in (found.causes if found else ())
    ]
    report["cause_decision"] = asdict(found.decision) if found and found.decision else None
    for m in metric_rows(store, run, task_id):
        values = {k: or_none(m.value(k)) for k in ("ssr", "rr", "repr", "psr", "ear")}
        report["metrics"].append(
            {
                "gold_set": m.gold_set, "judge_config": m.judge_config, "preset": m.preset, **values,
                "null_reasons": {k: null_reason_text(v) for k, v in m.null_reasons.items()},
                "approximate": bool(m.approximate), "unresolved_pairs": int(m.unresolved_pairs),
            }
        )  # fmt: skip
    sets = gold_sets_with_task(store, task_id)
    chosen = (
        gold_set if gold_set in sets else (report["metrics"][0]["gold_set"] if report["metrics"] else None)
    )
    chosen = chosen if chosen in sets else (sets[0] if sets else None)
    if chosen and episode is not None:
        first = next((m for m in report["metrics"] if m["gold_set"] == chosen), None)
        view = alignment_view(
            store,
            run,
            task_id,
            chosen,
            first["judge_config"] if first else "offline",
            first["preset"] if first else "default",
        )
        if view is not None:
            report["alignment"] = {
                "gold_set": chosen, "judge_config": view.judge_config, "preset": view.preset,
                "computed": view.computed, "missing": view.missing, "gold_version": view.gold_version,
                "alternative": view.alternative, "n_gold": view.n_gold, "n_agent": view.n_agent,
                "matched": sum(1 for r in view.rows if r.verdict),
                "rows": [
                    {"gold_idx": r.gold_idx, "gold": r.gold_text, "agent_idx": r.agent_idx, "executed": r.executed,
                     "judge": r.verdict, "stage": r.stage, "score": r.score, "marks": r.marks}
                    for r in view.rows
                ],
            }  # fmt: skip
    return report
