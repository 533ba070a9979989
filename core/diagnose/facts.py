"""What the diagnosis rules read about each failed task of a run, loaded in a few set-based queries (one
per kind of fact, never one per task): the verdict and the failing evaluators' sentences, the agent's
answer and how the attempt ended, its steps, the trace's server errors, the metrics, the task's Verified
and original references, and whether another task of the same template passed in the run."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import orjson

from core.store import ShortLivedStore, Store
from core.values import or_none


@dataclass(frozen=True)
class StepFact:
    idx: int
    action: str  # the executed action, else its readable sentence
    kind: str  # action | observe
    error: str | None
    answer: str | None
    url: str | None = None  # the page the step acted on
    typed: str | None = None  # the text a type action entered, or the option a select chose
    saw_server_error: bool = False  # the agent's reading of the page reports a server's error page


@dataclass(frozen=True)
class EventFact:
    seq: int
    status: int
    method: str
    url: str


@dataclass(frozen=True)
class EvaluatorFact:
    idx: int
    evaluator: str
    status: str
    explanation: str | None
    nearest_event_seq: int | None


@dataclass(frozen=True)
class WitnessFact:
    """Another run's attempt at the same task: its verdict, answer and last page."""

    run: str
    agent: str | None
    status: str
    answer: str | None
    final_url: str | None


@dataclass(frozen=True)
class TaskFacts:
    run: str
    task_id: int
    intent: str
    status: str  # the verdict: failure | error
    verdict_source: str | None  # evaluations.source
    explanation: str | None
    offline_status: str | None
    offline_disagrees: bool
    termination: str | None
    termination_detail: str | None
    n_steps: int
    answer: str | None  # the final answer text (the agent response's raw text for WebArena-Verified runs)
    response_status: str | None  # the agent response's `status`
    response_error: str | None  # its `error_details`
    expected_status: str | None  # what WebArena-Verified expects the agent to report
    task_type: str | None
    template_id: int | None
    verified_data: Any  # WebArena-Verified's expected retrieved_data (None for mutate/navigate tasks)
    original_reference: dict[str, Any]  # the original must_include / exact_match / fuzzy_match / url
    ear: float | None = None  # element accuracy rate (stated vs executed), when measured
    final_url: str | None = None  # the page the attempt ended on, when recorded
    sites: tuple[str, ...] = ()  # the sites the task names (WebArena-Verified's, else the original's)
    verified_evaluators: tuple[
        dict[str, Any], ...
    ] = ()  # WebArena-Verified's evaluators, expected values included
    witnesses: tuple[WitnessFact, ...] = ()  # other runs' attempts at this task
    agent: str | None = None  # the run's agent, as imported
    template_passed: tuple[int, ...] = ()  # other tasks of the same template that passed in the run
    template_passed_checks: tuple[tuple[Any, ...], ...] = ()  # their original page checks, one tuple each
    steps: tuple[StepFact, ...] = ()
    server_errors: tuple[EventFact, ...] = ()
    requests: tuple[EventFact, ...] = ()  # the trace's GET requests with a query that were no navigation
    evaluators: tuple[EvaluatorFact, ...] = field(default_factory=tuple)

    @property
    def actions(self) -> tuple[StepFact, ...]:
        return tuple(s for s in self.steps if s.kind == "action")

    @property
    def reference_values(self) -> tuple[Any, ...]:
        """What the original reference requires of the answer, as written: its must_include items, then its
        exact match (each rule keeps the kinds it compares)."""
        ref = self.original_reference
        exact = ref.get("exact_match")
        return (*(ref.get("must_include") or ()), *(() if exact is None else (exact,)))

    @property
    def urls(self) -> tuple[str, ...]:
        """The pages the attempt was on, in order (each step's page, then the last page)."""
        return tuple(u for u in (*(s.url for s in self.steps), self.final_url) if u)


_TASKS = """
SELECT e.task_id, e.status, e.source AS verdict_source, r.agent, e.explanation, e.offline_status,
       coalesce(e.offline_disagrees, false) AS offline_disagrees,
       t.termination, t.termination_detail, coalesce(t.n_steps, 0) AS n_steps,
       coalesce(t.final_answer, ar.raw_text) AS answer, t.episode, t.final_url,
       ar.parsed->>'status' AS response_status, ar.parsed->>'error_details' AS response_error,
       coalesce(k.intent, o.intent, '') AS intent, k.expected_status, k.task_type,
       coalesce(k.intent_template_id, o.intent_template_id) AS template_id, k.eval::VARCHAR AS eval,
       coalesce(k.sites, o.sites) AS sites,
       o.must_include, o.exact_match, o.fuzzy_match::VARCHAR AS fuzzy_match, o.reference_url,
       o.program_html::VARCHAR AS program_html
FROM evaluations e
JOIN runs r ON r.name = e.run
LEFT JOIN trajectories t ON t.run = e.run AND t.task_id = e.task_id AND t.is_answer
LEFT JOIN agent_responses ar ON ar.run = e.run AND ar.task_id = e.task_id
LEFT JOIN tasks k ON k.task_id = e.task_id
LEFT JOIN original_tasks o ON o.task_id = e.task_id
WHERE e.run = ? AND e.status IN ('failure', 'error')
ORDER BY e.task_id
"""

_STEPS = """
SELECT s.task_id, s.idx, coalesce(s.executed_action, s.readable, '') AS action, coalesce(s.kind, 'action') AS kind,
       s.error, s.answer, s.url, CASE WHEN s.verb IN ('type', 'select') THEN s.value END AS typed,
       coalesce(regexp_matches(s.thought, $server_error, 'i'), false) AS saw_server_error
FROM steps s
JOIN trajectories t ON t.run = s.run AND t.task_id = s.task_id AND t.episode = s.episode AND t.is_answer
JOIN evaluations e ON e.run = s.run AND e.task_id = s.task_id AND e.status IN ('failure', 'error')
WHERE s.run = $run
ORDER BY s.task_id, s.idx
"""

# A response of 5xx on a request the engine reads (static assets are left out: a missing icon does not
# break a task), or a page navigation that got no response at all (status 0 or -1; a cancelled background
# request gets none too and says nothing about the site).
_SERVER_ERRORS = """
SELECT n.task_id, n.seq, n.status, n.method, n.url
FROM network_events n
JOIN evaluations e ON e.run = n.run AND e.task_id = n.task_id AND e.status IN ('failure', 'error')
WHERE n.run = ? AND NOT coalesce(n.is_static_asset, false)
  AND (n.status >= 500 OR (n.status <= 0 AND n.event_type = 'navigation'))
ORDER BY n.task_id, n.seq
"""

# The requests with a query that were no page navigation (a grid's XHR), of the tasks whose network check
# failed: where the request a check wants may be that is not the last navigation the engine reads.
_REQUESTS = """
SELECT n.task_id, n.seq, n.status, n.method, n.url
FROM network_events n
WHERE n.run = ? AND n.method = 'GET' AND n.event_type <> 'navigation' AND n.url LIKE '%?%'
  AND NOT coalesce(n.is_static_asset, false)
  AND n.task_id IN (SELECT task_id FROM evaluator_results WHERE run = n.run
                    AND evaluator = 'NetworkEventEvaluator' AND status = 'failure')
ORDER BY n.task_id, n.seq
"""

_EVALUATORS = """
SELECT r.task_id, r.idx, r.evaluator, r.status, r.explanation, r.nearest_event_seq
FROM evaluator_results r
JOIN evaluations e ON e.run = r.run AND e.task_id = r.task_id AND e.status IN ('failure', 'error')
WHERE r.run = ? AND r.status <> 'success'
ORDER BY r.task_id, r.idx
"""

_EAR = """
SELECT task_id, min(ear) AS ear FROM metrics WHERE run = ? AND preset = 'default' AND ear IS NOT NULL
GROUP BY task_id
"""

# Tasks of the run that passed, with their template: a failed task whose template passed elsewhere.
_PASSED = """
SELECT coalesce(k.intent_template_id, o.intent_template_id) AS template_id, e.task_id,
       o.program_html::VARCHAR AS program_html
FROM evaluations e
LEFT JOIN tasks k ON k.task_id = e.task_id
LEFT JOIN original_tasks o ON o.task_id = e.task_id
WHERE e.run = ? AND e.status = 'success'
ORDER BY e.task_id
"""


# The other runs' attempts at the failed tasks of this run: witnesses for or against the reference.
_WITNESSES = """
SELECT e.task_id, e.run, r.agent, e.status, coalesce(t.final_answer, ar.raw_text) AS answer, t.final_url
FROM evaluations e
JOIN runs r ON r.name = e.run
LEFT JOIN trajectories t ON t.run = e.run AND t.task_id = e.task_id AND t.is_answer
LEFT JOIN agent_responses ar ON ar.run = e.run AND ar.task_id = e.task_id
WHERE e.run <> $run
  AND e.task_id IN (SELECT task_id FROM evaluations WHERE run = $run AND status IN ('failure', 'error'))
ORDER BY e.task_id, e.run
"""


# What a site's error page says, as an agent reading the page reports it (the proxy's timeout, a gateway).
SERVER_ERROR_PAGE = (
    r"upstream request timeout|502 bad gateway|503 service (?:temporarily )?unavailable|504 gateway"
)


def _json(text: str | None) -> Any:
    return orjson.loads(text) if text else None


def _verified_data(evaluators: list) -> Any:
    for evaluator in evaluators:
        expected = evaluator.get("expected") if isinstance(evaluator, dict) else None
        if evaluator.get("evaluator") == "AgentResponseEvaluator" and isinstance(expected, dict):
            return expected.get("retrieved_data")
    return None


def load_facts(store: Store | ShortLivedStore, run: str) -> list[TaskFacts]:
    """The facts of every failed or errored task of the run, in task order (eight queries in one read)."""
    with store.reading() as cur:

        def rows(sql: str) -> list[dict[str, Any]]:
            params = {"run": run} | ({"server_error": SERVER_ERROR_PAGE} if "$server_error" in sql else {})
            result = cur.execute(sql, params if "$run" in sql else [run])
            names = [d[0] for d in result.description]
            return [dict(zip(names, row, strict=True)) for row in result.fetchall()]

        tasks, steps, events, requests, evaluators, ears, passed, witnesses = (
            rows(sql)
            for sql in (_TASKS, _STEPS, _SERVER_ERRORS, _REQUESTS, _EVALUATORS, _EAR, _PASSED, _WITNESSES)
        )
    by_task: dict[str, defaultdict[int, list]] = {
        "steps": defaultdict(list), "events": defaultdict(list), "evaluators": defaultdict(list),
        "requests": defaultdict(list),
    }  # fmt: skip
    for r in steps:
        by_task["steps"][r["task_id"]].append(
            StepFact(
                r["idx"],
                r["action"],
                r["kind"],
                or_none(r["error"]),
                or_none(r["answer"]),
                or_none(r["url"]),
                or_none(r["typed"]),
                bool(r["saw_server_error"]),
            )
        )
    for r in events:
        by_task["events"][r["task_id"]].append(EventFact(r["seq"], r["status"], r["method"], r["url"]))
    for r in requests:
        by_task["requests"][r["task_id"]].append(EventFact(r["seq"], r["status"], r["method"], r["url"]))
    for r in evaluators:
        by_task["evaluators"][r["task_id"]].append(
            EvaluatorFact(r["idx"], r["evaluator"], r["status"], r["explanation"], r["nearest_event_seq"])
        )
    ear = {r["task_id"]: r["ear"] for r in ears}
    others: defaultdict[int, list[WitnessFact]] = defaultdict(list)
    for r in witnesses:
        others[r["task_id"]].append(
            WitnessFact(r["run"], r["agent"], r["status"], or_none(r["answer"]), or_none(r["final_url"]))
        )
    passed_by_template: defaultdict[int, list[int]] = defaultdict(list)
    checks_by_template: defaultdict[int, list[tuple]] = defaultdict(list)
    for r in passed:
        if r["template_id"] is not None:
            passed_by_template[r["template_id"]].append(r["task_id"])
            checks_by_template[r["template_id"]].append(tuple(_json(r["program_html"]) or ()))
    facts = []
    for r in tasks:
        task_id = r["task_id"]
        verified = tuple(e for e in _json(r["eval"]) or [] if isinstance(e, dict))
        facts.append(
            TaskFacts(
                run=run, task_id=task_id, intent=r["intent"], status=r["status"],
                verdict_source=r["verdict_source"], explanation=r["explanation"],
                offline_status=r["offline_status"], offline_disagrees=bool(r["offline_disagrees"]),
                termination=r["termination"], termination_detail=r["termination_detail"],
                n_steps=r["n_steps"], answer=r["answer"], response_status=r["response_status"],
                response_error=r["response_error"], expected_status=r["expected_status"],
                task_type=r["task_type"], template_id=r["template_id"],
                verified_data=_verified_data(list(verified)), verified_evaluators=verified,
                final_url=or_none(r["final_url"]), sites=tuple(r["sites"] or ()),
                witnesses=tuple(others[task_id]), agent=r["agent"],
                original_reference={
                    "must_include": list(r["must_include"] or []), "exact_match": r["exact_match"],
                    "fuzzy_match": _json(r["fuzzy_match"]), "reference_url": r["reference_url"],
                    "program_html": _json(r["program_html"]) or [],
                },
                ear=ear.get(task_id),
                template_passed=tuple(passed_by_template.get(r["template_id"], ())),
                template_passed_checks=tuple(checks_by_template.get(r["template_id"], ())),
                steps=tuple(by_task["steps"][task_id]), server_errors=tuple(by_task["events"][task_id]),
                requests=tuple(by_task["requests"][task_id]),
                evaluators=tuple(by_task["evaluators"][task_id]),
            )
        )  # fmt: skip
    return facts
