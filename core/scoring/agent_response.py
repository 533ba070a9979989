"""The agent's final response: raw text, the object in it, and a lint against the public schema.

The lint follows the public `FinalAgentResponse` rules of webarena-verified (required fields, allowed
task types and statuses, retrieved_data shape, error_details) and flags forms the engine tolerates or
rejects (code fences, prose around JSON, legacy keys). It is advice for reviewers: it never changes a
score, which comes from the official engine alone.
"""

from __future__ import annotations

import re
from typing import Any

import orjson
from pydantic import BaseModel, Field

TASK_TYPES = ("RETRIEVE", "MUTATE", "NAVIGATE")
STATUSES = (
    "SUCCESS", "ACTION_NOT_ALLOWED_ERROR", "PERMISSION_DENIED_ERROR", "NOT_FOUND_ERROR",
    "DATA_VALIDATION_ERROR", "UNKNOWN_ERROR",
)  # fmt: skip
KNOWN_FIELDS = frozenset({"task_type", "performed_operation", "status", "retrieved_data", "error_details"})
# The engine's own code-block pattern (AgentResponseEvaluator._get_actual_agent_response_dict).
_CODE_BLOCK = re.compile(r"```(?:json)?\s*\n?(.*?)\n?```", re.DOTALL)
_MAX_SHOWN = 80  # characters of a value quoted in a message
_MAX_SEARCH = 1 << 20  # longest text searched for JSON embedded in prose
_MAX_TRIES = 16


class LintFinding(BaseModel):
    """One finding of the lint (`agent_responses.lint`; docs/schema.md lists the rules)."""

    rule: str
    """The rule, e.g. `code_fence`, `missing_field`."""
    message: str
    """The finding in one sentence."""


class AgentResponseCheck(BaseModel):
    """What we store per task in `agent_responses`."""

    raw_text: str | None
    parsed: Any = None  # the JSON value found in the text (what the engine would compare), or None
    parse_error: str | None = None
    lint: list[LintFinding] = Field(default_factory=list)

    @property
    def lint_json(self) -> str:
        return orjson.dumps([f.model_dump() for f in self.lint]).decode()


def _shown(value: Any) -> str:
    text = value if isinstance(value, str) else orjson.dumps(value, default=str).decode()
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 1] + "…"


def _first_json_object(text: str) -> tuple[Any, int, int] | None:
    """The first decodable JSON object or array embedded in prose: (value, start, end).

    Bounded (a few openers x a few closers) so hostile text cannot make this quadratic.
    """
    if len(text) > _MAX_SEARCH:
        return None
    for n, match in enumerate(re.finditer(r"[{\[]", text)):
        if n >= _MAX_TRIES:
            break
        start = match.start()
        closer = "}" if text[start] == "{" else "]"
        end = text.rfind(closer)
        for _ in range(_MAX_TRIES):
            if end <= start:
                break
            try:
                return orjson.loads(text[start : end + 1]), start, end + 1
            except orjson.JSONDecodeError:
                end = text.rfind(closer, start, end)
    return None


_NOTHING = object()


def extract_response(raw: str | None) -> tuple[Any, str | None, list[LintFinding]]:
    """(parsed value or _NOTHING, parse error, format findings) — mirrors how the engine reads the text."""
    findings: list[LintFinding] = []
    if raw is None:
        return _NOTHING, "no agent response", [LintFinding(rule="missing", message="no agent response file")]
    text = raw.strip()
    if not text:
        empty = [LintFinding(rule="empty", message="the agent response is empty")]
        return _NOTHING, "empty agent response", empty
    fence = _CODE_BLOCK.search(raw)
    if fence:
        findings.append(
            LintFinding(
                rule="code_fence", message="JSON is wrapped in a ``` code fence (the engine unwraps it)"
            )
        )
        outside = (raw[: fence.start()] + raw[fence.end() :]).strip()
        if outside:
            findings.append(
                LintFinding(
                    rule="prose_around_json",
                    message=f"text outside the code fence is ignored: {_shown(outside)!r}",
                )
            )
        text = fence.group(1).strip()
    try:
        return orjson.loads(text), None, findings
    except orjson.JSONDecodeError as exc:
        error = f"not JSON: {str(exc).splitlines()[0]}"
    embedded = _first_json_object(text)
    if embedded is None:
        findings.append(LintFinding(rule="not_json", message="no JSON object found in the response"))
        return _NOTHING, error, findings
    value, start, end = embedded
    around = (text[:start] + " … " + text[end:]).strip(" …")
    findings.append(
        LintFinding(
            rule="prose_around_json",
            message=f"JSON is surrounded by prose the engine does not strip ({_shown(around)!r}); "
            "the engine sees plain text and fails the response",
        )
    )
    return value, error, findings


def _item_kind(item: Any) -> str:
    if isinstance(item, bool):
        return "boolean"
    if isinstance(item, int | float):
        return "number"
    if isinstance(item, str):
        return "string"
    if item is None:
        return "null"
    if isinstance(item, dict):
        return "object"
    return "array"


def lint_object(obj: Any) -> list[LintFinding]:
    """Findings of one parsed response against the public FinalAgentResponse rules."""
    out: list[LintFinding] = []

    def add(rule: str, message: str) -> None:
        out.append(LintFinding(rule=rule, message=message))

    if not isinstance(obj, dict):
        add("not_object", f"the response is a JSON {_item_kind(obj)}, not an object")
        return out
    if "action" in obj or "results" in obj:
        legacy = ", ".join(k for k in ("action", "results") if k in obj)
        add("legacy_keys", f"legacy key(s) {legacy}: use task_type and retrieved_data")
    if "performed_operation" in obj:
        add("legacy_keys", "performed_operation is the legacy name of task_type")
    extra = sorted(k for k in obj if k not in KNOWN_FIELDS and k not in ("action", "results"))
    if extra:
        add("unknown_field", f"fields outside the schema: {', '.join(extra)}")

    task_type = obj.get("task_type", obj.get("performed_operation"))
    status = obj.get("status")
    if task_type is None:
        add("missing_field", "required field task_type is missing or null")
    elif not isinstance(task_type, str) or task_type.upper() not in TASK_TYPES:
        add("invalid_task_type", f"task_type {_shown(task_type)!r} is not one of {', '.join(TASK_TYPES)}")
    if status is None:
        add("missing_field", "required field status is missing or null")
    elif not isinstance(status, str) or status.upper() not in STATUSES:
        add("invalid_status", f"status {_shown(status)!r} is not one of {', '.join(STATUSES)}")
    kind = task_type.upper() if isinstance(task_type, str) else None
    state = status.upper() if isinstance(status, str) else None

    data = obj.get("retrieved_data")
    if data is not None and not isinstance(data, list):
        add("retrieved_data_not_list", f"retrieved_data must be an array or null, got a {_item_kind(data)}")
    if kind in ("NAVIGATE", "MUTATE") and data not in (None, []):
        add("retrieved_data_not_null", f"retrieved_data must be null (or empty) for {kind}")
    if kind == "RETRIEVE" and state == "SUCCESS" and data is None:
        add(
            "retrieved_data_missing",
            "a successful RETRIEVE must return retrieved_data (an empty array if none)",
        )
    if isinstance(data, list) and data:
        kinds = {_item_kind(item) for item in data}
        if "array" in kinds:
            add("nested_array", "retrieved_data items must be single values or objects, not arrays")
        if len(kinds - {"array"}) > 1:
            add("mixed_item_types", f"retrieved_data mixes item types: {', '.join(sorted(kinds))}")
        key_sets = {tuple(sorted(item)) for item in data if isinstance(item, dict)}
        if len(key_sets) > 1:
            add("mixed_object_keys", f"retrieved_data objects have different keys: {len(key_sets)} key sets")

    details = obj.get("error_details")
    if details is not None and not isinstance(details, str):
        add("error_details_not_string", "error_details must be a string or null")
    if state == "SUCCESS" and details not in (None, ""):
        add("error_details_on_success", "error_details must be null when status is SUCCESS")
    if state is not None and state != "SUCCESS" and state in STATUSES and not details:
        add("error_details_missing", f"status {state} should explain the failure in error_details")
    if not out:
        out.extend(_official_schema_findings(obj))
    return out


def _official_schema_findings(obj: dict) -> list[LintFinding]:
    """Anything else the official pydantic model rejects (e.g. a non-scalar item type)."""
    from pydantic import ValidationError
    from webarena_verified.types.agent_response import FinalAgentResponse

    try:
        FinalAgentResponse.model_validate(dict(obj))
    except ValidationError as exc:
        return [
            LintFinding(
                rule="schema",
                message=f"{'.'.join(str(p) for p in e['loc']) or 'response'}: {e['msg']}",
            )
            for e in exc.errors()[:5]
        ]
    return []


def check_agent_response(raw: str | None) -> AgentResponseCheck:
    """Parse and lint a raw agent response; never raises on hostile text."""
    parsed, error, findings = extract_response(raw)
    if parsed is _NOTHING:
        return AgentResponseCheck(raw_text=raw, parsed=None, parse_error=error, lint=findings)
    findings = findings + lint_object(parsed)
    return AgentResponseCheck(raw_text=raw, parsed=parsed, parse_error=error, lint=findings)


def agent_response_row(run: str, task_id: int, check: AgentResponseCheck) -> dict[str, Any]:
    return {
        "run": run,
        "task_id": task_id,
        "raw_text": check.raw_text,
        "parsed": None if check.parse_error and check.parsed is None else orjson.dumps(check.parsed).decode(),
        "parse_error": check.parse_error,
        "lint": check.lint_json,
        "n_lint_issues": len(check.lint),
    }
