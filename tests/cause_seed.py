"""`seed_causes`: suggested causes for the real failed tasks of the shipped demo, read from their stored
data, until the diagnosis engine (`core.diagnose.run.diagnose_run`, built on another branch) writes them.

A stand-in, not the engine: each failed task gets the first cause its stored facts show — a 5xx network
event → environment (with the event's seq and status), the attempt cut at its step limit → step_limit
(with its last step), stopped early → gave_up, a step with an error → invalid_action (with the step),
else answered wrong (with the evaluator's sentence). Task 28 of opagent is left to "the model"
(source `model`, with reasoning) and task 2 of babelcloud stays undecided. Where a task shows two facts
the second is a non-primary row. At merge the tests switch to the real `diagnose_run`.
"""

from __future__ import annotations

import orjson

from core.store import Store, insert_rows, utcnow

VERSION = "rules-1+diagnosis-1"
MODEL_TASK = ("opagent", 28)
UNDECIDED_TASK = ("webarena-render-babelcloud", 2)


def _facts(store: Store, run: str, task_id: int) -> list[tuple[str, str, str, list[dict]]]:
    """(cause, rule, summary, evidence) of every cause the stored data shows, first in precedence first."""
    found = []
    for seq, status, method, url in store.query(
        "SELECT seq, status, method, url FROM network_events WHERE run = ? AND task_id = ? AND status >= 500"
        " ORDER BY seq",
        [run, task_id],
    ):
        found.append(("environment", "http_5xx", f"The site answered {method} {url} with HTTP {status}.",
                      [{"kind": "event", "seq": seq, "status": status, "text": f"{method} {url} → {status}"}]))  # fmt: skip
    (termination, n_steps, answer), = store.query(
        "SELECT termination, n_steps, final_answer FROM trajectories WHERE run = ? AND task_id = ? AND is_answer",
        [run, task_id],
    ) or [(None, None, None)]  # fmt: skip
    last = store.query("SELECT max(idx) FROM steps WHERE run = ? AND task_id = ?", [run, task_id])[0][0]
    if termination == "truncated":
        found.append(("step_limit", "truncated", f"The harness stopped the attempt after {n_steps} steps.",
                      [{"kind": "step", "step_idx": last, "text": "the last step before the limit"}]))  # fmt: skip
    if termination == "early_stop":
        found.append(("gave_up", "early_stop", "The agent stopped before doing the task.",
                      [{"kind": "step", "step_idx": last, "text": "the agent stopped here"}]))  # fmt: skip
    for idx, error in store.query(
        "SELECT idx, error FROM steps WHERE run = ? AND task_id = ? AND error IS NOT NULL ORDER BY idx LIMIT 1",
        [run, task_id],
    ):
        found.append(("invalid_action", "step_error", f"Step {idx} could not be executed: {error}",
                      [{"kind": "step", "step_idx": idx, "text": error}]))  # fmt: skip
    sentence = store.query(
        "SELECT coalesce(explanation, error) FROM evaluations WHERE run = ? AND task_id = ?", [run, task_id]
    )
    if sentence and sentence[0][0]:
        what = f"the answer {answer!r}" if answer else "the final state"
        found.append(("wrong_answer", "evaluator_mismatch", f"The evaluator rejected {what}.",
                      [{"kind": "evaluator", "text": sentence[0][0]}]))  # fmt: skip
    return found


def seed_causes(store: Store, runs: list[str] | None = None) -> int:
    """Write `failure_causes` rows for every failed task of `runs` (default: every run); returns the rows."""
    from core.queries.runs import verdicts_sql

    wanted = runs if runs is not None else [r for (r,) in store.query("SELECT name FROM runs")]
    failed = store.query(
        f"WITH v AS ({verdicts_sql(one_run=False)}) SELECT run, task_id FROM v"
        " WHERE list_contains(?, run) AND verdict IN ('failure', 'error') ORDER BY run, task_id",
        [wanted],
    )
    now = utcnow()
    rows = []
    for run, task_id in failed:
        facts = _facts(store, run, task_id)
        base = {
            "run": run,
            "task_id": task_id,
            "reasoning": None,
            "diagnosis_version": VERSION,
            "diagnosed_at": now,
        }
        if (run, task_id) == UNDECIDED_TASK:
            facts = [("undecided", None, "No rule decided and the model could not answer.", [])] + facts[1:]
        if (run, task_id) == MODEL_TASK:
            rows.append({**base, "cause": "wrong_element", "is_primary": True, "source": "model", "rule": None,
                         "summary": "The agent counted the wrong rows of the table.",
                         "evidence": orjson.dumps([{"kind": "step", "step_idx": 3, "text": "the count was read here"}]).decode(),
                         "reasoning": "The answer '1' is a count of another list than the one the task asks about."})  # fmt: skip
            facts = [f for f in facts if f[0] != "wrong_element"]
            primary_done = True
        else:
            primary_done = False
        for cause, rule, summary, evidence in facts:
            rows.append({**base, "cause": cause, "is_primary": not primary_done, "source": "rule", "rule": rule,
                         "summary": summary, "evidence": orjson.dumps(evidence).decode()})  # fmt: skip
            primary_done = True
    with store.transaction() as cur:
        cur.execute("DELETE FROM failure_causes WHERE list_contains(?, run)", [wanted])
        return insert_rows(cur, "failure_causes", rows)
