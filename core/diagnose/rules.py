"""The diagnosis rules: pure functions over one failed task's facts (core.diagnose.facts). Each returns
zero or one `Finding` (a cause, the rule's name, one plain sentence and the evidence it cites); a task's
primary cause is the first of its findings in the taxonomy's precedence. docs/failure-causes.md states
every rule as coded here and in `rules_site` (the environment, a strict evaluator); bump RULES_VERSION when
a rule changes what it decides.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from urllib.parse import urlsplit

from core.diagnose.facts import TaskFacts
from core.diagnose.findings import (
    GAVE_UP,
    Evidence,
    Finding,
    actions_text,
    answer_step,
    answered_at,
    failing_sentence,
    numbers,
    quote,
)
from core.diagnose.rules_defects import (
    equivalent_values,
    expected_request_not_navigation,
    other_runs_agree,
    url_differs_in_format,
    verified_url_reached,
)
from core.diagnose.rules_pages import (
    check_misquotes_task,
    check_unlike_template,
    entered_in_another_format,
    verified_corrected_entry,
    verified_moved_target,
)
from core.diagnose.rules_site import (
    STEP_SERVER_ERROR,
    differs_only_in_format,
    loose,
    offline_evaluators_pass,
    response_site_failed,
    site_of,
    start_page_failed,
    tool_server_errors,
    trace_server_errors,
    verified_corrected_value,
    verified_leaves,
    verified_reference_matches,
)  # fmt: skip
from core.diagnose.taxonomy import PRECEDENCE

RULES_VERSION = "rules-4"

# Thresholds, chosen on the `tune` half of the labels only (tests/fixtures/failure_labels).
LOOP_MIN_REPEATS = 5  # the same action at least this often ...
LOOP_MIN_SHARE = 0.15  # ... and at least this share of the attempt's actions
CYCLE_MAX_LENGTH = 4  # a cycle of at most this many different actions ...
CYCLE_MIN_SHARE = 0.4  # ... done again right after itself, its repeats this share of the actions
CLICK_SAME_PX = 20  # clicks by coordinates this close on one page are one click
INVALID_MIN_ERRORS = 3  # failed actions (not server errors) ...
INVALID_MIN_SHARE = 0.3  # ... and their share of the actions

_CAP = re.compile(r"\bcap\b|step limit|max(?:imum)? (?:steps|actions|turns)|turn limit|time limit", re.I)


def step_limit(facts: TaskFacts) -> Finding | None:
    """The harness cut the attempt at its step, action or time limit."""
    detail = facts.termination_detail or ""
    if facts.termination != "truncated" and not _CAP.search(detail):
        return None
    why = f" ({detail})" if detail else ""
    return Finding(
        "step_limit", "step_limit",
        f"The run was cut after {actions_text(facts.n_steps)}{why} before the agent finished.",
        (Evidence("step", detail or "truncated", step_idx=facts.actions[-1].idx if facts.actions else None),),
    )  # fmt: skip


# Going back is how an agent walks a list (open an item, back, the next): repeated, it is no loop. The
# browser's back (go_back, Alt+Left) or a page's back button; not every click on a word "back" ("Back to
# cart" is a link like any other).
GOING_BACK = re.compile(
    r"go_?back|arrowleft|alt\+left|'alt', 'left'|\bback (?:button|arrow|navigation)|\b(?:navigate|browser) back\b",
    re.IGNORECASE,
)


_CLICK_AT = re.compile(r"^click\(coords=\[(\d+), (\d+)\]\)$")


def _targets(actions: list) -> list[str]:
    """Each action as what it did: a click by coordinates within CLICK_SAME_PX of an earlier click on the
    same page (its address without the fragment) is the same click (an agent re-aiming at one line or
    button lands a few pixels off); every other action is its text."""
    seen: list[tuple[str, int, int, str]] = []
    out = []
    for s in actions:
        match = _CLICK_AT.match(s.action)
        if not match:
            out.append(s.action)
            continue
        x, y, page = int(match.group(1)), int(match.group(2)), (s.url or "").split("#")[0]
        same = next(
            (a for p, ax, ay, a in seen if p == page and abs(ax - x) <= CLICK_SAME_PX and abs(ay - y) <= CLICK_SAME_PX),
            None,
        )  # fmt: skip
        if same is None:
            seen.append((page, x, y, s.action))
        out.append(same or s.action)
    return out


def _repeated(facts: TaskFacts) -> tuple[str, list[int]] | None:
    actions = [s for s in facts.actions if s.action and s.action != "none" and not s.answer]
    if not actions:
        return None
    targets = _targets(actions)
    counts = Counter(t for t in targets if not GOING_BACK.search(t))
    if counts:
        action, count = counts.most_common(1)[0]
        if count >= LOOP_MIN_REPEATS and count / len(actions) >= LOOP_MIN_SHARE:
            return quote(action, 50), [s.idx for s, t in zip(actions, targets, strict=True) if t == action]
    return _cycled(actions, targets) or _page_cycled(actions)


def _page_cycled(actions: list) -> tuple[str, list[int]] | None:
    """A round of 2 to 4 different pages walked again right after itself (the pages each action was on,
    addresses without their fragment, a stay on one page counted once): the agent went back over the same
    pages by other clicks. Walking a list (the list, an item, the list, another item) is no cycle."""
    if sum(1 for s in actions if s.url) < URL_COVERAGE * len(actions):
        return None
    visits: list = []
    for s in actions:
        page = (s.url or "").split("#")[0]
        if page and (not visits or visits[-1][0] != page):
            visits.append((page, s))
    found = _cycled([s for _, s in visits], [p for p, _ in visits])
    if found is None:
        return None
    _, idx = found
    pages = list(dict.fromkeys(p for p, s in visits if s.idx in idx))
    shown = " → ".join(quote(_page_text(p), 40) for p in pages)
    return f"the round of pages {shown}", idx


def _page_text(url: str) -> str:
    parts = urlsplit(url)
    return (parts.path + (f"?{parts.query}" if parts.query else "")) or url


def _cycled(actions: list, names: list[str]) -> tuple[str, list[int]] | None:
    """A cycle of 2 to 4 different actions done again right after itself (the same clicks bring the agent
    back where it was), whose repeats take at least CYCLE_MIN_SHARE of the attempt's actions."""
    for length in range(2, CYCLE_MAX_LENGTH + 1):
        for start in range(len(names) - 2 * length + 1):
            cycle = names[start : start + length]
            if len(set(cycle)) < 2 or names[start + length : start + 2 * length] != cycle:
                continue
            steps, i = [], 0
            while i + length <= len(names):  # every repeat of the cycle, not overlapping
                if names[i : i + length] == cycle:
                    steps += [s.idx for s in actions[i : i + length]]
                    i += length
                else:
                    i += 1
            if len(steps) / len(names) >= CYCLE_MIN_SHARE:
                shown = " → ".join(quote(a, 30) for a in cycle)
                return f"the cycle {shown}", steps
    return None


def looped(facts: TaskFacts) -> Finding | None:
    """The same action repeated (at least LOOP_MIN_REPEATS times, LOOP_MIN_SHARE of the actions), or a
    cycle of actions done again right after itself and taking CYCLE_MIN_SHARE of them, in an attempt that
    did not end with an answer (or ended saying it could not do it); or a harness that stopped it for
    repeating itself."""
    detail = facts.termination_detail or ""
    if re.search(r"same action", detail, re.IGNORECASE):
        return Finding(
            "looped", "looped", f"The harness stopped the agent for repeating itself ({detail}).",
            (Evidence("step", detail, step_idx=facts.actions[-1].idx if facts.actions else None),),
        )  # fmt: skip
    repeated = _repeated(facts)
    gave_up_answer = bool(facts.answer and GAVE_UP.search(facts.answer[:300]))
    if repeated is None or (facts.termination == "answered" and not gave_up_answer):
        return None
    what, steps = repeated
    ended = "ended saying it could not do it" if gave_up_answer else "ended without an answer"
    return Finding(
        "looped", "looped",
        f"The agent repeated {what} {len(steps)} times (steps {numbers(steps)}) of "
        f"{len(facts.actions)} actions and {ended}"
        f"{'' if facts.termination in (None, 'none', 'unknown') else f' ({facts.termination})'}.",
        tuple(Evidence("step", facts_action(facts, i), step_idx=i) for i in steps[:10]),
    )  # fmt: skip


def facts_action(facts: TaskFacts, idx: int) -> str:
    return next((s.action for s in facts.steps if s.idx == idx), "")


# The harness's note that it could not parse the agent's output (an early stop of that kind is no choice
# of the agent's to stop).
PARSE_FAILED = re.compile(
    r"(?:failed to|could not|couldn.t|cannot) parse|unparse|invalid action|not a valid action", re.IGNORECASE
)


def _failed_actions(facts: TaskFacts) -> list:
    """Actions that reported an error and did not take effect: an action followed by another page did
    (a harness can report a click's timeout although the page it opened loaded)."""
    actions = facts.actions
    following = [*(b.url for b in actions[1:]), facts.final_url][: len(actions)]
    return [
        a for a, nxt in zip(actions, following, strict=True) if a.error and not (a.url and nxt and nxt != a.url)
    ]  # fmt: skip


def invalid_action(facts: TaskFacts) -> Finding | None:
    """Many actions failed (at least INVALID_MIN_ERRORS, INVALID_MIN_SHARE of them; server errors are the
    environment's). A harness that stopped the agent because its output did not parse is how the attempt
    ended, not why it failed (like the step limit): on our labels it was right 0 times of 3, the reviewers
    seeing a broken box, a drift or a state already right before the last, unparsed output."""
    failed = [s for s in _failed_actions(facts) if not STEP_SERVER_ERROR.search(s.error or "")]
    if len(failed) < INVALID_MIN_ERRORS or len(failed) / max(1, len(facts.actions)) < INVALID_MIN_SHARE:
        return None
    return Finding(
        "invalid_action", "invalid_action",
        f"{len(failed)} of {len(facts.actions)} actions could not be executed (steps "
        f"{numbers([s.idx for s in failed])}), first {quote(failed[0].error)}.",
        tuple(Evidence("step", s.error or "", step_idx=s.idx) for s in failed[:10]),
    )  # fmt: skip


def gave_up(facts: TaskFacts) -> Finding | None:
    """The task was achievable (Verified expects SUCCESS) but the agent stopped early (N/A, an early
    stop that is not the harness failing to parse its output) or answered that it could not find or do it."""
    if facts.expected_status not in (None, "SUCCESS"):
        return None
    if facts.termination in ("na_answer", "early_stop") and not PARSE_FAILED.search(
        facts.termination_detail or ""
    ):
        what = f"stopped early ({facts.termination_detail or facts.termination})"
    elif facts.answer and GAVE_UP.search(facts.answer[:300]):
        what = f"answered {quote(facts.answer)}"
    else:
        return None
    step = answer_step(facts)
    return Finding(
        "gave_up", "gave_up",
        f"After {actions_text(facts.n_steps)} the agent {what}{answered_at(facts)}, though the task is achievable.",
        (Evidence("response", facts.answer[:300] if facts.answer else what, step_idx=step.idx if step else None),),
    )  # fmt: skip


_WORD = re.compile(r"[a-z][a-z0-9'-]+")
NEAR_MISS_SHARE = 0.5  # a reference entity whose words the answer holds at least half of, not all
NEAR_MISS_MAX_ITEMS = 2  # ... in a reference naming at most this many items (a pick, not a list)


def _reference_entities(facts: TaskFacts) -> list[str]:
    return [s for s in facts.reference_values if isinstance(s, str) and len(_WORD.findall(s.lower())) >= 2]


def near_miss_entity(facts: TaskFacts) -> Finding | None:
    """The answer names a different item of the same kind as the reference's (it holds at least half of a
    reference name's words, not all of them): the agent picked the wrong row, result or option."""
    if not facts.answer or not any(ev.status == "failure" for ev in facts.evaluators):
        return None
    entities = _reference_entities(facts)
    if len(entities) > NEAR_MISS_MAX_ITEMS:
        return None  # a list asked for: one item written wrong among many is no pick of another item
    answer_words = set(_WORD.findall(facts.answer.lower()))
    verified = {loose(str(alt)) for req in verified_leaves(facts.verified_data) for alt in req}
    for entity in entities:
        if facts.verdict_source != "webarena-verified" and verified and loose(entity) not in verified:
            continue  # WebArena-Verified no longer asks for this item: a near miss of it says nothing
        words = set(_WORD.findall(entity.lower()))
        shared = words & answer_words
        if (
            len(shared) >= 2
            and NEAR_MISS_SHARE <= len(shared) / len(words) < 1
            and loose(entity) not in loose(facts.answer)
        ):
            return Finding(
                "wrong_element", "near_miss_entity",
                f"The answer {quote(facts.answer, 50)} names an item like the expected {quote(entity, 50)} "
                f"but not it (shares {len(shared)} of its {len(words)} words).",
                (failing_sentence(facts), Evidence("response", facts.answer[:300])),
            )  # fmt: skip
    return None


DRIFT_MIN_STEPS = 2  # steps on a site the task does not name before the attempt counts as working there
URL_COVERAGE = 0.5  # share of steps with a recorded page before "never visited" can be told


def drifted_off_site(facts: TaskFacts) -> Finding | None:
    """The attempt never visited a site the task names, or worked (DRIFT_MIN_STEPS steps or its last page)
    on a site the task does not name."""
    if not facts.sites or not facts.urls:
        return None
    visited = [(site_of(u), u) for u in facts.urls]
    visited = [(site, u) for site, u in visited if site is not None]
    if not visited:
        return None
    named = set(facts.sites)
    # "Never visited" only where the steps record their pages (a run recording one page says nothing), counted
    # over the steps that did something (a render's placeholder `none` steps and its parse-failure stop did not).
    acted = [s for s in facts.steps if s.action and s.action != "none" and not PARSE_FAILED.search(s.action)]
    recorded = sum(1 for s in acted if s.url)
    told = recorded >= 3 and recorded >= URL_COVERAGE * len(acted)
    # Wikipedia is where a task lets the agent look a fact up; answering it from knowledge is no drift.
    missing = sorted(named - {site for site, _ in visited} - {"wikipedia"}) if told else []
    elsewhere = Counter(site for site, _ in visited if site not in named)
    last_site = visited[-1][0]
    away = sorted(s for s, n in elsewhere.items() if n >= DRIFT_MIN_STEPS or s == last_site)
    if not missing and not away:
        return None
    parts = []
    if missing:
        parts.append(f"never visited {', '.join(missing)}")
    if away:
        shown = next(u for site, u in reversed(visited) if site in away)
        pages = elsewhere[away[0]]
        parts.append(
            f"worked on {', '.join(away)} ({pages} page{'s' if pages > 1 else ''}, e.g. {quote(shown, 60)})"
        )
    steps = [s for s in facts.steps if s.url and site_of(s.url) in away][:10]
    return Finding(
        "drifted", "drifted_off_site",
        f"The task names {', '.join(sorted(named))}; the agent {' and '.join(parts)}.",
        tuple(Evidence("step", s.url or "", step_idx=s.idx) for s in steps) or (Evidence("response", parts[0]),),
    )  # fmt: skip


def answered_wrong(facts: TaskFacts) -> Finding | None:
    """The agent finished with an answer (or a final state) and the evaluator failed it."""
    if facts.termination not in ("answered", None) and not facts.answer:
        return None
    if facts.termination in ("none", "error", "interrupted") or (not facts.answer and facts.n_steps == 0):
        return None
    failing = failing_sentence(facts)
    what = (
        f"answered {quote(facts.answer, 50)}" if facts.answer else f"finished after {facts.n_steps} actions"
    )
    return Finding(
        "wrong_answer", "answered_wrong", f"The agent {what}{answered_at(facts)}; {failing.text}".rstrip(".") + ".",
        (failing,),
    )  # fmt: skip


RULES: tuple[Callable[[TaskFacts], Finding | None], ...] = (
    trace_server_errors, response_site_failed, tool_server_errors, start_page_failed,
    offline_evaluators_pass, differs_only_in_format, verified_reference_matches, verified_corrected_value,
    equivalent_values, url_differs_in_format, verified_corrected_entry, verified_moved_target,
    check_unlike_template, entered_in_another_format, check_misquotes_task,
    verified_url_reached, expected_request_not_navigation, other_runs_agree,
    looped, step_limit, invalid_action, gave_up, near_miss_entity, drifted_off_site, answered_wrong,
)  # fmt: skip


def find_causes(facts: TaskFacts) -> list[Finding]:
    """One finding per cause (the first rule that found it), ordered by the taxonomy's precedence: the
    first is the task's primary cause; none means undecided."""
    found: dict[str, Finding] = {}
    for rule in RULES:
        finding = rule(facts)
        if finding is not None and finding.cause not in found:
            found[finding.cause] = finding
    return sorted(found.values(), key=lambda f: PRECEDENCE.index(f.cause))


def undecided_reason(facts: TaskFacts) -> str:
    """What the record shows of a task no rule decided (the reason beside `undecided`)."""
    how = "" if facts.termination in (None, "none", "unknown") else f" ({facts.termination})"
    if not facts.answer:
        return f"the attempt ended{how} without an answer after {facts.n_steps} actions"
    return f"the attempt ended{how} after {facts.n_steps} actions"
