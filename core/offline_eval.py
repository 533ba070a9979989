"""WebArena's original evaluators, run offline on what a run recorded — a sentence for every failure.

For runs without network traces (render, AgentLab, JSONL, OpAgent) the verdict is the run's own
PASS/FAIL, reward or score. This module re-checks what the task's original evaluators can decide from
the agent's answer and its last page URL, with the semantics of WebArena's
`evaluation_harness/evaluators.py`:

- `string_match`: `exact_match` and `must_include` after `clean_answer` (strip, drop one pair of
  surrounding quotes, lower-case), a reference written `a |OR| b` accepting either (the harness's
  `ref_or_values`); a single one-character `must_include` value is matched against the answer's tokens,
  not as a substring (the harness's guard against "0" matching "10");
  `fuzzy_match` needs an LLM judge (unresolved offline, and the sentence says so), except that an empty
  answer fails it; the N/A rule (`fuzzy_match: "N/A"`): an answer of exactly "N/A" passes, anything
  else needs the LLM's "unachievable" check.
- `url_match`: the last page URL against the reference URLs (`|OR|`), base path (host + path, trailing
  slash dropped) contained in the agent's, and every reference query value present; site placeholders
  (`__SHOPPING__`) are mapped from the WebArena ports or from the task's start page.
- `program_html`: needs the live site; the sentence says what it checks and where.

The config is the one the run recorded (a render's header, OpAgent's file) when there is one, else the
original task config. Results never overwrite the run's verdict: they go to `evaluator_results`
(`source` says offline and which config) and, where every evaluator was decidable and the result
differs from the run's verdict, `evaluations.verdict_disagrees` flags the task. See
docs/offline-evaluation.md for the agreement on the real runs and why they disagree.
"""

from __future__ import annotations

import re
import urllib.parse
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import orjson

from core.action_grammar import is_na_answer
from core.explanations import clip, quoted

SOURCE_RECORDED = "offline-recorded-config"
SOURCE_ORIGINAL = "offline-original-config"
OFFLINE_SOURCES = (SOURCE_RECORDED, SOURCE_ORIGINAL)
# WebArena's docker ports -> the placeholders the original configs use.
PORT_PLACEHOLDERS = {
    7770: "__SHOPPING__", 7780: "__SHOPPING_ADMIN__", 8023: "__GITLAB__", 9999: "__REDDIT__", 3000: "__MAP__",
    8888: "__WIKIPEDIA__", 4399: "__HOMEPAGE__",
}  # fmt: skip
SITE_PLACEHOLDERS = {
    "shopping": "__SHOPPING__", "shopping_admin": "__SHOPPING_ADMIN__", "gitlab": "__GITLAB__",
    "reddit": "__REDDIT__", "map": "__MAP__", "wikipedia": "__WIKIPEDIA__",
}  # fmt: skip
_PLACEHOLDER = re.compile(r"^__[A-Z_]+__")
_TOKEN = re.compile(r"\d+(?:[.,:/]\d+)*|\w+|[^\w\s]")


@dataclass(frozen=True)
class TaskInput:
    """What the offline evaluators see of one task's answer attempt."""

    task_id: int
    config: dict[str, Any]  # a WebArena task config: {"intent", "eval": {...}, "sites", "start_url"}
    config_source: str  # SOURCE_RECORDED | SOURCE_ORIGINAL
    answer: str | None  # the final answer; None when the agent never answered
    last_url: str | None  # the page of the last step
    first_url: str | None  # the page of the first step (maps a bare host to the task's site)
    answer_only: bool = False  # the attempt recorded only its answer: its pages are unknown


@dataclass
class EvaluatorOutcome:
    evaluator: str  # string_match | url_match | program_html
    status: str  # success | failure | unresolved
    expected: Any
    actual: Any
    explanation: str | None = None  # one sentence when the status is not success
    needs: str | None = None  # what would decide an unresolved check: 'an LLM judge' | 'the live site'


@dataclass
class TaskOutcome:
    task_id: int
    config_source: str
    evaluators: list[EvaluatorOutcome] = field(default_factory=list)

    @property
    def status(self) -> str:
        statuses = {e.status for e in self.evaluators}
        if "failure" in statuses:
            return "failure"
        if statuses == {"success"}:
            return "success"
        return "unresolved"

    @property
    def decidable(self) -> bool:
        return bool(self.evaluators) and all(e.status != "unresolved" for e in self.evaluators)

    def sentence(self) -> str | None:
        """The failing (then the undecided) evaluators' sentences, joined: one sentence for the task."""
        failing = [e.explanation for e in self.evaluators if e.status == "failure" and e.explanation]
        open_ = [e.explanation for e in self.evaluators if e.status == "unresolved" and e.explanation]
        parts = failing or open_
        return "; ".join(parts) if parts else None


# -- string_match ---------------------------------------------------------------------------------
def clean_answer(answer: str) -> str:
    """WebArena's StringEvaluator.clean_answer."""
    answer = answer.strip()
    if len(answer) >= 2 and answer[0] == answer[-1] and answer[0] in "'\"":
        answer = answer[1:-1]
    return answer.lower()


def tokens(text: str) -> list[str]:
    """Word tokens as the harness's word_tokenize yields them for the cases it guards (numbers stay
    whole: '10' is not '0'; punctuation splits off)."""
    return _TOKEN.findall(text)


def alternatives(ref: str) -> list[str]:
    """`'65 |OR| 3'` -> ['65', '3']: the harness's `ref_or_values` (the original dataset writes some
    string references this way)."""
    return ref.split(" |OR| ")


def exact_match(ref: str, pred: str) -> bool:
    return any(clean_answer(pred) == clean_answer(r) for r in alternatives(ref))


def must_include(ref: str, pred: str, tokenize: bool = False) -> bool:
    clean_pred = clean_answer(pred)
    for alternative in alternatives(ref):
        clean_ref = clean_answer(alternative)
        if tokenize and len(clean_ref) == 1 and len(tokens(clean_ref)) == 1:
            if clean_ref in tokens(clean_pred):
                return True
        elif clean_ref in clean_pred:
            return True
    return False


def _answered(answer: str | None) -> str:
    return (
        f"the agent answered {quoted(answer, 80)}"
        if answer and answer.strip()
        else "the agent gave no answer"
    )


def string_match(config: dict[str, Any], answer: str | None) -> EvaluatorOutcome:
    ev = config.get("eval") or {}
    references = ev.get("reference_answers") or {}
    pred = clean_answer(answer or "")
    failures: list[str] = []
    open_: list[str] = []
    for approach, value in references.items():
        if approach == "exact_match":
            if not exact_match(str(value), pred):
                failures.append(f"exact match {quoted(value, 80)}")
        elif approach == "must_include":
            values = value if isinstance(value, list) else [value]
            missing = [v for v in values if not must_include(str(v), pred, tokenize=len(values) == 1)]
            if missing:
                failures.append("must include " + ", ".join(quoted(v, 60) for v in missing))
        elif approach == "fuzzy_match":
            if value == "N/A":
                if not exact_match("N/A", pred):
                    note = ev.get("string_note") or ""
                    reason = f" ({clip(note, 80)})" if note else ""
                    open_.append(
                        f"the task is unachievable{reason}: the answer should say so; whether it does needs an LLM judge"
                        if not is_na_answer(answer)
                        else "the answer says N/A; whether it gives the reason needs an LLM judge"
                    )
            else:
                values = value if isinstance(value, list) else [value]
                if not pred:
                    failures.append("fuzzy match " + ", ".join(quoted(v, 40) for v in values[:3]))
                else:
                    shown = ", ".join(quoted(v, 40) for v in values[:3]) + (" …" if len(values) > 3 else "")
                    open_.append(f"fuzzy match {shown} needs an LLM judge, not re-checked offline")
    actual = answer
    if failures:
        return EvaluatorOutcome("string_match", "failure", references, actual,
                                f"{'; '.join(failures)}; {_answered(answer)}")  # fmt: skip
    if open_:
        return EvaluatorOutcome("string_match", "unresolved", references, actual,
                                f"{'; '.join(open_)}; {_answered(answer)}", needs="an LLM judge")  # fmt: skip
    return EvaluatorOutcome("string_match", "success", references, actual)


# -- url_match ------------------------------------------------------------------------------------
def _origin(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" if parts.netloc else ""


def placeholder_url(url: str, host_sites: dict[str, str]) -> str:
    """`http://host:7770/a?b` -> `__SHOPPING__/a?b` by the WebArena port, or by a host the task's start
    page tied to its site; unchanged when neither applies."""
    if _PLACEHOLDER.match(url):
        return url
    parts = urllib.parse.urlsplit(url)
    origin = _origin(url)
    placeholder = PORT_PLACEHOLDERS.get(parts.port or 0) or host_sites.get(origin)
    if not placeholder:
        return url
    return placeholder + url[len(origin) :]


def _clean_url(url: str) -> str:
    return str(url).rstrip("/")


def _parse_url(url: str) -> tuple[str, dict[str, list[str]]]:
    # Placeholders have no scheme: parse them as a host so base paths compare alike.
    parsed = urllib.parse.urlparse(url if "://" in url else "//" + url)
    return _clean_url(parsed.netloc + parsed.path), urllib.parse.parse_qs(parsed.query)


def url_match(config: dict[str, Any], last_url: str | None, first_url: str | None) -> EvaluatorOutcome:
    ev = config.get("eval") or {}
    refs = [_clean_url(u) for u in str(ev.get("reference_url") or "").split(" |OR| ") if u.strip()]
    if not refs:
        return EvaluatorOutcome("url_match", "unresolved", None, last_url, "url_match has no reference URL")
    if ev.get("url_note", "GOLD in PRED") != "GOLD in PRED":
        return EvaluatorOutcome(
            "url_match", "unresolved", refs, last_url, f"unknown url_note {ev.get('url_note')!r}"
        )
    if not last_url:
        return EvaluatorOutcome("url_match", "failure", refs, None,
                                f"the last page should be {quoted(refs[0], 90)}; no page URL was recorded")  # fmt: skip
    host_sites: dict[str, str] = {}
    sites = config.get("sites") or []
    if (
        any(_PLACEHOLDER.match(r) for r in refs)
        and len(sites) == 1
        and first_url
        and sites[0] in SITE_PLACEHOLDERS
    ):
        host_sites[_origin(first_url)] = SITE_PLACEHOLDERS[sites[0]]
    mapped = (
        _clean_url(placeholder_url(last_url, host_sites))
        if any(_PLACEHOLDER.match(r) for r in refs)
        else _clean_url(last_url)
    )
    if any(_PLACEHOLDER.match(r) for r in refs) and not _PLACEHOLDER.match(mapped):
        return EvaluatorOutcome("url_match", "unresolved", refs, last_url,
                                f"the last page {quoted(last_url, 90)} is on a host that cannot be mapped to a WebArena site")  # fmt: skip
    pred_base, pred_query = _parse_url(mapped)
    ref_bases, ref_queries = [], defaultdict(set)
    for ref in refs:
        base, query = _parse_url(ref)
        ref_bases.append(base)
        for k, v in query.items():
            ref_queries[k].update(v)
    base_ok = any(b in pred_base for b in ref_bases)
    missing = [k for k, values in ref_queries.items() if not any(v in pred_query.get(k, []) for v in values)]
    if base_ok and not missing:
        return EvaluatorOutcome("url_match", "success", refs, last_url)
    why = (
        ""
        if base_ok
        else f"the last page should be {quoted(refs[0], 90)}"
        + (" (or another reference)" if len(refs) > 1 else "")
    )
    if missing:
        why = (
            (why + "; " if why else "")
            + "its query must have "
            + ", ".join(f"{k}={'|'.join(sorted(ref_queries[k]))}" for k in missing)
        )
    return EvaluatorOutcome(
        "url_match", "failure", refs, last_url, f"{why}; the agent ended on {quoted(last_url, 90)}"
    )


# -- program_html ---------------------------------------------------------------------------------
def _where(url: str) -> str:
    if url == "last":
        return "the agent's last page"
    if url.startswith("func:"):
        return f"the page {clip(url[5:], 60)} computes"
    return quoted(url, 70)


def program_html(config: dict[str, Any]) -> EvaluatorOutcome:
    targets = (config.get("eval") or {}).get("program_html") or []
    checks = []
    for target in targets if isinstance(targets, list) else []:
        if not isinstance(target, dict):
            continue
        required = target.get("required_contents") or {}
        if "exact_match" in required:
            want = f"show exactly {quoted(required['exact_match'], 60)}"
        elif "must_include" in required:
            values = (
                required["must_include"]
                if isinstance(required["must_include"], list)
                else [required["must_include"]]
            )
            want = "show " + ", ".join(quoted(v, 50) for v in values[:4]) + (" …" if len(values) > 4 else "")
        else:
            want = "match the expected content"
        locator = str(target.get("locator") or "").strip()
        element = f" in {clip(locator, 60)}" if locator else ""
        checks.append(f"{_where(str(target.get('url') or 'last'))} must {want}{element}")
    if not checks:
        return EvaluatorOutcome(
            "program_html", "unresolved", targets, None, "program_html has no target to check"
        )
    shown = "; ".join(checks[:3]) + (f"; and {len(checks) - 3} more" if len(checks) > 3 else "")
    return EvaluatorOutcome("program_html", "unresolved", targets, None,
                            f"checked on the live site: {shown}; cannot be re-checked offline", needs="the live site")  # fmt: skip


# -- a task ---------------------------------------------------------------------------------------
def evaluate_task(task: TaskInput) -> TaskOutcome:
    """Every evaluator the task's config lists, in order."""
    outcome = TaskOutcome(task.task_id, task.config_source)
    for eval_type in (task.config.get("eval") or {}).get("eval_types") or []:
        if eval_type == "string_match":
            outcome.evaluators.append(string_match(task.config, task.answer))
        elif eval_type == "url_match" and task.answer_only:
            outcome.evaluators.append(EvaluatorOutcome(
                "url_match", "unresolved", (task.config.get("eval") or {}).get("reference_url"), task.last_url,
                "the run recorded only its final answer, not the pages it visited: the last page is unknown",
                needs="the pages the agent visited",
            ))  # fmt: skip
        elif eval_type == "url_match":
            outcome.evaluators.append(url_match(task.config, task.last_url, task.first_url))
        elif eval_type == "program_html":
            outcome.evaluators.append(program_html(task.config))
        else:
            outcome.evaluators.append(
                EvaluatorOutcome(str(eval_type), "unresolved", None, None, f"unknown evaluator {eval_type!r}")
            )
    return outcome


def original_config(row: dict[str, Any]) -> dict[str, Any]:
    """A WebArena config from an `original_tasks` row."""

    def load(value: Any) -> Any:
        return orjson.loads(value) if isinstance(value, str) else value

    return {
        "task_id": row["task_id"], "intent": row["intent"], "sites": list(row["sites"] or []),
        "start_url": row["start_url"],
        "eval": {"eval_types": list(row["eval_types"] or []), "reference_answers": load(row["reference_answers"]),
                 "reference_url": row["reference_url"] or "", "program_html": load(row["program_html"]) or [],
                 "string_note": row["string_note"] or ""},
    }  # fmt: skip


def recorded_config(value: Any) -> dict[str, Any] | None:
    """The config a run recorded, when it is a usable WebArena config (has `eval.eval_types`)."""
    config = orjson.loads(value) if isinstance(value, str) else value
    if isinstance(config, dict) and isinstance(config.get("eval"), dict) and config["eval"].get("eval_types"):
        return config
    return None
