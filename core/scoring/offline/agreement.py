"""How often the offline evaluators agree with a run's own verdict (read model over stored rows).

Counted over tasks that have a run verdict (success/failure) and whose offline evaluators are *all*
decidable (no LLM, no live site, a recorded last page), the figure docs/offline-evaluation.md reports;
a second, wider figure counts every task whose offline status is decided (a decided failure of one
evaluator decides the task even when another one needs the live site).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from core.store import Store


@dataclass
class Agreement:
    run: str
    verdict_source: str | None
    tasks: int = 0  # tasks with a run verdict
    all_decidable: int = 0
    agree: int = 0
    run_pass_offline_fail: list[int] = field(default_factory=list)
    run_fail_offline_pass: list[int] = field(default_factory=list)
    decided: int = 0  # tasks whose offline status is decided (wider figure)
    decided_agree: int = 0
    undecidable_by_reason: dict[str, int] = field(default_factory=dict)

    @property
    def rate(self) -> float | None:
        return self.agree / self.all_decidable if self.all_decidable else None

    @property
    def decided_rate(self) -> float | None:
        return self.decided_agree / self.decided if self.decided else None


def agreement(store: Store, run: str) -> Agreement:
    rows = store.query(
        """
        SELECT e.task_id, e.status, e.source, e.offline_status,
               bool_and(r.status IN ('success', 'failure')) AS all_decided,
               list(DISTINCT r.unresolved_reason) FILTER (WHERE r.unresolved_reason IS NOT NULL) AS reasons
        FROM evaluations e
        JOIN evaluator_results r ON r.run = e.run AND r.task_id = e.task_id AND r.source LIKE 'offline%'
        WHERE e.run = ? AND e.status IN ('success', 'failure')
        GROUP BY ALL ORDER BY e.task_id
        """,
        [run],
    )
    result = Agreement(run, rows[0][2] if rows else None, tasks=len(rows))
    reasons: dict[str, int] = {}
    for task_id, status, _source, offline, all_decided, why in rows:
        if offline in ("success", "failure"):
            result.decided += 1
            result.decided_agree += offline == status
        if not all_decided:
            for reason in why or ["error"]:
                reasons[reason] = reasons.get(reason, 0) + 1
            continue
        result.all_decidable += 1
        if offline == status:
            result.agree += 1
        elif status == "success":
            result.run_pass_offline_fail.append(task_id)
        else:
            result.run_fail_offline_pass.append(task_id)
    result.undecidable_by_reason = dict(sorted(reasons.items()))
    return result
