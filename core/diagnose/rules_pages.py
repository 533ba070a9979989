"""Evaluator defects in the page checks (`program_html`) of tasks that change a site: a value WebArena-Verified
corrected that the agent entered, a record Verified moved that the agent worked on, a page unlike the one its
template's tasks read, values entered in another format, a phrase the task quotes otherwise. Each holds only
where the page checks alone failed and cites what the agent typed (docs/failure-causes.md)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import date
from typing import Any
from urllib.parse import urlsplit

from core.diagnose.facts import StepFact, TaskFacts
from core.diagnose.findings import GAVE_UP, Evidence, Finding, quote, steps_text, template_evidence
from core.diagnose.rules_defects import check_evidence, equivalent, verified_text, with_witnesses
from core.measure.judge.values import as_date, as_number, squash
from core.scoring.offline.urls import canonical_url

# --- a value WebArena-Verified corrected, which the agent entered --------------------------------------


def _quantity(value: Any) -> float | date | None:
    """A number or a date, from a value a check wants or a text the agent entered ('$101.00', '3/15/23')."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        number = as_number(value)
        return number if number is not None else as_date(value)
    return None


def _page_check_values(facts: TaskFacts) -> list[str]:
    """What the original `program_html` checks want the pages to hold (exact match and must-include)."""
    out = []
    for check in facts.original_reference.get("program_html") or []:
        wanted = check.get("required_contents") if isinstance(check, dict) else None
        if isinstance(wanted, dict):
            exact = wanted.get("exact_match")
            out += [exact] if isinstance(exact, str) else []
            out += [w for w in wanted.get("must_include") or [] if isinstance(w, str)]
    return out


def _posted_values(facts: TaskFacts) -> list[Any]:
    """The values WebArena-Verified's network checks want the agent's form submissions to post."""
    out = []
    for evaluator in facts.verified_evaluators:
        expected = evaluator.get("expected") or {}
        if evaluator.get("evaluator") == "NetworkEventEvaluator" and isinstance(
            expected.get("post_data"), dict
        ):
            out += [v for v in expected["post_data"].values() if not isinstance(v, dict | list)]
    return out


def verified_corrected_entry(facts: TaskFacts) -> Finding | None:
    """The run was scored with the original reference and failed on its page checks (`program_html`) alone;
    the numbers or dates those checks want are ones WebArena-Verified corrected (none of its posted values
    equals any of them), and the agent entered every corrected value and none of the original ones (a
    price raised to 101.00 where the original reference, taking the raise for a cut, wanted 64.00)."""
    if facts.verdict_source == "webarena-verified":
        return None
    if {ev.evaluator for ev in facts.evaluators if ev.status != "success"} != {"program_html"}:
        return None  # a page check failed, or could not be re-checked offline, and nothing else
    original = {q for v in _page_check_values(facts) if (q := _quantity(v)) is not None}
    corrected = {q for v in _posted_values(facts) if (q := _quantity(v)) is not None}
    if not original or not corrected or original & corrected:
        return None
    entries = [(s, q) for s in facts.steps if s.typed and (q := _quantity(s.typed)) is not None]
    entered = {q for _, q in entries}
    if not corrected <= entered or original & entered:
        return None
    steps = [s for s, q in entries if q in corrected]

    def listed(values: Iterable[Any]) -> str:
        return ", ".join(quote(str(v), 20) for v in dict.fromkeys(values))

    wanted = listed(v for v in _page_check_values(facts) if _quantity(v) is not None)
    posted = listed(v for v in _posted_values(facts) if _quantity(v) is not None)
    typed = listed(s.typed for s in steps)
    return Finding(
        "evaluator_strict", "verified_corrected_entry",
        f"The page check wants {wanted}; WebArena-Verified corrected that to {posted}, which is what the "
        f"agent entered ({typed}, {steps_text([s.idx for s in steps])}).",
        with_witnesses(
            facts,
            check_evidence(facts, "program_html", wanted, typed, verified_text(facts)),
            *(Evidence("step", s.action, step_idx=s.idx) for s in steps[:10]),
        ),
    )  # fmt: skip


# --- a page check that reads the wrong page --------------------------------------------------------------


def _only_page_checks_failed(facts: TaskFacts) -> bool:
    """Scored with the original reference; its page checks (`program_html`) failed or could not be
    re-checked offline, and no other check failed (one that could not be re-checked, such as the last
    page's URL of a run that did not record it, is not known to have failed)."""
    failed = {ev.evaluator for ev in facts.evaluators if ev.status == "failure"}
    read = {ev.evaluator for ev in facts.evaluators if ev.status != "success"}
    return (
        facts.verdict_source != "webarena-verified" and "program_html" in read and failed <= {"program_html"}
    )


def _entered_all(facts: TaskFacts, values: list[str]) -> bool:
    """The agent typed every value (case, spaces and punctuation aside): it did the work the check reads."""
    typed = " ".join(squash(s.typed) for s in facts.steps if s.typed)
    return bool(values) and all(squash(v) and squash(v) in typed for v in values)


def _segments(url: str) -> list[str]:
    return (
        [s for s in urlsplit(canonical_url(url)).path.split("/") if s] if "://" in url else url.split("/")[1:]
    )


def _page_shape(urls: list[str]) -> tuple[int, dict[int, str]] | None:
    """What the pages have in common: their number of path segments and the segments equal in all of them
    (`/f/<forum>/edit`: 3 segments, `f` first and `edit` last); None when their lengths differ."""
    split = [_segments(u) for u in urls]
    if len({len(s) for s in split}) != 1:
        return None
    n = len(split[0])
    return n, {i: split[0][i] for i in range(n) if len({s[i] for s in split}) == 1}


TEMPLATE_MIN_PASSED = 2  # tasks of the same template that passed before their pages' shape says anything


def check_unlike_template(facts: TaskFacts) -> Finding | None:
    """The page check failed alone; the agent entered every value it wants; and the tasks of the same
    template that passed in this run (at least TEMPLATE_MIN_PASSED) read the same element on pages of one
    shape, which this check's page does not have (they read `/f/<forum>/edit`, where the form is; this one
    `/f/Karaoke`, where it is not): the reference reads the wrong page."""
    if not _only_page_checks_failed(facts) or not _entered_all(facts, _page_check_values(facts)):
        return None
    for check in facts.original_reference.get("program_html") or []:
        url, locator = str(check.get("url") or ""), check.get("locator")
        if not url.startswith("__"):
            continue  # `last` or a function of the last page: no page of its own to compare
        theirs = [
            str(c.get("url")) for sibling in facts.template_passed_checks
            for c in sibling[:] if isinstance(c, dict) and c.get("locator") == locator
            and str(c.get("url") or "").startswith("__")
        ]  # fmt: skip
        shape = _page_shape(theirs) if len(theirs) >= TEMPLATE_MIN_PASSED else None
        if shape is None:
            continue
        n, fixed = shape
        ours = _segments(url)
        if len(ours) == n and all(ours[i] == seg for i, seg in fixed.items()):
            continue
        return Finding(
            "evaluator_strict", "check_unlike_template",
            f"The page check reads {quote(url, 60)}, but the {len(theirs)} checks of the same element in this "
            f"template's tasks that passed read pages like {quote(theirs[0], 60)}; the agent entered every "
            "value the check wants.",
            with_witnesses(
                facts,
                check_evidence(facts, "program_html", url, "; ".join(_page_check_values(facts))[:200], verified_text(facts)),
                *template_evidence(facts),
            ),
        )  # fmt: skip
    return None


# --- a target WebArena-Verified moved, which the agent worked on -------------------------------------------


def _record_ids(url: str) -> dict[str, str]:
    """The records a page's path names: each number with the segment before it (`order_id/307`)."""
    parts = _segments(url)
    return {parts[i - 1]: parts[i] for i in range(1, len(parts)) if parts[i].isdigit()}


def _names_record(step: StepFact, number: str) -> bool:
    """The step is on the record's page, or names it as a site writes it (`#65`, `000000065`; a bare number
    could be a coordinate)."""
    if step.url and number in urlsplit(step.url).path.split("/"):
        return True
    return re.search(rf"(?:#0*|\b0{{3,}}){number}\b", step.action or "") is not None


def verified_moved_target(facts: TaskFacts) -> Finding | None:
    """The page check failed alone and reads a record (`order_id/307`) that WebArena-Verified's check of the
    same task replaced by another (`order_id/65`: the customer's most recent order really is #65); the agent
    worked on Verified's record, never on the original's, and entered every value the check wants."""
    if not _only_page_checks_failed(facts) or not _entered_all(facts, _page_check_values(facts)):
        return None
    original: dict[str, str] = {}
    for check in facts.original_reference.get("program_html") or []:
        original |= _record_ids(str(check.get("url") or ""))
    moved: dict[str, tuple[str, str]] = {}
    for evaluator in facts.verified_evaluators:
        expected = evaluator.get("expected") or {}
        urls = expected.get("url")
        for url in urls if isinstance(urls, list) else [urls]:
            for key, number in _record_ids(str(url or "")).items():
                if key in original and original[key] != number:
                    moved[key] = (original[key], number)
    for key, (old, new) in moved.items():
        worked = [s for s in facts.steps if _names_record(s, new)]
        if worked and not any(_names_record(s, old) for s in facts.steps):
            return Finding(
                "evaluator_strict", "verified_moved_target",
                f"The page check reads {key} {old}; WebArena-Verified checks {key} {new} instead, which is "
                f"the record the agent worked on ({steps_text([s.idx for s in worked])}), entering every "
                "value the check wants.",
                with_witnesses(
                    facts,
                    check_evidence(facts, "program_html", f"{key}/{old}", f"{key}/{new}", verified_text(facts)),
                    *(Evidence("step", s.action, step_idx=s.idx) for s in worked[:10]),
                ),
            )  # fmt: skip
    return None


def entered_in_another_format(facts: TaskFacts) -> Finding | None:
    """The page check failed alone, wanting values the agent entered, but in another format: every value
    is in what the agent typed once format is set aside (`equivalent`: the same URL on the site's other
    address, a number rounded, a date written otherwise, a straight apostrophe for a curly one), and not
    every one as written (the original check's `must_include` reads the page lower-cased, nothing more):
    the check compared text where the task asked for the thing."""
    wanted = [v for v in _page_check_values(facts) if v.strip()]
    typed = "\n".join(s.typed for s in facts.steps if s.typed)
    if not _only_page_checks_failed(facts) or not wanted or not typed:
        return None
    if all(v.strip().lower() in typed.lower() for v in wanted) or not all(
        equivalent(v, typed) for v in wanted
    ):
        return None
    steps = [s for s in facts.steps if s.typed and any(equivalent(v, s.typed) for v in wanted)]
    return Finding(
        "evaluator_strict", "entered_in_another_format",
        f"The page check wants {', '.join(quote(v, 40) for v in wanted[:3])}; the agent entered each in another "
        f"format ({steps_text([s.idx for s in steps])}).",
        with_witnesses(
            facts,
            check_evidence(
                facts, "program_html", "; ".join(wanted)[:200], "\n".join(s.typed or "" for s in steps)[:200],
                verified_text(facts),
            ),
            *(Evidence("step", s.action, step_idx=s.idx) for s in steps[:10]),
        ),
    )  # fmt: skip


# --- a reference that misquotes the task -------------------------------------------------------------------

_QUOTED = re.compile(r"[\"“]([^\"”]{8,200})[\"”]")
_FILLER = frozenset(
    {"a", "an", "the", "it", "its", "this", "that", "of", "to", "is", "was", "and", "my", "i"}
)


def _content_words(text: str) -> list[str]:
    return [w for w in squash(text).split() if w not in _FILLER]


def _in_order(words: list[str], text_words: list[str]) -> bool:
    """Every word of `words`, in order, among `text_words` (others may stand between them)."""
    it = iter(text_words)
    return all(any(w == t for t in it) for w in words)


def check_misquotes_task(facts: TaskFacts) -> Finding | None:
    """A page check wants a phrase of at least 4 words that the task does not contain, where the task quotes
    a longer wording of it (`it broke after three days of use` for the quoted "it broke after just three
    days of use"): an agent entering the task's own words fails. Holds when the attempt finished (an answer
    that is no report of failure), the agent entered the phrase's words in order and every other value the
    check wants, and no check but the page check failed."""
    if not _only_page_checks_failed(facts):
        return None
    if facts.termination not in (None, "answered") or not facts.answer or GAVE_UP.search(facts.answer[:300]):
        return None
    intent = squash(facts.intent)
    quotes = [squash(q) for q in _QUOTED.findall(facts.intent)]
    typed = " ".join(s.typed for s in facts.steps if s.typed)
    wanted = _page_check_values(facts)
    for phrase_text in wanted:
        phrase = squash(phrase_text)
        if len(phrase.split()) < 4 or phrase in intent:
            continue
        quote_of = next((q for q in quotes if _in_order(phrase.split(), q.split())), None)
        others = [w for w in wanted if w != phrase_text]
        if quote_of is None or not _in_order(_content_words(phrase), _content_words(typed)):
            continue
        if not _entered_all(facts, others):
            continue
        return Finding(
            "evaluator_strict", "check_misquotes_task",
            f"The page check wants {quote(phrase_text, 50)}, which the task never says: it quotes "
            f"{quote(quote_of, 60)}; the agent entered the task's words and every other value the check wants.",
            with_witnesses(
                facts, check_evidence(facts, "program_html", phrase_text, typed.strip()[:200], verified_text(facts))
            ),
        )  # fmt: skip
    return None
