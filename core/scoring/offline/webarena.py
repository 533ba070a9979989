"""WebArena's own evaluators, re-run offline on what a run recorded (pure functions).

Semantics follow `evaluation_harness/evaluators.py` of web-arena-x/webarena (OpAgent's port,
`opagent/evaluation_harness/asyns_evaluators.py`, has the same string and URL rules):
- `string_match` over `eval.reference_answers`, in the config's key order, scores multiply:
  `exact_match` (cleaned answer == cleaned reference; cleaning strips whitespace and one pair of outer
  quotes and lower-cases), `must_include` (each reference a substring of the cleaned answer; when the
  list has one reference of one character, it must be a word token of the answer, so '0' is not found
  in '10'), `fuzzy_match` (an LLM judges each reference: unresolved offline) and the N/A rule
  (`fuzzy_match: "N/A"`: the answer must be exactly N/A, else an LLM compares the agent's reason with
  `string_note` and its verdict *replaces* the score so far);
- `url_match`: the last page URL, trailing `/` removed, against `reference_url` (alternatives joined
  by ` |OR| `) under `url_note` "GOLD in PRED" (the default): some reference `host+path` is a substring
  of the page's `host+path`, and for every query key of the references one of their values is among the
  page's values; hosts are compared in placeholder form (core.scoring.offline.urls);
- `program_html`: reads the live site after the run (a JS locator or an API helper on a page): never
  decidable offline; its sentence says what it checks and where.
A result is `success`, `failure` or `unresolved` (with the reason: `needs_llm`, `needs_live_site`,
`no_last_url`); a product with a decided 0 is a failure whatever the unresolved factors.

Two offline decisions beyond the harness, both what its LLM judge answers for an empty answer: a
fuzzy or N/A reference against no answer at all is a failure, not unresolved.
"""

from __future__ import annotations

import collections
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlparse

from core.scoring.explanations import clip, difference_note, quoted, short_url
from core.scoring.offline.urls import canonical_url

OR = " |OR| "

# A fuzzy question for an LLM: (kind, reference, answer, intent); kind fuzzy_match | ua_match.
FuzzyQuestion = tuple[str, str, str, str]
FuzzyAnswer = Callable[[FuzzyQuestion], bool | None]


def _never(_: FuzzyQuestion) -> None:
    return None


@dataclass
class Outcome:
    """One evaluator's offline result (an `evaluator_results` row without run/task)."""

    evaluator: str
    status: str  # success | failure | unresolved | error
    explanation: str | None = None  # for failure, unresolved, error
    passed: str | None = None  # what it checked and found, for a task whose run says it failed
    unresolved_reason: str | None = None
    assertions: list[dict[str, Any]] = field(default_factory=list)
    expected: Any = None
    actual: Any = None
    expected_normalized: Any = None
    actual_normalized: Any = None
    error: str | None = None

    @property
    def score(self) -> float | None:
        return {"success": 1.0, "failure": 0.0}.get(self.status)


# -- string_match -----------------------------------------------------------------------------------
def clean_answer(answer: str) -> str:
    answer = answer.strip()
    if answer.startswith("'") and answer.endswith("'") or answer.startswith('"') and answer.endswith('"'):
        answer = answer[1:-1]
    return answer.lower()


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def word_tokens(text: str) -> list[str]:
    """NLTK's `word_tokenize`: the Treebank tokenizer per sentence. Sentences are split after `.`, `!`
    or `?` and a space (an approximation of the Punkt model, which cannot be downloaded here; it only
    decides where a sentence-final period is split off).

    nltk is imported here, not at module level: importing it takes seconds (it pulls in scipy), and
    every run import loads this module while only runs without traces ever tokenize."""
    from nltk.tokenize import word_tokenize

    return [
        tok for sentence in _SENTENCE_END.split(text) for tok in word_tokenize(sentence, preserve_line=True)
    ]


def exact_match(ref: str, pred: str) -> bool:
    return clean_answer(pred) == clean_answer(ref)


def must_include(ref: str, pred: str, tokenize: bool = False) -> bool:
    clean_ref, clean_pred = clean_answer(ref), clean_answer(pred)
    if tokenize and len(clean_ref) == 1 and len(word_tokens(clean_ref)) == 1:
        return clean_ref in word_tokens(clean_pred)
    return clean_ref in clean_pred


def _multiply(score: float | None, factor: bool | None) -> float | None:
    """Product over {0, 1, unknown}: 0 wins over unknown."""
    if score == 0.0 or factor is False:
        return 0.0
    if score is None or factor is None:
        return None
    return 1.0


def _answered(pred: str, raw: str | None) -> str:
    return "the agent gave no answer" if not pred.strip() else f"the agent answered {quoted(raw or pred)}"


def _shown(values: Sequence[Any]) -> str:
    items = [quoted(v, 40) for v in values[:3]]
    return ", ".join(items) + (f" and {len(values) - 3} more" if len(values) > 3 else "")


def string_match(
    reference_answers: Any, answer: str | None, *, intent: str = "", string_note: str = "",
    fuzzy: FuzzyAnswer = _never,
) -> Outcome:  # fmt: skip
    """The harness's StringEvaluator on the recorded final answer (None: no answer, scored as '')."""
    raw = answer or ""
    pred = clean_answer(raw)
    out = Outcome("string_match", "unresolved", expected=reference_answers, actual=answer)
    out.actual_normalized = pred
    if not isinstance(reference_answers, dict) or not reference_answers:
        out.status, out.error = "error", "the task config has no reference_answers for string_match"
        out.explanation = "string_match has no reference answers in the task config: cannot be evaluated"
        return out
    score: float | None = 1.0
    failed: list[str] = []
    found: list[str] = []
    unresolved: list[str] = []
    normalized: dict[str, Any] = {}
    for approach, value in reference_answers.items():
        if approach == "exact_match":
            ok = exact_match(str(value), pred)
            normalized[approach] = clean_answer(str(value))
            out.assertions.append(
                {"assertion_name": "exact_match", "status": _status(ok), "assertion_msgs": [str(value)]}
            )
            (found if ok else failed).append(f"must be exactly {quoted(value)}")
            score = _multiply(score, ok)
        elif approach == "must_include":
            values = value if isinstance(value, list) else [value]
            normalized[approach] = [clean_answer(str(v)) for v in values]
            missing = []
            for v in values:
                ok = must_include(str(v), pred, tokenize=len(values) == 1)
                out.assertions.append(
                    {"assertion_name": "must_include", "status": _status(ok), "assertion_msgs": [str(v)]}
                )
                score = _multiply(score, ok)
                if not ok:
                    missing.append(v)
            if missing:
                failed.append(f"must include {_shown(missing)}")
            else:
                found.append(f"includes {_shown(values)}")
        elif approach == "fuzzy_match" and value == "N/A":
            normalized[approach] = "n/a"
            ok = exact_match("N/A", pred)
            score = _multiply(score, ok)
            if score == 1.0:
                found.append("answers N/A")
                out.assertions.append(
                    {"assertion_name": "na_exact", "status": "success", "assertion_msgs": ["N/A"]}
                )
                continue
            # The harness replaces the score so far by the LLM's verdict on the agent's reason.
            verdict = False if not pred.strip() else fuzzy(("ua_match", string_note or "", pred, intent))
            out.assertions.append(
                {
                    "assertion_name": "ua_match",
                    "status": _status(verdict),
                    "assertion_msgs": [string_note or ""],
                }
            )
            note = f" ({clip(string_note, 80)})" if string_note else ""
            score = None if verdict is None else float(verdict)
            failed.clear()
            found.clear()
            if verdict is None:
                unresolved.append(
                    f"expected N/A: the task cannot be done{note}; {_answered(pred, answer)}: whether that gives "
                    "the same reason needs an LLM (WebArena's ua_match), unresolved offline"
                )
            elif verdict:
                found.append(f"reports the task as not achievable for the expected reason{note}")
            else:
                failed.append(f"expected N/A: the task cannot be done{note}")
        elif approach == "fuzzy_match":
            values = value if isinstance(value, list) else [value]
            normalized[approach] = [str(v) for v in values]
            for v in values:
                verdict = False if not pred.strip() else fuzzy(("fuzzy_match", str(v), pred, intent))
                out.assertions.append(
                    {"assertion_name": "fuzzy_match", "status": _status(verdict), "assertion_msgs": [str(v)]}
                )
                score = _multiply(score, verdict)
                if verdict is None:
                    unresolved.append(
                        f"must match {quoted(v)} in meaning: needs an LLM judge (fuzzy_match), unresolved offline"
                    )
                elif verdict:
                    found.append(f"matches {quoted(v)} in meaning")
                else:
                    failed.append(f"must match {quoted(v)} in meaning")
        else:
            out.status, out.error = "error", f"unknown reference_answers approach {approach!r}"
            out.explanation = f"string_match: unknown approach {clip(approach, 40)} in the task config"
            return out
    out.expected_normalized = normalized
    if score == 0.0:
        out.status = "failure"
        out.explanation = "; ".join(failed or ["string_match failed"]) + f"; {_answered(pred, answer)}"
    elif score == 1.0:
        out.status = "success"
        out.passed = f"the answer {quoted(raw or pred)} " + " and ".join(found)
    else:
        out.status, out.unresolved_reason = "unresolved", "needs_llm"
        out.explanation = "; ".join(unresolved + failed)
        if "answered" not in out.explanation and "no answer" not in out.explanation:
            out.explanation += f"; {_answered(pred, answer)}"
    return out


def _status(verdict: bool | None) -> str:
    return {True: "success", False: "failure", None: "unresolved"}[verdict]


# -- url_match --------------------------------------------------------------------------------------
def _clean_url(url: str) -> str:
    return canonical_url(str(url)).rstrip("/")


def _parse_url(url: str) -> tuple[str, dict[str, list[str]]]:
    parsed = urlparse(url)
    return parsed.netloc + parsed.path, parse_qs(parsed.query)


def url_match(reference_url: Any, last_url: str | None, url_note: str | None = None) -> Outcome:
    """The harness's URLEvaluator on the last page URL (None: the run did not record it)."""
    out = Outcome("url_match", "unresolved", expected=reference_url, actual=last_url)
    if not isinstance(reference_url, str) or not reference_url.strip():
        out.status, out.error = "error", "the task config has no reference_url for url_match"
        out.explanation = "url_match has no reference URL in the task config: cannot be evaluated"
        return out
    refs = [_clean_url(u) for u in reference_url.split(OR)]
    out.expected_normalized = refs
    shown = " or ".join(short_url(r) for r in refs[:2])
    rule = url_note or "GOLD in PRED"
    if rule != "GOLD in PRED":
        out.status, out.error = "error", f"unknown url_note {rule!r}"
        out.explanation = f"url_match: unknown matching rule {clip(rule, 40)}"
        return out
    if not last_url:
        out.unresolved_reason = "no_last_url"
        out.explanation = (
            f"checks the last page's URL (expected {shown}); the run did not record the page the agent "
            "ended on, so it cannot be re-checked offline"
        )
        return out
    pred = _clean_url(last_url)
    out.actual_normalized = pred
    ref_bases, ref_queries = [], collections.defaultdict(set)
    for ref in refs:
        base, query = _parse_url(ref)
        ref_bases.append(base)
        for key, values in query.items():
            ref_queries[key].update(values)
    pred_base, pred_query = _parse_url(pred)
    base_ok = any(ref in pred_base for ref in ref_bases)
    out.assertions.append(
        {"assertion_name": "base_path", "status": _status(base_ok), "assertion_msgs": ref_bases}
    )
    missing = []
    for key, values in sorted(ref_queries.items()):
        ok = any(v in pred_query.get(key, []) for v in values)
        out.assertions.append(
            {"assertion_name": f"query {key}", "status": _status(ok), "assertion_msgs": sorted(values)}
        )
        if not ok:
            got = pred_query.get(key, [])
            shown_got = " or ".join(quoted(g, 40) for g in got) or "none"
            note = next((n for v in values for g in got if (n := difference_note(v, g))), "")
            missing.append(
                f"{key}={' or '.join(quoted(v, 40) for v in sorted(values))} (page has {shown_got}{note})"
            )
    if base_ok and not missing:
        out.status, out.passed = "success", f"the last page {short_url(pred)} matches {shown}"
        return out
    out.status = "failure"
    if not base_ok:
        out.explanation = f"the last page was {short_url(pred)}, expected {shown}"
    else:
        out.explanation = f"the last page {short_url(pred)} lacks the query " + "; ".join(missing[:3])
    return out


# -- program_html -----------------------------------------------------------------------------------
_HELPERS = {
    "shopping_get_latest_order_url": "the latest order's page",
    "shopping_get_sku_latest_review_author": "the product's latest review author",
    "shopping_get_sku_latest_review_rating": "the product's latest review rating",
    "reddit_get_post_url": "the post's page",
    "gitlab_get_project_memeber_role": "the member's role in the GitLab project",
}
_SELECTOR = re.compile(r"querySelector(?:All)?\((['\"])(.*?)\1\)")


def _page(url: Any) -> str:
    if not isinstance(url, str) or url == "last":
        return "the agent's last page"
    if url.startswith("func:"):
        name = next((label for helper, label in _HELPERS.items() if helper in url), None)
        return name or "a page computed after the run"
    return short_url(canonical_url(url))


def _locator(locator: Any) -> str:
    if not isinstance(locator, str) or not locator.strip():
        return ""
    if locator.startswith("func:"):
        name = next((label for helper, label in _HELPERS.items() if helper in locator), None)
        return f" ({name or 'a helper reading the site'})"
    selector = _SELECTOR.search(locator)
    return f" (element {clip(selector.group(2), 50)})" if selector else " (a script on the page)"


def _requirement(required: Any) -> str:
    if not isinstance(required, dict):
        return "show the expected content"
    if "exact_match" in required:
        return f"show exactly {quoted(required['exact_match'], 50)}"
    if "must_include" in required:
        values = (
            required["must_include"]
            if isinstance(required["must_include"], list)
            else [required["must_include"]]
        )
        return "include " + _shown([str(v).split(OR)[0] for v in values])
    if "must_exclude" in required:
        return "not include " + _shown(list(required["must_exclude"]))
    return "show " + clip(", ".join(map(str, required)), 50)


def program_html(targets: Any) -> Outcome:
    """What the live-site check reads, in one sentence: never decidable offline."""
    out = Outcome("program_html", "unresolved", expected=targets, unresolved_reason="needs_live_site")
    checks = [t for t in targets if isinstance(t, dict)] if isinstance(targets, list) else []
    parts = [
        f"{_page(t.get('url'))}{_locator(t.get('locator'))} must {_requirement(t.get('required_contents'))}"
        for t in checks[:2]
    ]
    more = f" (and {len(checks) - 2} more checks)" if len(checks) > 2 else ""
    head = "; ".join(parts) + more if parts else "the site's state after the run"
    out.explanation = f"checked on the live site: {head}; cannot be re-checked offline"
    out.assertions = [
        {"assertion_name": "program_html", "status": "unresolved", "assertion_msgs": [p]} for p in parts
    ]
    return out


# -- a whole task -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class TaskRecord:
    """What the evaluators read of one task's answer attempt."""

    eval_config: dict[str, Any]
    intent: str
    answer: str | None
    last_url: str | None


def evaluate_task(task: TaskRecord, fuzzy: FuzzyAnswer = _never) -> list[Outcome]:
    """One outcome per entry of `eval_types`, in order (unknown types are errors)."""
    config = task.eval_config
    outcomes = []
    types = config.get("eval_types") or []
    for eval_type in types if isinstance(types, list) else [types]:
        if eval_type == "string_match":
            outcomes.append(
                string_match(config.get("reference_answers"), task.answer, intent=task.intent,
                             string_note=str(config.get("string_note") or ""), fuzzy=fuzzy)
            )  # fmt: skip
        elif eval_type == "url_match":
            outcomes.append(url_match(config.get("reference_url"), task.last_url, config.get("url_note")))
        elif eval_type == "program_html":
            outcomes.append(program_html(config.get("program_html")))
        else:
            outcomes.append(Outcome(str(eval_type), "error", explanation=f"unknown evaluator {clip(eval_type, 40)}",
                                    error=f"eval_type {eval_type!r} is not supported"))  # fmt: skip
    return outcomes


def combined_status(outcomes: Sequence[Outcome]) -> str:
    """The task's offline status: the evaluators' scores multiply (a decided failure wins)."""
    statuses = [o.status for o in outcomes]
    if not statuses:
        return "unresolved"
    if "failure" in statuses:
        return "failure"
    if all(s == "success" for s in statuses):
        return "success"
    return "unresolved"


def fuzzy_questions(task: TaskRecord) -> list[FuzzyQuestion]:
    """The LLM questions string_match would ask for this task (to batch them through a judge)."""
    asked: list[FuzzyQuestion] = []

    def record(question: FuzzyQuestion) -> None:
        asked.append(question)

    evaluate_task(task, fuzzy=lambda q: record(q))
    return asked
