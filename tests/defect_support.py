"""Test-only writes of `failure_causes` rows for the evaluator-defect views, before the real rules write
every key: `insert_defect` adds an `evaluator_strict` row whose evidence carries the comparison keys and
witnesses (core.diagnose.findings.Evidence writes the same shape), and `strip_comparison` leaves a run's
`evaluator_strict` rows as the rules of before wrote them (kind, text and step/event keys only)."""

from __future__ import annotations

import orjson

from core.diagnose.findings import Evidence
from core.store import Store, utcnow

OLD_KEYS = ("kind", "text", "step_idx", "seq", "status")


def insert_defect(
    store: Store, run: str, task_id: int, evidence: list[Evidence], *, primary: bool = False,
    rule: str = "test_rule", summary: str = "A test row: the check refused an answer that looks right.",
) -> None:  # fmt: skip
    """One `evaluator_strict` row for a failed task (non-primary by default: the task keeps its primary)."""
    with store.transaction() as cur:
        cur.execute(
            "INSERT INTO failure_causes (run, task_id, cause, is_primary, source, rule, summary, evidence,"
            " diagnosis_version, diagnosed_at) VALUES (?, ?, 'evaluator_strict', ?, 'rule', ?, ?, ?, 'test', ?)",
            [
                run,
                task_id,
                primary,
                rule,
                summary,
                orjson.dumps([e.as_json() for e in evidence]).decode(),
                utcnow(),
            ],
        )


def strip_comparison(store: Store, run: str) -> int:
    """Rewrite the run's `evaluator_strict` rows' evidence with only the keys the old rules wrote (witness
    items dropped); returns how many rows changed."""
    rows = store.query(
        "SELECT task_id, evidence::VARCHAR FROM failure_causes WHERE run = ? AND cause = 'evaluator_strict'",
        [run],
    )
    with store.transaction() as cur:
        for task_id, raw in rows:
            items = [
                {k: v for k, v in item.items() if k in OLD_KEYS}
                for item in orjson.loads(raw or "[]")
                if item.get("kind") != "witness"
            ]
            cur.execute(
                "UPDATE failure_causes SET evidence = ? WHERE run = ? AND task_id = ? AND cause = 'evaluator_strict'",
                [orjson.dumps(items).decode(), run, task_id],
            )
    return len(rows)
