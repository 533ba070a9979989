"""Tasks that cannot pass under the pinned engine version: the set, and the evidence that re-derives it.

Each such task's own expected answer is rejected by the engine, so no agent can pass it. Evidence and the
derivation: docs/cannot-pass.md; re-derived by tests/test_scoring_store.py::test_cannot_pass_set_is_rederived.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import orjson

if TYPE_CHECKING:
    from core.scoring.score_rows import TaskScore

# Tasks whose own expected answer the engine rejects under webarena-verified 1.2.3: they cannot pass,
# whatever the agent does.
CANNOT_PASS: frozenset[int] = frozenset({319, 699, 700, 811})


def expected_answer(task_eval: list[dict]) -> str | None:
    """The task's own expected agent response (first alternative of each value), as response text."""
    for cfg in task_eval:
        if cfg.get("evaluator") == "AgentResponseEvaluator":
            # An agent following the response schema always sends retrieved_data (null when none).
            expected = {"retrieved_data": None, **(cfg.get("expected") or {})}
            data = expected.get("retrieved_data")
            if isinstance(data, list):
                expected["retrieved_data"] = [v[0] if isinstance(v, list) and v else v for v in data]
            return orjson.dumps(expected).decode()
    return None


def cannot_pass_evidence(scores: Sequence[TaskScore]) -> dict[int, str]:
    """Tasks the engine rejects when fed their own expected answer: the agent-response evaluator fails,
    or any evaluator errors on the task's own config (whatever the trace). Task id -> the engine's reason."""
    found = {}
    for s in scores:
        for r in s.evaluator_results:
            broken_answer = r.evaluator == "AgentResponseEvaluator" and r.status != "success"
            if broken_answer or r.status == "error":
                found[s.task_id] = r.explanation or r.error or r.status
                break
    return found
