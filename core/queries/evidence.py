"""What a reviewer needs to judge a failure, beside the verdict: the reference the displayed verdict was
scored with (and the WebArena-Verified one where it differs), how the task's template fared in the same
run, and every step with the agent's thought and plan, the page before and after its action, its full
error and its screenshot. Read by the task page and `trajreview show` alike.
"""

from __future__ import annotations

from typing import Any

import orjson

from core.queries.records import Record
from core.queries.runs import verdicts_sql
from core.store import Store
from core.values import is_missing

VERIFIED, RUN_CONFIG, ORIGINAL = "webarena-verified", "run", "original"
CONFIG_LABELS = {
    VERIFIED: "the WebArena-Verified task config (the official engine scored the run on it)",
    RUN_CONFIG: "the task config the run recorded with the task (its own verdict was scored on it)",
    ORIGINAL: "the original WebArena task config (the run recorded none; WebArena's harness scores on it)",
}


def parse_json(value: Any) -> Any:
    """A stored JSON column as Python (None stays None; text that is not JSON is kept as text)."""
    if is_missing(value):
        return None
    if isinstance(value, str):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    return value


class Reference(Record):
    """What a task config expects, as one config states it."""

    config: str
    """Which config: `webarena-verified`, `run` (the config the run recorded) or `original` (WebArena's)."""
    label: str
    """That config in words, and why it is the one shown."""
    answers: Any = None
    """Expected answer: the Verified expected response, or the original `reference_answers`."""
    url: str | None = None
    """Expected last page (original `reference_url`; alternatives joined with ` |OR| `)."""
    program_html: Any = None
    """Checks on the final page state (original `program_html`)."""
    network: list[Any] = []
    """Expected network events (Verified `NetworkEventEvaluator` configs)."""
    note: str | None = None
    """The annotator's note (original `string_note`)."""


class TemplateRecord(Record):
    """How the tasks of one intent template fared in this run: a reviewer asking "is the evaluator
    wrong?" first looks at the task's siblings."""

    template_id: int
    """`tasks.intent_template_id`."""
    tasks: int
    """Tasks of the template in this run (this one included)."""
    passed: int
    """Of them, verdict success."""
    failed: int
    """Of them, verdict failure or error."""
    unscored: int
    """Of them, without a verdict."""
    others: list[tuple[int, str]] = []
    """The other tasks of the template in this run: (task id, verdict), by task id."""

    @property
    def sentence(self) -> str:
        """'this template: 4 of 5 passed in this run'."""
        scored = self.passed + self.failed
        tail = f", {self.unscored} unscored" if self.unscored else ""
        return f"this template ({self.template_id}): {self.passed} of {scored} passed in this run{tail}"


class StepEvidence(Record):
    """One executed step as a reviewer reads it: what the agent thought and planned, what it did, on which
    page, what page that led to, what went wrong, and its screenshot."""

    idx: int
    """`steps.idx`."""
    kind: str = "action"
    """`steps.kind`: `action` (acts on the page) or `observe` (a tool-using agent's screenshot, tab list or
    wait: shown, not measured)."""
    action: str | None = None
    """The readable sentence of the action, else the raw executed action."""
    executed_action: str | None = None
    """The raw action sent to the browser."""
    stated_action: str | None = None
    """The action the agent announced (a planner's instruction)."""
    thought: str | None = None
    """The agent's reasoning at this step, whole (an OpAgent reflector's thoughts, one per line)."""
    plan: str | None = None
    """The planner's reasoning for this action (OpAgent's planner thought), where the agent has one."""
    page_before: str | None = None
    """The page the action was taken on (`steps.url`)."""
    page_after: str | None = None
    """The page the action led to: the next step's page, for the last step the trajectory's `final_url`;
    None when the source does not record it."""
    error: str | None = None
    """The action's error exactly as recorded: every line, log blocks included."""
    screenshot: str | None = None
    """The screenshot file of the step (the page before the action), if stored."""
    outcome: str | None = None
    """What the tool answered to the call (`steps.outcome`), for tool-using agents."""


def _leaves(value: Any) -> set[str]:
    """Every scalar of a reference, normalised the way graders compare (trimmed, case-folded, 8.0 → 8)."""
    if isinstance(value, dict):
        return set().union(*(_leaves(v) for v in value.values())) if value else set()
    if isinstance(value, list | tuple):
        return set().union(*(_leaves(v) for v in value)) if value else set()
    if value is None or isinstance(value, bool):
        return set()
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return {" ".join(str(value).split()).casefold()}


def _answer_values(ref: Reference) -> set[str] | None:
    """The values a reference's expected answer names; None when it expects no answer (page checks)."""
    if ref.config == VERIFIED:
        if not isinstance(ref.answers, dict):
            return None
        status = str(ref.answers.get("status") or "").upper()
        if status and status != "SUCCESS":
            return {"n/a"}
        data = ref.answers.get("retrieved_data")
        return _leaves(data) if data else None
    if not isinstance(ref.answers, dict):
        return None
    values = set()
    for approach in ("must_include", "exact_match", "fuzzy_match"):
        values |= _leaves(ref.answers.get(approach))
    return values or None


def references_differ(shown: Reference, verified: Reference) -> bool | None:
    """Whether two configs expect different answers: True/False when both name answer values, None when
    they cannot be compared (one checks the page or the network instead)."""
    a, b = _answer_values(shown), _answer_values(verified)
    return None if a is None or b is None else a != b


def verified_reference(verified_eval: Any) -> Reference | None:
    """The WebArena-Verified reference of a task (its expected response and network events)."""
    if not isinstance(verified_eval, list):
        return None
    answers = next(
        (c.get("expected") for c in verified_eval if c.get("evaluator") == "AgentResponseEvaluator"), None
    )
    network = [c.get("expected") for c in verified_eval if c.get("evaluator") == "NetworkEventEvaluator"]
    return Reference(config=VERIFIED, label=CONFIG_LABELS[VERIFIED], answers=answers, network=network)


def original_reference(config: str, evaluation: Any, string_note: str | None = None) -> Reference | None:
    """A reference in the original WebArena shape (`eval` of a run's config or of `original_tasks`)."""
    if not isinstance(evaluation, dict):
        return None
    return Reference(
        config=config, label=CONFIG_LABELS[config], answers=evaluation.get("reference_answers"),
        url=evaluation.get("reference_url") or None, program_html=evaluation.get("program_html") or None,
        note=string_note if string_note is not None else (evaluation.get("string_note") or None),
    )  # fmt: skip


def verdict_reference(
    verdict_source: str | None, verified: Reference | None, run_config: Any, original: Reference | None
) -> Reference | None:
    """The reference of the verdict the page shows: the Verified config when the official engine decided,
    else the config the run recorded (the one its own verdict was scored on), else WebArena's original."""
    if verdict_source == VERIFIED:
        return verified
    run_eval = run_config.get("eval") if isinstance(run_config, dict) else None
    return original_reference(RUN_CONFIG, run_eval) if isinstance(run_eval, dict) else original


def template_record(store: Store, run: str, task_id: int) -> TemplateRecord | None:
    """How the tasks sharing this task's intent template fared in this run (None when the task is not in
    the dataset or alone in the run)."""
    mates = "SELECT task_id FROM tasks WHERE intent_template_id = (SELECT intent_template_id FROM tasks WHERE task_id = $task)"
    rows = store.query(
        f"""
        WITH v AS ({verdicts_sql(among=mates)})
        SELECT v.task_id, v.verdict, k.intent_template_id FROM v JOIN tasks k ON k.task_id = v.task_id
        ORDER BY v.task_id
        """,
        {"run": run, "task": task_id},
    )
    if not rows:
        return None
    template_id = rows[0][2]
    rows = [(t, v) for t, v, _ in rows]
    verdicts = [v for _, v in rows]
    return TemplateRecord(
        template_id=template_id, tasks=len(rows), passed=verdicts.count("success"),
        failed=sum(v in ("failure", "error") for v in verdicts), unscored=verdicts.count("unscored"),
        others=[(t, v) for t, v in rows if t != task_id],
    )  # fmt: skip


def step_evidence(
    store: Store, run: str, task_id: int, episode: str, idx: int | None = None
) -> list[StepEvidence]:
    """Every step of one attempt (or only step `idx`) with its thought, plan, page before and after, full
    error, screenshot. The page after comes from the whole attempt; only the chosen steps' stored
    conversations (large, read for the planner's thought) are loaded."""
    rows = store.query_dicts(
        """
        WITH s AS (
            SELECT s.run, s.task_id, s.episode, s.idx, coalesce(s.kind, 'action') AS kind, s.outcome,
                   coalesce(s.readable, s.executed_action) AS action, s.executed_action, s.stated_action,
                   s.thought, s.url AS page_before,
                   coalesce(lead(s.url) OVER (ORDER BY s.idx),
                            CASE WHEN s.idx = max(s.idx) OVER () THEN t.final_url END) AS page_after,
                   s.error, s.screenshot_path AS screenshot
            FROM steps s
            JOIN trajectories t USING (run, task_id, episode)
            WHERE s.run = $run AND s.task_id = $task AND s.episode = $episode
        )
        SELECT s.idx, s.kind, s.outcome, s.action, s.executed_action, s.stated_action, s.thought,
               s.page_before, s.page_after, s.error, s.screenshot,
               CASE WHEN contains(o.content, '"planner"') THEN o.content END AS chat
        FROM s
        LEFT JOIN observations o
          ON o.run = s.run AND o.task_id = s.task_id AND o.episode = s.episode AND o.idx = s.idx AND o.kind = 'chat'
        WHERE $idx IS NULL OR s.idx = $idx
        ORDER BY s.idx
        """,
        {"run": run, "task": task_id, "episode": episode, "idx": idx},
    )
    for r in rows:
        r["plan"] = planner_thought(r.pop("chat"))
    return [StepEvidence.model_validate(r) for r in rows]


def planner_thought(chat: Any) -> str | None:
    """The planner's reasoning in a step's stored conversation (role `planner`: OpAgent), if any."""
    messages = parse_json(chat)
    if not isinstance(messages, list):
        return None
    for m in messages:
        if isinstance(m, dict) and m.get("role") == "planner" and str(m.get("text") or "").strip():
            return str(m["text"]).strip()
    return None
