"""The diagnosis rules of the causes outside the agent: the environment (server errors, unreachable pages)
and an evaluator stricter than the task (offline evaluators pass, a difference of format only, a
reference WebArena-Verified corrected). Pure functions over one task's facts (docs/failure-causes.md)."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from core.diagnose.facts import StepFact, TaskFacts
from core.diagnose.findings import (
    Evidence,
    Finding,
    answered_at,
    failing_sentence,
    numbers,
    quote,
    steps_text,
    template_evidence,
)
from core.diagnose.rules_defects import rounds_to
from core.measure.judge.values import norm_value
from core.scoring.offline.urls import canonical_url

# A WebArena site's placeholder (core.scoring.offline.urls) -> the site name tasks use.
_SITE_OF = {
    "__SHOPPING__": "shopping", "__SHOPPING_ADMIN__": "shopping_admin", "__SHOPPING_ADMIN_HOST__": "shopping_admin",
    "__GITLAB__": "gitlab", "__REDDIT__": "reddit", "__MAP__": "map", "__WIKIPEDIA__": "wikipedia",
    "__WIKIPEDIA_HOST__": "wikipedia",
}  # fmt: skip
_PUBLIC_HOST = re.compile(r"^(?:[a-z0-9-]+\.)+[a-z]{2,}$")  # a named public host (not an IP, not ecs_ip)


def site_of(url: str) -> str | None:
    """The WebArena site of a page ('shopping', 'gitlab', ...), 'off-site' for a page of the public web
    (a named host such as cn.bing.com), None for anything else: a browser page (about:blank,
    chrome-error) or a site served on an address or port that does not say which site it is."""
    if not url.startswith(("http://", "https://")):
        return None
    canonical = canonical_url(url)
    for placeholder in sorted(_SITE_OF, key=len, reverse=True):
        if canonical.startswith(placeholder):
            return _SITE_OF[placeholder]
    host = (urlsplit(url).hostname or "").lower()
    return "off-site" if _PUBLIC_HOST.match(host) and not host.endswith(".amazonaws.com") else None


SERVER_ERROR_STEPS = 2  # tool calls that failed with a 5xx before the site counts as broken

# --- environment ---------------------------------------------------------------------------------------

_SITE_FAILED = re.compile(
    r"\b5\d\d\b|server error|unreachable|can.?t be reached|not (?:load|respond|reachable)|timed? ?out|"
    r"site (?:is )?down|connection (?:refused|reset|failed)|bad gateway|service unavailable",
    re.IGNORECASE,
)
STEP_SERVER_ERROR = re.compile(
    r"\b(?:HTTP )?5\d\d\b.*(?:server error|bad gateway|unavailable)|\(HTTP 5\d\d\)", re.I
)
_STEP_UNREACHABLE = re.compile(
    r"can.?t be reached|ERR_(?:CONNECTION|NAME_NOT_RESOLVED|TIMED_OUT|ADDRESS|TUNNEL|PROXY)|chromewebdata|"
    r"status is terminated",
    re.IGNORECASE,
)


def trace_server_errors(facts: TaskFacts) -> Finding | None:
    """Responses of 5xx (or none at all) in the task's network trace."""
    if not facts.server_errors:
        return None
    events = facts.server_errors
    statuses = sorted({e.status for e in events})
    what = " or ".join("no response" if s <= 0 else f"HTTP {s}" for s in statuses)
    n = len(events)
    summary = (
        f"{n} {'request' if n == 1 else 'requests'} in the task's trace got {what} "
        f"(event{'s' if n > 1 else ''} {numbers([e.seq for e in events])})"
    )
    if facts.answer:
        summary += f" before the agent answered {quote(facts.answer, 40)}{answered_at(facts)}"
    evidence = tuple(
        Evidence("event", f"{e.method} {e.url}", seq=e.seq, status=e.status) for e in events[:10]
    )
    return Finding("environment", "trace_server_errors", summary + ".", evidence)


START_STEPS = 2  # the first steps: a site that fails there was down when the attempt began


def start_page_failed(facts: TaskFacts) -> Finding | None:
    """The agent's reading of the page at its first steps reports a server's error page (an upstream
    timeout, a bad gateway): the site was down when the attempt began. A failure later on, which the agent
    may recover from, decides nothing."""
    seen = [s for s in facts.steps[:START_STEPS] if s.saw_server_error]
    if not seen:
        return None
    return Finding(
        "environment", "start_page_failed",
        f"At step {seen[0].idx} the agent read a server's error page (an upstream timeout or a gateway "
        "error) where the task's site should have loaded.",
        tuple(Evidence("step", s.url or s.action, step_idx=s.idx) for s in seen),
    )  # fmt: skip


def response_site_failed(facts: TaskFacts) -> Finding | None:
    """The agent reported UNKNOWN_ERROR and its error details say the site failed."""
    if facts.response_status != "UNKNOWN_ERROR" or not _SITE_FAILED.search(facts.response_error or ""):
        return None
    text = f"status UNKNOWN_ERROR: {facts.response_error}"
    return Finding(
        "environment", "response_site_failed",
        f"The agent reported UNKNOWN_ERROR saying the site failed: {quote(facts.response_error)}.",
        (Evidence("response", text),),
    )  # fmt: skip


_URL_IN_TEXT = re.compile(r"https?://[^\s'\"<>)]+")


def _off_site(step: StepFact) -> bool:
    """The step went to a page of the public web: the URL its error names, else the one its action goes to."""
    urls = _URL_IN_TEXT.findall(step.error or "") or _URL_IN_TEXT.findall(step.action or "")
    return bool(urls) and site_of(urls[0]) == "off-site"


def tool_server_errors(facts: TaskFacts) -> Finding | None:
    """Browser calls that failed with a server error (at least SERVER_ERROR_STEPS) or an unreachable page
    (not one of the public web)."""
    server = [s for s in facts.steps if s.error and STEP_SERVER_ERROR.search(s.error)]
    # A page of the public web that cannot be reached is the agent leaving the sandbox, not a broken site.
    unreachable = [
        s for s in facts.steps
        if s.error and _STEP_UNREACHABLE.search(s.error) and not _off_site(s)
    ]  # fmt: skip
    if len(server) < SERVER_ERROR_STEPS and not unreachable:
        return None
    failed = sorted({s.idx: s for s in server + unreachable}.values(), key=lambda s: s.idx)
    summary = (
        f"{len(failed)} browser {'call' if len(failed) == 1 else 'calls'} failed with a server error or an unreachable page "
        f"({steps_text([s.idx for s in failed])}), first {quote(failed[0].error)}."
    )
    return Finding(
        "environment", "tool_server_errors", summary,
        tuple(Evidence("step", s.error or "", step_idx=s.idx) for s in failed[:10]),
    )  # fmt: skip


# --- evaluator stricter than the task -----------------------------------------------------------------


def _strict_finding(facts: TaskFacts, rule: str, summary: str) -> Finding:
    """An evaluator-stricter-than-the-task finding on the answer itself: the failing evaluator's sentence,
    the answer, and the passing tasks of its template."""
    evidence = (failing_sentence(facts), Evidence("response", facts.answer[:300]), *template_evidence(facts))
    return Finding("evaluator_strict", rule, summary, evidence)


def offline_evaluators_pass(facts: TaskFacts) -> Finding | None:
    """The offline WebArena evaluators pass the task that the run's own verdict failed."""
    if facts.offline_status != "success" or not facts.offline_disagrees:
        return None
    return Finding(
        "evaluator_strict", "offline_evaluators_pass",
        f"The run's own verdict is {facts.status}, but every offline evaluator passes the answer "
        f"{quote(facts.answer, 40)}.",
        (Evidence("evaluator", facts.explanation or "offline evaluators: success"), *template_evidence(facts)),
    )  # fmt: skip


_DIFFER_ONLY = re.compile(r"differ only in", re.IGNORECASE)


def loose(text: str) -> str:
    """Case, whitespace, punctuation, escaped quotes and URL schemes removed: what a reader would not
    call a different answer."""
    text = text.replace('\\"', '"').replace("%20", " ").lower()
    text = re.sub(r"https?://", "", text)
    return re.sub(r"[^0-9a-z\u00c0-\uffff]+", "", text)


def differs_only_in_format(facts: TaskFacts) -> Finding | None:
    """A failing evaluator's sentence says the values differ only in case or spaces, or every original
    reference string is in the answer once case, spaces, punctuation and URL schemes are set aside."""
    for ev in facts.evaluators:
        if ev.status == "failure" and ev.explanation and _DIFFER_ONLY.search(ev.explanation):
            return Finding(
                "evaluator_strict", "differs_only_in_format",
                f"The {ev.evaluator} check failed on a difference of format only: {quote(ev.explanation, 160)}.",
                (Evidence("evaluator", ev.explanation, seq=ev.nearest_event_seq), *template_evidence(facts)),
            )  # fmt: skip
    string_failed = any(ev.evaluator == "string_match" and ev.status == "failure" for ev in facts.evaluators)
    wanted = [w for w in facts.reference_values if isinstance(w, str) and loose(w)]
    if not string_failed or not wanted or not facts.answer:
        return None
    answer = loose(facts.answer)
    if not all(loose(w) in answer for w in wanted):
        return None
    return _strict_finding(
        facts, "differs_only_in_format",
        f"The answer {quote(facts.answer, 50)} holds every reference string "
        f"({', '.join(quote(w, 30) for w in wanted[:4])}) once case, spaces and punctuation are set aside.",
    )  # fmt: skip


Scalar = str | int | float | bool


def verified_leaves(value: Any) -> list[list[Scalar]]:
    """Verified's expected values as a list of requirements, each a list of alternatives: a list of plain
    values nested in retrieved_data is one requirement with alternatives (`["Anglebert Dinkherhump",
    "Anglebert", "Dinkherhump"]`), a dict asks for each of its values."""
    if isinstance(value, dict):
        return [req for v in value.values() for req in verified_leaves(v)]
    if isinstance(value, list):
        out: list[list[Scalar]] = []
        for item in value:
            if isinstance(item, list) and item and all(_is_scalar(a) for a in item):
                out.append(list(item))
            else:
                out += verified_leaves(item)
        return out
    return [[value]] if _is_scalar(value) else []


def _is_scalar(value: Any) -> bool:
    return isinstance(value, str | int | float | bool)


# WebArena-Verified's boolean normaliser (data_types/boolean.py): the words it reads as true or false.
_BOOLEAN_WORDS = {True: ("true", "yes", "y", "1", "t", "on"), False: ("false", "no", "n", "0", "f", "off")}
_PRECISE_NUMBER = re.compile(r"-?\d+\.\d{3,}")  # a value Verified gives to 3 decimals or more
ROUNDED_MIN_DECIMALS = 2  # an answer's number rounds a precise value only when written with this many


def _value_in(value: Scalar, answer: str) -> bool:
    if isinstance(value, bool):
        # The answer is the boolean itself (a yes or no somewhere in a sentence says nothing).
        return (norm_value(answer) or "").rstrip(".!") in _BOOLEAN_WORDS[value]
    if isinstance(value, str) and _PRECISE_NUMBER.fullmatch(value.strip()):
        # A precise value (a coordinate) given in the answer rounded to its own precision.
        return rounds_to(float(value), answer, ROUNDED_MIN_DECIMALS)
    if isinstance(value, int | float):
        number = float(value)
        shapes = {
            f"{number:g}",
            f"{number:.2f}",
            f"{number:,.2f}",
            f"{int(number)}" if number.is_integer() else "",
        }
        return any(s and re.search(rf"(?<![\d.]){re.escape(s)}(?![\d]|\.\d)", answer) for s in shapes)
    words = " ".join(re.sub(r"[^\w]+", " ", value.lower()).split())
    text = " ".join(re.sub(r"[^\w]+", " ", answer.lower()).split())
    return bool(words) and re.search(rf"\b{re.escape(words)}\b", text) is not None


_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def verified_corrected_value(facts: TaskFacts) -> Finding | None:
    """The original reference asks one value, WebArena-Verified corrected it (its reference holds another
    value of the same kind where the original had this one), and the answer is Verified's value, not the
    original's: the check failed on the value Verified changed (a count of 1 corrected to 0)."""
    if facts.verdict_source == "webarena-verified" or facts.expected_status not in (None, "SUCCESS"):
        return None
    original = [str(v) for v in facts.reference_values if str(v).strip()]
    if len(original) != 1 or not facts.answer or len(facts.answer) > 300:
        return None
    (wanted,) = original
    is_number = bool(_NUMBER.fullmatch(wanted.strip()))
    # Verified's values of the same kind (a number for a number): one of them must be the answer, and
    # none the original value (else Verified did not change it).
    same_kind = [
        alt
        for req in verified_leaves(facts.verified_data)
        for alt in req
        if not isinstance(alt, bool) and isinstance(alt, int | float) == is_number
    ]
    if any(_value_in(v, wanted) for v in same_kind) or _value_in(
        float(wanted) if is_number else wanted, facts.answer
    ):
        return None
    matched = [v for v in same_kind if _value_in(v, facts.answer)]
    if len(matched) != 1:
        return None
    return _strict_finding(
        facts, "verified_corrected_value",
        f"The original reference wants {quote(wanted, 30)}; WebArena-Verified corrected it to "
        f"{quote(str(matched[0]), 30)}, which is what the agent answered ({quote(facts.answer, 50)}).",
    )  # fmt: skip


def verified_reference_matches(facts: TaskFacts) -> Finding | None:
    """The run was scored against the original reference, and the answer holds every value the
    corrected WebArena-Verified reference expects."""
    if facts.verdict_source == "webarena-verified" or facts.expected_status not in (None, "SUCCESS"):
        return None
    requirements = verified_leaves(facts.verified_data)
    if not requirements or not facts.answer:
        return None
    if not all(any(_value_in(alt, facts.answer) for alt in req) for req in requirements):
        return None
    expected = [str(req[0]) if len(req) == 1 else " or ".join(map(str, req)) for req in requirements]
    return _strict_finding(
        facts, "verified_reference_matches",
        f"The answer {quote(facts.answer, 50)} holds every value of the corrected WebArena-Verified "
        f"reference ({', '.join(quote(e, 30) for e in expected[:5])}), but the run was scored with the original one.",
    )  # fmt: skip
