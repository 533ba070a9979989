"""One plain sentence per failing evaluator, for a reviewer to act on.

Pure functions over the engine's serialised results (expected/actual, normalised as the engine compared
them) and brief views of trace events. They never decide a status: the official engine does. Values
from the agent or the trace are untrusted: they are clipped and flattened to one line.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from rapidfuzz import fuzz

_CLIP = 60
_URL_CLIP = 70
_SENTENCE_CLIP = 600
_CONTROL = re.compile(r"[\x00-\x1f\x7f\s]+")


@dataclass(frozen=True)
class EventBrief:
    """A trace event as explanations show it: URL with site placeholders, e.g. `__GITLAB__/a/b`."""

    seq: int
    method: str
    url: str
    status: int | None


@dataclass(frozen=True)
class Candidate:
    """An event that passed the evaluator's method/path/referer filter, normalised by the engine."""

    seq: int
    normalized: dict
    matches: bool


@dataclass(frozen=True)
class NetworkExplanation:
    sentence: str
    nearest_seq: int | None


# -- formatting ---------------------------------------------------------------------------------------
def plain(value: Any) -> str:
    """A value as a reader writes it, never a Python repr: 8.0 is 8, a dict is `{month: May, count: 8}`,
    a list `[a, b]`, None `null`."""
    if isinstance(value, str):
        return value
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, dict):
        return "{" + ", ".join(f"{plain(k)}: {plain(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple | set | frozenset):
        return "[" + ", ".join(plain(v) for v in value) + "]"
    return str(value)


def clip(value: Any, limit: int = _CLIP) -> str:
    """A value on one line, at most `limit` characters: agent text and HTML never come out whole."""
    text = _CONTROL.sub(" ", plain(value)).strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


# Whitespace at either end of a quoted value is shown, not trimmed away: a reference with a trailing
# space fails a comparison that looks identical otherwise.
_EDGE_MARKS = {" ": "␠", "\t": "⇥", "\n": "↵", "\r": "↵", "\xa0": "⍽"}


def _edge(whitespace: str) -> str:
    marks = "".join(_EDGE_MARKS.get(c, "␠") for c in whitespace[:3])
    return marks + ("…" if len(whitespace) > 3 else "")


def quoted(value: Any, limit: int = _CLIP) -> str:
    """'value' on one line, clipped; spaces, tabs and line breaks at either end stay visible as ␠ ⇥ ↵."""
    text = plain(value)
    core = text.strip()
    lead, trail = text[: len(text) - len(text.lstrip())], text[len(text.rstrip()) :]
    return f"'{_edge(lead)}{clip(core, limit)}{_edge(trail)}'"


def difference_note(want: Any, got: Any) -> str:
    """': they differ only in a trailing space' (or spacing, or letter case) when two texts look alike but
    are not equal; '' otherwise. Said beside the two quoted values, so a reader sees why they differ."""
    if not isinstance(want, str) or not isinstance(got, str) or want == got:
        return ""
    if want.strip() == got.strip():
        return f": they differ only in {_edge_words(want, got)}"
    spaced_want, spaced_got = " ".join(want.split()), " ".join(got.split())
    if spaced_want == spaced_got:
        return ": they differ only in spacing"
    if want.casefold() == got.casefold():
        return ": they differ only in letter case"
    if spaced_want.casefold() == spaced_got.casefold():
        return ": they differ only in spacing and letter case"
    return ""


def _edge_words(want: str, got: str) -> str:
    def ends(text: str) -> tuple[str, str]:
        return text[: len(text) - len(text.lstrip())], text[len(text.rstrip()) :]

    (want_lead, want_trail), (got_lead, got_trail) = ends(want), ends(got)
    lead, trail = want_lead != got_lead, want_trail != got_trail
    if lead and trail:
        return "leading and trailing whitespace"
    a, b = (want_lead, got_lead) if lead else (want_trail, got_trail)
    kind = "space" if max(a, b, key=len) == " " else "whitespace"
    return f"{'a leading' if lead else 'a trailing'} {kind}"


_REPR_CALL = re.compile(r"\b[A-Z]\w*\((?:'([^'\n]*)'|\"([^\"\n]*)\"|(-?\d+(?:\.\d+)?))\)")
_REPR_KEY = re.compile(r"'(\w+)':")


def readable_message(text: Any) -> str:
    """An engine message without Python reprs: `Month('May')` is May, `Number(8.0)` 8, `{'count': 8}`
    `{count: 8}` (the engine's assertion messages print its value classes)."""

    def value(m: re.Match) -> str:
        if m.group(3) is not None:
            return plain(float(m.group(3))) if "." in m.group(3) else m.group(3)
        return m.group(1) if m.group(1) is not None else m.group(2)

    return _REPR_KEY.sub(r"\1:", _REPR_CALL.sub(value, plain(text)))


def short_url(url: str, limit: int = _URL_CLIP) -> str:
    """Keep the site placeholder/origin and the tail of the path: `__GITLAB__/…/issues/new`."""
    url = clip(url, 10_000)
    if len(url) <= limit:
        return url
    parts = urlsplit(url)
    head = f"{parts.scheme}://{parts.netloc}" if parts.netloc else url.split("/", 1)[0]
    tail = url[len(head) :]
    keep = limit - len(head) - 2
    return f"{head}/…{tail[-keep:]}" if keep > 10 else clip(url, limit)


def task_sentence(status: str, evaluator_sentences: list[str], error: str | None) -> str:
    """The task's one sentence: the failing evaluators' sentences joined, or why evaluation failed."""
    if status == "success":
        return "passed: every evaluator succeeded"
    parts = list(evaluator_sentences)
    if error and not parts:
        parts.append(f"evaluation error: {clip(error, 200)}")
    if not parts:
        parts.append(f"{status} without a reported reason")
    return clip("; ".join(parts), _SENTENCE_CLIP)


def fallback(er: dict, exc: Exception | None = None) -> str | None:
    """When a detailed explanation is impossible: the engine's own first message, clipped."""
    if er.get("status") == "success":
        return None
    if er.get("error_msg"):
        return f"{er.get('evaluator_name', 'evaluator')} error: {clip(er['error_msg'], 200)}"
    for assertion in er.get("assertions") or ():
        msgs = assertion.get("assertion_msgs") or ()
        shown = readable_message(msgs[0]) if msgs else assertion.get("status")
        return f"{assertion.get('assertion_name')}: {clip(shown, 200)}"
    return f"{er.get('evaluator_name', 'evaluator')} failed"


# -- agent response -------------------------------------------------------------------------------------
def explain_evaluator(er: dict) -> str | None:
    """Sentence for a failed or errored non-network evaluator result (serialised `EvaluatorResult`)."""
    if er.get("status") == "success":
        return None
    if er.get("status") == "error" or er.get("evaluator_name") != "AgentResponseEvaluator":
        return fallback(er)
    return explain_agent_response(
        er.get("expected"), er.get("actual_normalized"), er.get("actual")
    ) or fallback(er)


def _upper(value: Any) -> str:
    return clip(value).upper() if isinstance(value, str) else clip(value)


def explain_agent_response(expected: Any, actual: Any, actual_raw: Any = None) -> str | None:
    """Compare the normalised expected and actual responses field by field."""
    if not isinstance(expected, dict):
        return None
    if actual is None:
        if actual_raw is None or (isinstance(actual_raw, str) and not actual_raw.strip()):
            return "no agent response"
        return f"agent response is not a JSON object with task_type and status: {quoted(actual_raw)}"
    if not isinstance(actual, dict):
        return f"agent response is not a JSON object with task_type and status: {quoted(actual)}"
    parts = []
    for field in ("status", "task_type"):
        want, got = expected.get(field), actual.get(field)
        if want is not None and want != got:
            said = "nothing" if got is None else _upper(got)
            parts.append(f"{field}: expected {_upper(want)}, agent said {said}")
    data = explain_retrieved_data(expected.get("retrieved_data"), actual.get("retrieved_data"))
    if data:
        parts.append(data)
    return "; ".join(parts) or None


def _as_list(value: Any) -> list:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _key(value: Any) -> str:
    return repr(value) if not isinstance(value, str) else value


def explain_retrieved_data(expected: Any, actual: Any) -> str | None:
    """`retrieved_data: missing 'X', unexpected 'Y'`; an expected item that is a list holds alternatives."""
    want, got = _as_list(expected), _as_list(actual)
    if not want and not got:
        return None
    if not got:
        shown = ", ".join(quoted(_first_alternative(v)) for v in want[:3]) + (" …" if len(want) > 3 else "")
        return f"retrieved_data: expected {shown}, agent gave none"
    if not want:
        return f"retrieved_data: expected none, agent gave {quoted(got)}"
    remaining = Counter(_key(v) for v in got)
    missing = []
    for item in want:
        options = item if isinstance(item, list) else [item]
        hit = next((_key(o) for o in [item, *options] if remaining[_key(o)] > 0), None)
        if hit is None:
            missing.append(_first_alternative(item))
        else:
            remaining[hit] -= 1
    unexpected = []
    for value in got:  # what is left after the expected items took their matches
        if remaining[_key(value)] > 0:
            remaining[_key(value)] -= 1
            unexpected.append(value)
    parts = []
    if missing:
        parts.append(
            "missing " + ", ".join(quoted(v) for v in missing[:3]) + (" …" if len(missing) > 3 else "")
        )
    if unexpected:
        parts.append(
            "unexpected "
            + ", ".join(quoted(v) for v in unexpected[:3])
            + (" …" if len(unexpected) > 3 else "")
        )
    if not parts:
        return None
    return "retrieved_data: " + ", ".join(parts)


def _first_alternative(item: Any) -> Any:
    return item[0] if isinstance(item, list) and item else item


# -- network events ----------------------------------------------------------------------------------------
def _url_text(url: Any) -> str:
    """A normalised URL (`{base_url, query_params}`), or a plain string, as one string."""
    if isinstance(url, dict):
        base = str(url.get("base_url", ""))
        query = url.get("query_params") or {}
        if query:
            pairs = "&".join(f"{k}={v}" for k, vs in sorted(query.items()) for v in _as_list(vs))
            return f"{base}?{pairs}"
        return base
    return str(url)


def _alternatives(value: Any) -> list:
    return list(value) if isinstance(value, list) else [value]


def _base(url: str) -> str:
    return url.split("?", 1)[0].split("#", 1)[0].rstrip("/").lower()


def nearest_event(method: str | None, url: str, events: list[EventBrief]) -> EventBrief | None:
    """Same method and path first, then same path, then same method, then the most similar URL."""
    if not events:
        return None
    want_base = _base(url)
    want_method = (method or "").upper()

    def rank(e: EventBrief) -> tuple:
        same_path = _base(e.url) == want_base
        same_method = not want_method or e.method == want_method
        return (same_path and same_method, same_path, same_method, fuzz.ratio(e.url, url), e.seq)

    return max(events, key=rank)


def _describe(e: EventBrief) -> str:
    status = f"status {e.status}" if e.status is not None else "no status"
    return f"{e.method} {short_url(e.url)} ({status})"


def explain_network(
    *,
    expected: dict,
    candidates: list[Candidate],
    events: list[EventBrief],
    should_not_exist: bool = False,
    navigate_last: bool = False,
) -> NetworkExplanation:
    """Why a network evaluator failed, naming the event it looked at or the nearest one."""
    urls = [_url_text(u) for u in _alternatives(expected.get("url"))]
    want_url = urls[0] if urls else ""
    method = expected.get("http_method")
    method_text = str(method).upper() if method else "request"
    if should_not_exist:
        seq = candidates[0].seq if candidates else None
        found = next((e for e in events if e.seq == seq), None)
        shown = _describe(found) if found else f"{method_text} {short_url(want_url)}"
        return NetworkExplanation(f"unexpected {shown}: this request must not happen", seq)
    if navigate_last:
        return _explain_last_navigation(expected, urls, candidates, events)
    if not candidates:
        near = nearest_event(method, want_url, events)
        head = f"no {method_text} to {short_url(want_url)}"
        if near is None:
            return NetworkExplanation(f"{head}; the trace has no page or API requests", None)
        detail = _describe(near)
        want_status = _alternatives(expected.get("response_status"))[0]
        if want_status is not None and near.status != want_status:
            detail = detail[:-1] + f", expected {want_status})"
        return NetworkExplanation(f"{head}; nearest: {detail}", near.seq)
    best, diffs = _closest_candidate(expected, candidates)
    head = f"{method_text} {short_url(_url_text(best.normalized.get('url')))} (event {best.seq})"
    return NetworkExplanation(f"{head}: " + "; ".join(diffs[:3]), best.seq)


def _explain_last_navigation(
    expected: dict, urls: list[str], candidates: list[Candidate], events: list[EventBrief]
) -> NetworkExplanation:
    shown = " or ".join(short_url(u) for u in urls[:2])
    if not candidates:
        near = nearest_event("GET", urls[0] if urls else "", events)
        tail = f"; nearest: {_describe(near)}" if near else ""
        return NetworkExplanation(
            f"no page navigation in the trace, expected {shown}{tail}", near.seq if near else None
        )
    last = candidates[-1]
    got = _url_text(last.normalized.get("url"))
    if _base(got) not in {_base(u) for u in urls}:
        return NetworkExplanation(f"last navigation was {short_url(got)}, expected {shown}", last.seq)
    _, diffs = _closest_candidate(expected, [last])
    return NetworkExplanation(
        f"last navigation {short_url(got)} (event {last.seq}): " + "; ".join(diffs[:3]), last.seq
    )


def _closest_candidate(expected: dict, candidates: list[Candidate]) -> tuple[Candidate, list[str]]:
    scored = [(c, field_differences(expected, c.normalized)) for c in candidates]
    # Fewest differences wins; among equals the latest event (agents retry).
    best, diffs = min(scored, key=lambda cd: (len(cd[1]) or 99, -cd[0].seq))
    return best, diffs or ["the engine found no exact match (difference not located)"]


def field_differences(expected: dict, actual: dict) -> list[str]:
    """Human-readable differences between a normalised expected event and one actual event."""
    diffs: list[str] = []
    want_urls = _alternatives(expected.get("url"))
    got_url = actual.get("url")
    if want_urls and want_urls[0] is not None:
        diffs.extend(_url_differences(want_urls, got_url))
    for field, label in (("http_method", "method"), ("response_status", "status")):
        want = expected.get(field)
        if want is None:
            continue
        got = actual.get(field)
        options = _alternatives(want)
        if not any(_same(o, got) for o in options):
            diffs.append(f"{label}: expected {clip(options[0])}, got {clip(got)}")
    for field in ("headers", "post_data", "response_content", "response_cookies"):
        want = expected.get(field)
        if not isinstance(want, dict):
            continue
        got = actual.get(field) if isinstance(actual.get(field), dict) else {}
        for name, want_value in want.items():
            got_value = got.get(name)
            options = _alternatives(want_value) if not isinstance(want_value, dict) else [want_value]
            if not any(_same(o, got_value) for o in options):
                label = "referer" if field == "headers" and name.lower() == "referer" else f"{field} {name}"
                shown_want = _url_text(options[0]) if isinstance(options[0], dict) else options[0]
                shown_got = "none" if got_value is None else quoted(_url_text(got_value))
                diffs.append(f"{label}: expected {quoted(shown_want)}, got {shown_got}")
    return diffs


def _same(want: Any, got: Any) -> bool:
    if isinstance(want, str) and isinstance(got, str):
        return want.strip().lower() == got.strip().lower()
    if isinstance(want, (int, float)) and isinstance(got, (int, float, str)):
        return str(got).strip() == str(want) or str(got).strip() == str(int(want))
    return want == got


def _url_differences(want_urls: list, got_url: Any) -> list[str]:
    """Path first; if some alternative's path matches, its query parameters one by one."""
    got_base = _base(_url_text(got_url))
    same_path = [u for u in want_urls if _base(_url_text(u)) == got_base]
    if not same_path:
        return [f"url: expected {short_url(_url_text(want_urls[0]))}, got {short_url(_url_text(got_url))}"]
    got_query = (got_url.get("query_params") if isinstance(got_url, dict) else None) or {}
    best: list[str] | None = None
    for want in same_path:
        want_query = (want.get("query_params") if isinstance(want, dict) else None) or {}
        diffs = []
        for name in sorted(set(want_query) | set(got_query)):
            w, g = _as_list(want_query.get(name)), _as_list(got_query.get(name))
            if sorted(map(str, w)) == sorted(map(str, g)):
                continue
            if not w:
                diffs.append(f"query param {name}: unexpected {quoted(', '.join(map(str, g)))}")
            elif not g:
                diffs.append(f"query param {name}: expected {quoted(', '.join(map(str, w)))}, got none")
            else:
                diffs.append(
                    f"query param {name}: expected {quoted(', '.join(map(str, w)))}, got {quoted(', '.join(map(str, g)))}"
                )
        if best is None or len(diffs) < len(best):
            best = diffs
    return best or []
