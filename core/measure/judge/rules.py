"""Rule stage: canonicalise both sides of a pair into (verb class, element label, value) and decide the
clear cases.

Three inputs are understood. The BrowserGym grammar (`click('12')`, `fill('12', 'x')`) and the WebArena
grammar (`click [12]`, `type [12] [text] [1]`, `click [12] where [12] is [12] link 'X'`) are parsed by
`core.measure.action_grammar` in their strict forms: text those parsers would only read leniently is read here
as a sentence instead. English step sentences (the human gold, "Click on the 'X' link", and
trajreview's readable sentences, "Click link 'X'") are parsed by the judge's English reader
(`core.measure.judge.english`), with the grammar's verb vocabulary (`core.measure.action_grammar.vocabulary`);
the judge only maps canonical verbs to the classes it compares.
Normalising never drops quoted labels, values, numbers, field names or direction words: it only folds
case, Unicode forms, whitespace and surrounding punctuation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from core.measure.action_grammar import ParsedAction
from core.measure.action_grammar.browsergym import strict_first_call
from core.measure.action_grammar.tool_calls import parse_executed, target_of
from core.measure.action_grammar.webarena import is_unparsed_output, parse_webarena_action
from core.measure.judge.english import QUOTED, VERB_CLASS, Canon, announced_call, parse_english
from core.measure.judge.values import (
    as_date,
    as_minutes,
    as_number,
    dates_in,
    fold,
    label_numbers,
    minutes_in,
    norm_label,
    norm_value,
    numbers_in,
    same_value,
    squash,
)
from core.measure.requirement_spellings import split_spellings

# -- verb classes (Canon and VERB_CLASS are the English reader's, core.measure.judge.english) --------

# Classes that may describe the same intent (a link click is a navigation; an option can be clicked).
_COMPATIBLE = {frozenset({"click", "goto"}), frozenset({"click", "select"}), frozenset({"click", "hover"})}


# -- grammars ------------------------------------------------------------------------------------
def _canon(action: ParsedAction, grammar: str) -> Canon:
    """A grammar action in the judge's terms: the verb's class, the label folded, one value field."""
    verb = VERB_CLASS.get(action.verb, "unknown")
    if action.verb == "goto":
        value = action.target_url
    elif verb == "answer":
        value = action.answer or ""
    elif verb == "scroll":
        value = None  # the direction is what a scroll is compared on, not its pixel deltas
    else:
        value = action.value
    return Canon(
        verb,
        label=norm_label(action.element_label),
        value=value,
        element_id=action.element_id,
        key=(action.key or "").strip().lower() if verb == "press" else None,
        # A scroll that names no direction is read as down, as in a sentence ("Scroll").
        direction=(action.direction or "down") if verb == "scroll" else None,
        grammar=grammar,
    )


def parse_browsergym(text: str) -> Canon | None:
    """The first call of a BrowserGym action string; None when it is not one."""
    action = strict_first_call(text)
    return _canon(action, "browsergym") if action is not None else None


def parse_webarena(text: str) -> Canon | None:
    """A WebArena action (`click [12]`, `type [12] [text] [1]`, `stop [answer]`, with an optional
    `where [12] is link 'X'` tail as in render files); None when it is not one. The harness's `none`
    (output it could not parse) is no chosen action: like its readable sentence, it has no verb."""
    action = parse_webarena_action(text, strict=True)
    if action is None or is_unparsed_output(action):
        return None
    return _canon(action, "webarena")


@lru_cache(maxsize=100_000)
def parse_tool(text: str) -> Canon | None:
    """A tool-using agent's executed call (`mcp__gbox-browser__click: {'target': 'Go button …'}`): the
    target description's name is the label; None when the text is not such a call."""
    action = parse_executed(text)
    return _canon(action, "tool") if action is not None else None


@lru_cache(maxsize=200_000)
def canonicalize(text: str) -> Canon:
    """The canonical form of any action text: grammar first, English otherwise."""
    return parse_browsergym(text) or parse_webarena(text) or parse_tool(text) or parse_english(text)


# -- decisions -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class RuleDecision:
    verdict: bool | None  # None: pass to the next stage
    score: float | None = None
    rationale: str = ""


def compatible(verb_a: str, verb_b: str) -> bool:
    return verb_a == verb_b or frozenset({verb_a, verb_b}) in _COMPATIBLE


def decide_steps(a: str, b: str) -> RuleDecision:
    """gold_vs_agent / agent_vs_agent: equal verb class, label and value -> equivalent; incompatible
    verb classes or clearly different values -> different; anything else passes."""
    ca, cb = canonicalize(a), canonicalize(b)
    if ca.verb == "unknown" or cb.verb == "unknown":
        return RuleDecision(None, rationale="a side has no recognised verb")
    if not compatible(ca.verb, cb.verb):
        return RuleDecision(False, 0.0, f"verb {ca.verb} vs {cb.verb}")
    if ca.verb in ("scroll",) and cb.verb == ca.verb:
        same = ca.direction == cb.direction
        return RuleDecision(same, float(same), f"scroll {ca.direction} vs {cb.direction}")
    if ca.verb == "press" and cb.verb == "press":
        same = (ca.key or "enter") == (cb.key or "enter")
        return RuleDecision(same, float(same), f"key {ca.key} vs {cb.key}")
    if ca.verb == cb.verb and ca.verb in ("go_back", "go_forward", "noop", "tab"):
        return RuleDecision(True, 1.0, ca.verb)
    values = same_value(ca.value, cb.value) if (ca.value or cb.value) else True
    if ca.verb == cb.verb and ca.verb in ("type", "select", "answer", "upload") and values is False:
        return RuleDecision(False, 0.0, "values differ")
    if ca.verb == "answer" and cb.verb == "answer":
        return RuleDecision(values, None if values is None else float(values), "answer text")
    numbers_a, numbers_b = label_numbers(ca.label), label_numbers(cb.label)
    if numbers_a and numbers_b and sorted(numbers_a) != sorted(numbers_b):
        # 'Page 2' vs 'Page 3', 'Order #170' vs 'Order #171': another number is another element.
        return RuleDecision(False, 0.0, "labels name different numbers")
    if ca.label and cb.label and ca.label == cb.label and values is True and ca.verb == cb.verb:
        return RuleDecision(True, 1.0, "same verb, label and value")
    if (
        ca.verb == cb.verb
        and ca.verb in ("type", "select")
        and values is True
        and ca.value
        and _label_nested(ca.label, cb.label)
    ):
        # The same text typed into a field one side names only in part ('Search' vs 'Search entire
        # store here') or not at all.
        return RuleDecision(True, 1.0, "same value typed, field labels nested")
    return RuleDecision(None, rationale="labels differ in wording")


def _label_nested(a: str | None, b: str | None) -> bool:
    if not a or not b:
        return True
    wa, wb = set(re.findall(r"\w+", a)), set(re.findall(r"\w+", b))
    return bool(wa and wb) and (wa <= wb or wb <= wa)


def decide_repeat(a: str, b: str) -> RuleDecision:
    """agent_vs_agent (RepR): same verb, same element (bid, or label when bids differ between
    observations), same value. Both sides are agent actions, so the rule always decides."""
    ca, cb = canonicalize(a), canonicalize(b)
    if ca.verb != cb.verb:
        return RuleDecision(False, 0.0, f"verb {ca.verb} vs {cb.verb}")
    same_val = (norm_value(ca.value) or "") == (norm_value(cb.value) or "") or same_value(
        ca.value, cb.value
    ) is True
    same_extra = (ca.key or "") == (cb.key or "") and (ca.direction or "") == (cb.direction or "")
    if ca.verb == "unknown":
        same_el = norm_label(a) == norm_label(b)
    elif ca.element_id and cb.element_id and ca.element_id == cb.element_id:
        same_el = True
    elif ca.label or cb.label:
        same_el = ca.label == cb.label
    else:
        same_el = (ca.element_id or "") == (cb.element_id or "")
    same = same_val and same_extra and same_el
    return RuleDecision(same, float(same), "verb, element and value compared")


def decide_stated_vs_executed(stated: str, executed: str) -> RuleDecision:
    """EAR: the stated grammar action against the executed one; both are grammar, so rules decide. A
    tool-using agent's call is compared with the sentence that announced it (`decide_stated_vs_tool`)."""
    if not stated or not stated.strip():
        return RuleDecision(False, 0.0, "no stated action")
    if not executed or executed.strip().lower() in ("none", ""):
        return RuleDecision(False, 0.0, "executed action did not parse")
    tool = parse_tool(executed)
    if tool is not None:
        return decide_stated_vs_tool(stated, tool, target_of(executed))
    cs = parse_browsergym(stated) or parse_webarena(stated)
    ce = parse_browsergym(executed) or parse_webarena(executed)
    if cs is None or ce is None:
        return RuleDecision(False, 0.0, "an action is outside the grammar")
    same = (
        cs.verb == ce.verb
        and (cs.element_id or "") == (ce.element_id or "")
        and (norm_value(cs.value) or "") == (norm_value(ce.value) or "")
        and (cs.key or "") == (ce.key or "")
        and (cs.direction or "") == (ce.direction or "")
    )
    return RuleDecision(same, float(same), "verb, element id and value compared")


# Key names as tools and people write them ("Ctrl+F", ['control', 'f']).
_KEY_ALIASES = {"control": "ctrl", "command": "meta", "cmd": "meta", "esc": "escape", "return": "enter",
                "del": "delete", "pgdn": "pagedown", "pgup": "pageup"}  # fmt: skip


def _keys(key: str | None) -> str:
    parts = re.split(r"\s*\+\s*", (key or "enter").strip().lower())
    return "+".join(_KEY_ALIASES.get(p, p) for p in parts if p)


_announced = lru_cache(maxsize=100_000)(announced_call)


def decide_stated_vs_tool(stated: str, call: Canon, target: str | None = None) -> RuleDecision:
    """EAR for a tool call: the statement announcing it ("Now let me click the "Go" button") against the
    call (verb, the target description's name, typed text). The announced verb must be compatible with
    the call's, where typing into a field also announces the click that focuses it; a quoted value it
    names must be the value sent; an element it names must be the target: its name (equal or nested
    names) or, word for word, its whole description ("close the welcome dialog" names "X button of the
    Welcome dialog"); other wording passes to the lexical stage. A statement naming no element matches
    on the verb; one that announces no verb of ours passes."""
    cs = _announced(stated)
    if cs.verb == "unknown":
        return RuleDecision(None, rationale="the statement names no action verb")
    focus = cs.verb == "type" and call.verb == "click"
    if not compatible(cs.verb, call.verb) and not focus:
        return RuleDecision(False, 0.0, f"verb {cs.verb} vs {call.verb}")
    if call.verb == "scroll":
        same = cs.direction == call.direction
        return RuleDecision(same, float(same), f"scroll {cs.direction} vs {call.direction}")
    if call.verb == "press":
        same = _keys(cs.key) == _keys(call.key)
        return RuleDecision(same, float(same), f"key {cs.key} vs {call.key}")
    if call.verb in ("go_back", "go_forward", "tab", "noop"):
        return RuleDecision(True, 1.0, call.verb)
    quoted_value = bool(cs.value) and bool(QUOTED.search(fold(stated)))
    if (
        call.verb in ("type", "select", "answer")
        and quoted_value
        and same_value(cs.value, call.value) is False
    ):
        return RuleDecision(False, 0.0, "values differ")
    if not cs.label or not call.label:
        return RuleDecision(True, 1.0, "compatible verb, no element named on one side")
    numbers_s, numbers_c = label_numbers(cs.label), label_numbers(call.label)
    if numbers_s and numbers_c and sorted(numbers_s) != sorted(numbers_c):
        return RuleDecision(False, 0.0, "labels name different numbers")
    if cs.label == call.label or _label_nested(cs.label, call.label):
        return RuleDecision(True, 1.0, "compatible verb, same element")
    described = set(re.findall(r"\w+", norm_label(target) or ""))
    if described and set(re.findall(r"\w+", cs.label)) <= described:
        return RuleDecision(True, 1.0, "compatible verb, the element is in the target description")
    return RuleDecision(None, rationale="elements differ in wording")


# -- requirement found in an answer --------------------------------------------------------------


def decide_requirement(requirement: str, answer: str) -> RuleDecision:
    """Is the requirement (any of its `||`-separated spellings) in the answer? Case- and
    format-insensitive: '$1,234.50' finds 1234.5, and a date in any format finds the same date."""
    if not answer or not answer.strip():
        return RuleDecision(False, 0.0, "no answer")
    spellings = split_spellings(requirement)
    undecided = False
    for spelling in spellings:
        number = as_number(spelling)
        if number is not None:
            if any(abs(number - n) < 1e-9 for n in numbers_in(answer)):
                return RuleDecision(True, 1.0, f"number {spelling}")
            continue
        minutes = as_minutes(spelling)
        if minutes is not None and minutes in minutes_in(answer):
            return RuleDecision(True, 1.0, f"duration {spelling}")
        when = as_date(spelling)
        if when is not None and when in dates_in(answer):
            return RuleDecision(True, 1.0, f"date {spelling}")
        needle = squash(spelling)
        if needle and re.search(rf"(?<!\w){re.escape(needle)}(?!\w)", squash(answer)):
            return RuleDecision(True, 1.0, f"text {spelling}")
        if when is None:
            undecided = True
    if not undecided:
        return RuleDecision(False, 0.0, "number or date not in the answer")
    return RuleDecision(None, rationale="not literally in the answer")
