"""Evaluator defects found with evidence: rules that say the benchmark's check, not the agent, was wrong,
each citing the value it compared (the check, the reference, what the agent gave, WebArena-Verified's
value) and, where other runs attempted the task, those runs as witnesses. Pure functions over one task's
facts (docs/failure-causes.md).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import orjson

from core.diagnose.facts import TaskFacts, WitnessFact
from core.diagnose.findings import (
    GAVE_UP,
    Evidence,
    Finding,
    failing_sentence,
    quote,
)
from core.measure.judge.values import as_date, norm_value, numbers_in, same_value, squash
from core.scoring.offline.urls import canonical_url
from core.scoring.offline.webarena import url_match

# --- other runs as witnesses ---------------------------------------------------------------------------


def same_answer(ours: str, theirs: str | None) -> bool:
    """Two agents' answers are the same: the same value (the judge's normalisers) or the same words."""
    if not theirs:
        return False
    return bool(same_value(ours, theirs)) or squash(ours) == squash(theirs)


# An answer two agents give alike by chance: one small number, yes or no.
_COMMONPLACE = re.compile(r"^\s*(?:\d|yes|no|true|false|none)\s*\.?\s*$", re.IGNORECASE)


def _real_answer(answer: str | None) -> bool:
    """An answer that states something (not N/A, not a report of failure, not a long narration)."""
    return bool(answer and norm_value(answer)) and not GAVE_UP.search(answer[:300]) and len(answer) <= 300


def _telling_answer(answer: str | None) -> bool:
    """An answer whose agreement between two agents says something: stated, and not a commonplace."""
    return _real_answer(answer) and not _COMMONPLACE.match(answer or "")


def split_witnesses(
    answer: str | None, agent: str | None, others: Iterable[WitnessFact]
) -> tuple[list[WitnessFact], list[WitnessFact]]:
    """Other agents' runs of a task (runs of `agent` itself left out): those that gave the same answer and
    failed too (evidence against the reference), and those that passed with another answer (evidence
    against the agent). None for an answer whose agreement says nothing (`_telling_answer`)."""
    if not _telling_answer(answer):
        return [], []
    others = [w for w in others if w.agent is None or w.agent != agent]
    agree = [w for w in others if w.status != "success" and same_answer(answer or "", w.answer)]
    against = [w for w in others if w.status == "success" and not same_answer(answer or "", w.answer)]
    return agree, against


def witnesses(facts: TaskFacts) -> tuple[list[WitnessFact], list[WitnessFact]]:
    return split_witnesses(facts.answer, facts.agent, facts.witnesses)


def witness_text(w: WitnessFact, task_id: int) -> str:
    verdict = "passed" if w.status == "success" else "failed"
    return f"run {w.run} {verdict} task {task_id} answering {quote(w.answer, 80)}"


def witness_evidence(
    facts: TaskFacts, agree: list[WitnessFact], against: list[WitnessFact]
) -> list[Evidence]:
    def one(w: WitnessFact, supports: bool) -> Evidence:
        return Evidence(
            "witness", witness_text(w, facts.task_id), run=w.run, task_id=facts.task_id, supports=supports
        )

    return [one(w, True) for w in agree] + [one(w, False) for w in against]


def with_witnesses(facts: TaskFacts, *evidence: Evidence) -> tuple[Evidence, ...]:
    """A defect's evidence and the other runs as witnesses (the same answer and failed: for; passed with
    another answer: against), so the defects list shows what the rule recorded."""
    return (*evidence, *witness_evidence(facts, *witnesses(facts)))


def check_evidence(
    facts: TaskFacts, check: str, reference: str, actual: str, verified: str | None
) -> Evidence:
    failing = failing_sentence(facts)
    return Evidence(
        "evaluator", failing.text, seq=failing.seq, check=check, reference=reference, actual=actual,
        verified=verified,
    )  # fmt: skip


def _reference_text(facts: TaskFacts) -> str:
    ref = facts.original_reference
    parts = [*facts.reference_values, ref.get("reference_url")]
    fuzzy = ref.get("fuzzy_match")
    if isinstance(fuzzy, list):
        parts += [str(f) for f in fuzzy]
    return "; ".join(str(p) for p in parts if p is not None and str(p).strip()) or "(the run's own reference)"


def verified_value_text(evaluators: Any) -> str | None:
    """WebArena-Verified's expected value from its evaluators: the retrieved data (or the status it expects
    instead), and the page or request each network check expects; None when it checks nothing recorded."""
    parts = []
    for evaluator in evaluators if isinstance(evaluators, list | tuple) else []:
        expected = evaluator.get("expected") if isinstance(evaluator, dict) else None
        if not isinstance(expected, dict):
            continue
        if evaluator.get("evaluator") == "AgentResponseEvaluator":
            status = str(expected.get("status") or "SUCCESS")
            if status != "SUCCESS":
                parts.append(f"status {status}")
            elif expected.get("retrieved_data") is not None:
                parts.append(compact(expected["retrieved_data"]))
        elif evaluator.get("evaluator") == "NetworkEventEvaluator" and expected.get("url"):
            query = expected.get("query_params")
            parts.append(str(expected["url"]) + (f"?{compact(query)}" if query else ""))
    return "; ".join(parts) or None


def verified_text(facts: TaskFacts) -> str | None:
    return verified_value_text(facts.verified_evaluators)


def compact(value: Any, limit: int = 300) -> str:
    """A value as one line of JSON, cut at `limit` characters with an ellipsis saying so."""
    text = orjson.dumps(value).decode()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def other_runs_agree(facts: TaskFacts) -> Finding | None:
    """At least one other agent's run gave the same answer and failed too, and no run passed the task with
    another answer: two agents agreeing against the reference is evidence against the reference."""
    agree, against = witnesses(facts)
    if not agree or against or not any(ev.status == "failure" for ev in facts.evaluators):
        return None
    runs = ", ".join(w.run for w in agree)
    check = next((ev.evaluator for ev in facts.evaluators if ev.status == "failure"), "evaluator")
    return Finding(
        "evaluator_strict", "other_runs_agree",
        f"The answer {quote(facts.answer, 50)} is also what {runs} answered for this task, and both were "
        "failed; no run passed it with another answer.",
        (
            check_evidence(facts, check, _reference_text(facts), facts.answer or "", verified_text(facts)),
            *witness_evidence(facts, agree, against),
        ),
    )  # fmt: skip


# --- values the check refused although they are the same ----------------------------------------------

_UNITS = frozenset(
    {
        "usd",
        "dollar",
        "dollars",
        "km",
        "m",
        "mi",
        "miles",
        "kg",
        "lb",
        "lbs",
        "min",
        "mins",
        "minutes",
        "h",
        "hours",
        "percent",
        "reviews",
        "items",
        "orders",
    }
)


def rounds_to(wanted: float, answer: str, min_decimals: int = 0) -> bool:
    """A number of the answer equals `wanted` rounded to the answer's own precision (359.55 ~ 359.546),
    counting only numbers written with at least `min_decimals` decimals."""
    for match in re.finditer(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?", answer):
        text = match.group(0).replace(",", "")
        decimals = len(text.split(".")[1]) if "." in text else 0
        if decimals < min_decimals:
            continue
        if abs(float(text) - round(wanted, decimals)) < 10 ** -(decimals + 3):
            return True
    return False


def _url_key(url: str) -> tuple[str, dict[str, list[str]]]:
    """A URL as a reader compares it: the site placeholder form, case and `%20`/spaces and a trailing slash
    set aside, the query as a dict."""
    parts = urlsplit(canonical_url(unquote(url).strip()))
    path = (parts.scheme + parts.netloc + parts.path).lower().rstrip("/ ")
    query = {
        k.lower(): [v.strip().lower() for v in vs]
        for k, vs in parse_qs(parts.query, keep_blank_values=True).items()
    }
    return path, query


def equivalent(value: str, answer: str) -> bool:
    """`value` (a reference string) is in the answer once format is set aside: the same number rounded to
    the answer's precision or written with separators or a unit, the same date, the same URL but for case,
    spaces or `%20`, or the same words."""
    value = value.strip()
    if not value:
        return False
    if value.lower().startswith(("http://", "https://", "__")):
        key = _url_key(value)
        return any(_url_key(token) == key for token in re.findall(r"(?:https?://|__)\S+", answer))
    wanted_date = as_date(value)  # before numbers: 1/1/2022 is a date, not three numbers
    if wanted_date is not None:
        return wanted_date in {as_date(m) for m in re.findall(r"[\w/.,-]+(?: \d{1,2},? \d{4})?", answer)}
    wanted_numbers = numbers_in(value)
    words = squash(re.sub(r"[-+]?[\d,]*\.?\d+", " ", value)).split()
    if wanted_numbers and all(w in _UNITS for w in words):
        return all(rounds_to(n, answer) for n in wanted_numbers)  # a number with at most a unit
    folded = squash(value)
    return bool(folded) and re.search(rf"\b{re.escape(folded)}\b", squash(answer)) is not None


def equivalent_values(facts: TaskFacts) -> Finding | None:
    """A string_match failed although every value it wanted is in the answer once format is set aside
    (rounding to the answer's precision, separators, units, dates, URL case and `%20`, the value wrapped in
    a phrase or command such as `git clone <url>`)."""
    failed = [ev for ev in facts.evaluators if ev.evaluator == "string_match" and ev.status == "failure"]
    ref = facts.original_reference
    wanted = [w for w in facts.reference_values if isinstance(w, str) and w.strip()]
    if not failed or not wanted or not facts.answer or not _real_answer(facts.answer):
        return None
    if ref.get("exact_match") and len(facts.answer) > 4 * len(ref["exact_match"]) + 40:
        return None  # an exact match wanted one value; a long answer holding it among others is not it
    if not all(equivalent(w, facts.answer) for w in wanted):
        return None
    return Finding(
        "evaluator_strict", "equivalent_values",
        f"The answer {quote(facts.answer, 50)} gives every value the check wanted "
        f"({', '.join(quote(w, 30) for w in wanted[:4])}) in another format.",
        with_witnesses(facts, check_evidence(facts, "string_match", "; ".join(wanted), facts.answer, verified_text(facts))),
    )  # fmt: skip


# --- a reference WebArena-Verified changed, which the agent's last page satisfies ----------------------


def _verified_urls(facts: TaskFacts) -> list[tuple[str, dict[str, list[str]]]]:
    """WebArena-Verified's page checks: the URL and query values of each network check that reads no
    posted data (a check of a form's submission cannot be told from the last page)."""
    out = []
    for evaluator in facts.verified_evaluators:
        expected = evaluator.get("expected") or {}
        if (
            evaluator.get("evaluator") == "NetworkEventEvaluator"
            and isinstance(expected.get("url"), str)
            and not expected.get("post_data")
        ):
            query = {
                k.lower(): [str(v).lower() for v in vs]
                for k, vs in (expected.get("query_params") or {}).items()
            }
            out.append((expected["url"], query))
    return out


def _query_satisfies(have: dict[str, list[str]], want: dict[str, list[str]]) -> bool:
    for key, values in want.items():
        got = have.get(key, [])
        for value in values:
            if not any(g == value or (as_date(g) is not None and as_date(g) == as_date(value)) for g in got):
                return False
    return True


def _original_check(facts: TaskFacts, evaluator: str) -> str:
    original = facts.original_reference.get("reference_url")
    if evaluator == "url_match" and original:
        return original
    return f"the original {evaluator} check ({_reference_text(facts)})"


def verified_url_reached(facts: TaskFacts) -> Finding | None:
    """The run was scored with the original reference and failed on its page check (`url_match`, or
    `program_html` reading the page's content); WebArena-Verified checks that task with a page check of
    its own, not the original's, and the page the agent ended on satisfies it (its path, and every query
    value it requires)."""
    failed = next(
        (
            ev.evaluator
            for ev in facts.evaluators
            if ev.evaluator in ("url_match", "program_html") and ev.status == "failure"
        ),
        None,
    )
    if facts.verdict_source == "webarena-verified" or failed is None or not facts.final_url:
        return None
    if any(
        ev.status == "failure" and ev.evaluator not in ("url_match", "program_html")
        for ev in facts.evaluators
    ):
        return None  # another check failed too: the page alone does not settle it
    original = facts.original_reference.get("reference_url") or ""
    final_path, final_query = _url_key(facts.final_url)
    for url, query in _verified_urls(facts):
        verified_path, _ = _url_key(url)
        same_as_original = failed == "url_match" and _url_key(original.split(" |OR| ")[0]) == _url_key(url)
        if same_as_original or final_path != verified_path or not _query_satisfies(final_query, query):
            continue
        reference = _original_check(facts, failed)
        return Finding(
            "evaluator_strict", "verified_url_reached",
            f"The agent ended on {quote(facts.final_url, 80)}, the page WebArena-Verified's check expects "
            f"({quote(url, 60)}); the run was scored with {quote(reference, 80)}.",
            with_witnesses(facts, check_evidence(facts, failed, reference, facts.final_url, url)),
        )  # fmt: skip
    return None


def _folded_url(url: str) -> str:
    """A URL with the differences a site ignores set aside: letter case, `%20` for a space, a trailing space,
    a slash ending the path (`/-/issues/?state=opened` is GitLab's `/-/issues?state=opened`)."""
    return re.sub(r"/+(?=\?|$)", "", unquote(canonical_url(url.strip())).lower().strip())


def url_differs_in_format(facts: TaskFacts) -> Finding | None:
    """The original `url_match` failed on the last page, but passes once letter case, `%20` and outer spaces
    are set aside (`/f/DIY/23/…` where `/f/diy` was asked: the site serves both), and no other check failed."""
    reference = facts.original_reference.get("reference_url")
    if facts.verdict_source == "webarena-verified" or not reference or not facts.final_url:
        return None
    failed = {ev.evaluator for ev in facts.evaluators if ev.status == "failure"}
    if failed != {"url_match"}:
        return None
    folded = " |OR| ".join(_folded_url(u) for u in reference.split(" |OR| "))
    if url_match(folded, _folded_url(facts.final_url)).status != "success":
        return None
    return Finding(
        "evaluator_strict", "url_differs_in_format",
        f"The agent ended on {quote(facts.final_url, 80)}, which is the page the check wanted "
        f"({quote(reference, 60)}) but for letter case or an encoded space.",
        with_witnesses(facts, check_evidence(facts, "url_match", reference, facts.final_url, verified_text(facts))),
    )  # fmt: skip


def expected_request_not_navigation(facts: TaskFacts) -> Finding | None:
    """WebArena-Verified's network check failed reading the last page navigation, but the trace holds the
    request the check wants, with its path and every query value (ignored parameters aside), as a request
    that was no navigation (the order grid's filtered reload, an XHR): the page the task asked for was
    shown; the engine read another event."""
    failed = next(
        (ev for ev in facts.evaluators if ev.evaluator == "NetworkEventEvaluator" and ev.status == "failure"),
        None,
    )
    if failed is None or not facts.requests:
        return None
    for url, query in _verified_urls(facts):
        path, _ = _url_key(url)
        match = next(
            (e for e in reversed(facts.requests) if _url_key(e.url)[0] == path and _query_satisfies(_url_key(e.url)[1], query)),
            None,
        )  # fmt: skip
        if match is None:
            continue
        return Finding(
            "evaluator_strict", "expected_request_not_navigation",
            f"The network check read the last page navigation, but request {match.seq} of the trace is the one "
            f"it wants ({quote(match.url, 80)}), sent as no navigation.",
            with_witnesses(
                facts,
                check_evidence(facts, "NetworkEventEvaluator", url, match.url, verified_text(facts)),
                Evidence("event", f"{match.method} {match.url}", seq=match.seq, status=match.status),
            ),
        )  # fmt: skip
    return None
