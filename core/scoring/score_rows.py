"""The engine's per-task result as our rows: a `TaskScore` (an `evaluations` row) and its
`EvaluatorScore`s (`evaluator_results` rows), each failing evaluator explained in a sentence
(`core.scoring.explanations`) with the trace event it matched or the nearest one.

Only a few engine internals are touched, and only to *locate* events for explanations, never to decide
a status: the evaluator's own filter/normalise steps (pinned engine version, see pyproject). Runs in the
scoring process, after the engine's verdict (`core.scoring.engine`).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any, Literal

import orjson
from pydantic import BaseModel, Field

from core.files.redaction import redact_report
from core.scoring import explanations
from core.scoring.cannot_pass import CANNOT_PASS

SOURCE = "webarena-verified"

Status = Literal["success", "failure", "error"]
# The one official evaluator that reads a task's network trace.
NETWORK_EVALUATOR = "NetworkEventEvaluator"


class EvaluatorScore(BaseModel):
    """An `evaluator_results` row without `run`. JSON columns hold serialised JSON text."""

    idx: int
    evaluator: str
    status: Status
    score: float | None
    assertions: str | None = None
    expected: str | None = None
    actual: str | None = None
    expected_normalized: str | None = None
    actual_normalized: str | None = None
    error: str | None = None
    explanation: str | None = None
    matched_event_seq: int | None = None
    nearest_event_seq: int | None = None


class TaskScore(BaseModel):
    """An `evaluations` row without `run`, its evaluator rows, and the official per-task result."""

    task_id: int
    status: Status
    score: float | None
    source: str = SOURCE
    engine_version: str | None = None
    evaluator_checksum: str | None = None
    data_checksum: str | None = None
    error: str | None = None
    explanation: str | None = None
    cannot_pass: bool = False
    evaluator_results: list[EvaluatorScore] = Field(default_factory=list)
    # `TaskEvalResult.model_dump(mode="json", exclude_none=True)`: what the official CLI writes.
    eval_result: dict[str, Any]


def json_text(value: Any) -> str | None:
    """A value as the JSON text a JSON column stores (None stays NULL)."""
    if value is None:
        return None
    try:
        return orjson.dumps(value, default=str, option=orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:  # a lone surrogate from the agent's JSON (`"\ud800"`): kept as its escape
        return orjson.dumps(
            _valid_strings(value), default=_valid_str, option=orjson.OPT_NON_STR_KEYS
        ).decode()


def _valid_str(value: Any) -> str:
    from core.measure.action_grammar.webarena import valid_text

    return valid_text(str(value))


def _valid_strings(value: Any) -> Any:
    if isinstance(value, str):
        return _valid_str(value)
    if isinstance(value, dict):
        return {_valid_strings(k) if isinstance(k, str) else k: _valid_strings(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_valid_strings(v) for v in value]
    return value


def task_score(
    task_id: int, official: dict, context, trace, event_seqs: list[int] | None = None
) -> TaskScore:
    official = _redact_network_reports(official)
    status: Status = (
        official["status"] if official["status"] in ("success", "failure", "error") else "failure"
    )
    task_cfgs = context.task.eval if context is not None else ()
    seq_of = {}
    if trace is not None:
        seqs = event_seqs if event_seqs is not None else range(len(trace.events))
        seq_of = {id(event): seq for seq, event in zip(seqs, trace.events, strict=False)}
    rows = []
    # The trace's events as explanations show them: built at most once per task, only if needed.
    briefs = lru_cache(maxsize=1)(lambda: _event_briefs(context, seq_of))
    for idx, er_json in enumerate(official["evaluators_results"]):
        cfg = task_cfgs[idx] if idx < len(task_cfgs) else None
        rows.append(_evaluator_row(idx, er_json, cfg, context, seq_of, briefs))
    # An evaluator that errored leaves the task's own error_msg empty: surface the first one.
    error = official.get("error_msg") or next((r.error for r in rows if r.error), None)
    for row in rows:  # sentences quote trace events (URLs, post data)
        row.explanation = redact_report(row.explanation)
        row.error = redact_report(row.error)
    error = redact_report(error)
    return TaskScore(
        task_id=task_id,
        status=status,
        score=None if status == "error" else float(official["score"]),
        engine_version=official.get("webarena_verified_version"),
        evaluator_checksum=official.get("webarena_verified_evaluator_checksum"),
        data_checksum=official.get("webarena_verified_data_checksum"),
        error=error,
        explanation=explanations.task_sentence(status, [r.explanation for r in rows if r.explanation], error),
        cannot_pass=task_id in CANNOT_PASS,
        evaluator_results=rows,
        eval_result=official,
    )


def _redact_network_reports(official: dict) -> dict:
    """The engine's result with what network evaluators quote from the trace (`actual`, errors)
    redacted: the stored result must not carry a HAR's secrets. Verdicts are untouched."""
    official = {k: redact_report(v) if k == "error_msg" else v for k, v in official.items()}
    results = official.get("evaluators_results") or []
    if not any(r.get("evaluator_name") == NETWORK_EVALUATOR for r in results):
        return official
    redacted = [
        {
            **r,
            **{k: redact_report(r.get(k)) for k in ("actual", "actual_normalized", "error_msg") if k in r},
        }
        if r.get("evaluator_name") == NETWORK_EVALUATOR
        else r
        for r in results
    ]
    return {**official, "evaluators_results": redacted}


def _evaluator_row(idx: int, er: dict, cfg, context, seq_of: dict[int, int], briefs) -> EvaluatorScore:
    status: Status = er["status"] if er["status"] in ("success", "failure", "error") else "failure"
    expected_raw = cfg.expected.model_dump(mode="json", exclude_none=True) if cfg is not None else None
    row = EvaluatorScore(
        idx=idx,
        evaluator=er["evaluator_name"],
        status=status,
        score=None if status == "error" else er.get("score"),
        assertions=json_text(er.get("assertions")),
        expected=json_text(expected_raw),
        actual=json_text(er.get("actual")),
        expected_normalized=json_text(er.get("expected")),
        actual_normalized=json_text(keys_like(er.get("actual_normalized"), er.get("expected"))),
        error=er.get("error_msg"),
    )
    try:
        if er["evaluator_name"] == NETWORK_EVALUATOR and cfg is not None and context is not None:
            _locate_network_events(row, er, cfg, context, seq_of, briefs)
        elif status != "success":
            row.explanation = explanations.explain_evaluator(_with_alternatives(er, cfg, context))
    except Exception as exc:  # an explanation must never cost a score
        row.explanation = explanations.fallback(er, exc)
    return row


def _with_alternatives(er: dict, cfg, context) -> dict:
    """The result with every expected retrieved_data item listing all its normalised alternatives.

    The engine reports only the first alternative; the sentence must not call an accepted one missing.
    """
    if er["evaluator_name"] != "AgentResponseEvaluator" or cfg is None or context is None:
        return er
    from webarena_verified.core.evaluation.data_types import NormalizedType
    from webarena_verified.core.evaluation.evaluators.agent_response_evaluator import AgentResponseEvaluator

    expected = AgentResponseEvaluator()._normalized_expected_value(cfg.expected, config=cfg, context=context)
    items = expected.get("retrieved_data")
    if not items or not isinstance(er.get("expected"), dict):
        return er
    shown = [
        _as_reported(list(item.alternatives))
        if isinstance(item, NormalizedType) and len(item.alternatives) > 1
        else _as_reported(item)
        for item in items
    ]
    return {**er, "expected": {**er["expected"], "retrieved_data": shown}}


def _locate_network_events(
    row: EvaluatorScore, er: dict, cfg, context, seq_of: dict[int, int], briefs: Callable[[], list]
) -> None:
    """Find the event a network evaluator matched, or the nearest one, and explain a failure."""
    from webarena_verified.core.evaluation.evaluators.network_event_evaluator import NetworkEventEvaluator

    if er["status"] == "error":
        row.explanation = explanations.explain_evaluator(er)
        return
    evaluator = NetworkEventEvaluator()
    expected_norm = evaluator._normalized_expected_value(cfg.expected, config=cfg, context=context)
    candidates: list[explanations.Candidate] = []
    if er.get("actual"):  # the engine found events passing its method/path/referer filter
        events = evaluator._filter_events_by_criteria(context.network_trace.evaluation_events, context, cfg)
        if cfg.last_event_only:
            events = events[-1:]
        for event in events:
            data = evaluator._extract_event_data(event, cfg, context)
            actual = evaluator._normalized_actual_value([data], expected_norm, config=cfg, context=context)[0]
            mismatch = evaluator.value_comparator.compare(
                actual=actual,
                expected=expected_norm,
                ordered=False,
                value_name="network_event",
                ignore_extra_keys=True,
            )
            candidates.append(
                explanations.Candidate(
                    seq=seq_of.get(id(event), -1),
                    normalized=_as_reported(actual),
                    matches=not mismatch,
                )
            )
    matched = next((c for c in candidates if c.matches), None)
    if cfg.should_not_exist:
        row.matched_event_seq = candidates[0].seq if candidates else None
    elif matched is not None:
        row.matched_event_seq = matched.seq
    if er["status"] == "success":
        return
    expected_json = er.get("expected")
    if not isinstance(expected_json, dict):
        expected_json = _as_reported(expected_norm)
    navigate_last = bool(context.task.is_navigate_task and cfg.expected.http_method == "GET")
    explained = explanations.explain_network(
        expected=expected_json,
        candidates=candidates,
        events=briefs(),
        should_not_exist=bool(cfg.should_not_exist),
        navigate_last=navigate_last,
    )
    row.explanation = explained.sentence
    row.nearest_event_seq = explained.nearest_seq


def keys_like(value: Any, model: Any) -> Any:
    """`value` with its keys in `model`'s order, then the rest sorted (when both are objects).

    The engine builds a response's normalised object from a set of keys, so its key order changes from
    one process to the next (`PYTHONHASHSEED`): stored as reported, two imports of one run would differ
    in text. The expected object's order is fixed by the dataset, and the two are read side by side."""
    if not isinstance(value, dict) or not isinstance(model, dict):
        return value
    return {
        **{k: value[k] for k in model if k in value},
        **{k: value[k] for k in sorted(value, key=str) if k not in model},
    }


def _as_reported(normalized: Any) -> Any:
    """A normalised value serialised exactly as the engine reports `actual_normalized`."""
    from webarena_verified.types.eval import EvaluatorResult

    holder = EvaluatorResult(evaluator_name="-", status="success", score=1.0, actual_normalized=normalized)
    return holder.model_dump(mode="json")["actual_normalized"]


def _event_briefs(context, seq_of: dict[int, int]) -> list[explanations.EventBrief]:
    """The trace's evaluation events, URLs shown with site placeholders as the task writes them.

    Derendering is the engine's rule (`EnvironmentConfig.derender_url`: replace the site URL by its
    placeholder) done as plain string replacement, since it runs on every event of the trace.
    """
    prefixes = []
    for site in context.task.sites:
        env = (context.config.environments or {}).get(site)
        for site_url in env.urls if env else ():
            prefixes.append((site_url, site_url.rstrip("/"), site.url_name_template))
    briefs = []
    for event in context.network_trace.evaluation_events:
        try:
            url = event.url
            shown = next((url.replace(bare, tpl) for full, bare, tpl in prefixes if full in url), url)
            status = event.request_status
            briefs.append(
                explanations.EventBrief(
                    seq=seq_of.get(id(event), -1),
                    method=str(event.http_method).upper(),
                    url=shown,
                    status=status if isinstance(status, int) else None,
                )
            )
        except Exception:  # a malformed entry: the engine judged it; we just cannot point at it
            continue
    return briefs
