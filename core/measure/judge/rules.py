"""Rule stage: canonicalise both sides of a pair into (verb class, element label, value) and decide the
clear cases.

Three inputs are understood. The BrowserGym grammar (`click('12')`, `fill('12', 'x')`) and the WebArena
grammar (`click [12]`, `type [12] [text] [1]`, `click [12] where [12] is [12] link 'X'`) are parsed by
`core.measure.action_grammar` in their strict forms: text those parsers would only read leniently is read here
as a sentence instead. English step sentences (the human gold, "Click on the 'X' link", and
trajreview's readable sentences, "Click link 'X'") are parsed here, with the grammar's verb vocabulary
(`core.measure.action_grammar.vocabulary`); the judge only maps canonical verbs to the classes it compares.
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
from core.measure.action_grammar.vocabulary import step_verb
from core.measure.action_grammar.webarena import is_unparsed_output, parse_webarena_action
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

# -- canonical form ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Canon:
    verb: str  # verb class: click, type, select, press, scroll, goto, go_back, answer, ..., unknown
    label: str | None = None  # normalised element label
    value: str | None = None  # typed text, selected option, answer (raw, compared via `same_value`)
    element_id: str | None = None
    key: str | None = None
    direction: str | None = None
    grammar: str = "english"  # browsergym | webarena | tool | english


# Canonical verb (core.measure.action_grammar.VERBS) -> the class the judge compares on. How each verb is
# spelled, in either grammar or in English, is the grammar's knowledge (core.measure.action_grammar.vocabulary).
VERB_CLASS = {
    "click": "click", "dblclick": "click", "check": "click", "focus": "click", "hover": "hover",
    "type": "type", "clear": "clear", "select": "select", "press": "press", "scroll": "scroll",
    "goto": "goto", "go_back": "go_back", "go_forward": "go_forward", "new_tab": "tab",
    "tab_focus": "tab", "close_tab": "tab", "upload": "upload", "drag": "drag", "answer": "answer",
    "infeasible": "answer", "noop": "noop", "unknown": "unknown",
}  # fmt: skip

# Classes that may describe the same intent (a link click is a navigation; an option can be clicked).
_COMPATIBLE = {frozenset({"click", "goto"}), frozenset({"click", "select"}), frozenset({"click", "hover"})}
_ROLE_WORDS = {
    "link", "button", "textbox", "dropdown", "tab", "option", "checkbox", "filter", "menu", "combobox",
    "searchbox", "field", "box", "icon", "menuitem", "radio", "listbox", "heading", "element", "bar",
}  # fmt: skip
_DIRECTIONS = ("down", "up", "left", "right")


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


# -- English sentences (gold steps and readable agent steps) ------------------------------------
# A quote opens after start/space/bracket and closes before space/punctuation/end, so an apostrophe
# inside a value ("Let's keep the project alive") is kept.
_QUOTED = re.compile(r"(?:(?<=^)|(?<=[\s(\[:,]))(['\"‘“])(.+?)['\"’”](?=[\s.,;:)\]!?]|$)")
_BID_MARK = re.compile(r"\s*\[bid ([^\]]+)\]\s*$")
_ELEMENT_ID = re.compile(r"^(?:\w+ )?\[(\S+)\]$")
_URL = re.compile(r"https?://\S+|\b[\w.-]+\.(?:com|org|net)\S*")
_WORD = re.compile(r"[A-Za-z_:]+")


def _unquoted_target(rest: str) -> str | None:
    rest = re.sub(r"^(?:on|the|a|an|in|into|at)\s+", "", rest.strip(), flags=re.I)
    rest = re.sub(r"^(?:the|a|an)\s+", "", rest, flags=re.I)
    rest = re.split(r"\s+(?:to|in|on|in order|so that|which|under|from|for|at)\s+|[,.;(]", rest, maxsplit=1)[
        0
    ]
    words = rest.split()
    while words and words[-1].lower() in _ROLE_WORDS:
        words.pop()
    while words and words[0].lower() in _ROLE_WORDS:
        words.pop(0)
    return norm_label(" ".join(words)) if words else None


def parse_english(text: str) -> Canon:
    """A step sentence; verb `unknown` when no known verb starts a clause."""
    text = fold(text)
    element_id = None
    bid = _BID_MARK.search(text)
    if bid:
        element_id, text = bid.group(1), text[: bid.start()]
    quotes = [(m.start(), m.end(), m.group(2)) for m in _QUOTED.finditer(text)]
    verb_word, canonical, verb_pos = None, None, len(text)
    for m in _WORD.finditer(text):
        if any(s <= m.start() < e for s, e, _ in quotes):
            continue
        word = m.group(0).lower().rstrip(":")
        canonical = step_verb(word)
        if canonical:
            verb_word, verb_pos = word, m.end()
            break
        if m.start() > 60:
            break
    if verb_word is None:
        return Canon("unknown", label=norm_label(quotes[0][2]) if quotes else None)
    after = [q for q in quotes if q[0] >= verb_pos] or quotes
    rest = text[verb_pos:]
    low_rest = rest.lower()
    verb = VERB_CLASS.get(canonical, "unknown")
    if verb_word == "go" and re.match(r"\s*back\b", low_rest):
        return Canon("go_back")
    if verb_word == "go" and re.match(r"\s*forward\b", low_rest):
        return Canon("go_forward")
    if verb_word in ("enter", "hit") and not after and low_rest.strip(" .").split()[:1] in ([], ["key"]):
        return Canon("press", key="enter")
    if verb == "press" or (verb_word == "enter" and not after):
        key = after[0][2] if after else (low_rest.strip(" .").split() or ["enter"])[0]
        key = key.lower().strip(" .'\"")
        if key == "the":
            key = (low_rest.split() + ["enter"])[1].strip(" .")
        return Canon("press", key="enter" if key == "return" else key, element_id=element_id)
    if verb == "scroll":
        direction = next((d for d in _DIRECTIONS if re.search(rf"\b{d}\b", low_rest)), "down")
        return Canon("scroll", direction=direction)
    if verb in ("click", "hover", "clear"):
        if after:
            return Canon(verb, label=norm_label(after[0][2]), element_id=element_id)
        id_only = _ELEMENT_ID.match(rest.strip())
        if id_only:
            return Canon(verb, element_id=id_only.group(1))
        return Canon(verb, label=_unquoted_target(rest), element_id=element_id)
    if verb == "type":
        if not after:
            value = re.split(r"\s+(?:into|in|on)\s+", rest.strip(), maxsplit=1)[0].strip(" .")
            return Canon("type", value=value or None, element_id=element_id)
        value = after[0][2]
        label = norm_label(after[1][2]) if len(after) > 1 else None
        if label is None:
            tail = re.split(r"\s+(?:into|in|on)\s+", rest[after[0][1] - verb_pos :], maxsplit=1)
            label = _unquoted_target(tail[1]) if len(tail) > 1 else None
        return Canon("type", label=label, value=value, element_id=element_id)
    if verb == "select":
        if len(after) >= 2:
            between = text[after[0][1] : after[1][0]].lower()
            label_first = bool(re.search(r"\b(choose|select|pick|option|set)\b", between))
            label, value = (after[0][2], after[1][2]) if label_first else (after[1][2], after[0][2])
            return Canon("select", label=norm_label(label), value=value, element_id=element_id)
        if after:
            return Canon("select", value=after[0][2], element_id=element_id)
        return Canon("select", value=_unquoted_target(rest), element_id=element_id)
    if verb == "goto":
        url = _URL.search(rest)
        target = after[0][2] if after else (url.group(0) if url else _unquoted_target(rest))
        return Canon("goto", label=norm_label(target), value=url.group(0) if url else None)
    if verb == "answer":
        return Canon("answer", value=after[0][2] if after else rest.strip(" :"))
    return Canon(verb, label=norm_label(after[0][2]) if after else None, element_id=element_id)


_english = lru_cache(maxsize=100_000)(parse_english)


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


# What a statement announcing a tool call reads as (EAR of tool-using agents, see decide_stated_vs_tool).
_ANNOUNCING = re.compile(
    r"\b(?:I will|I'll|I am going to|I'm going to|I need to|I should|I must|I can now|let me|let's|"
    r"my next action is to|the next action is to|next,? I(?:'ll| will)?)\s+"
    r"(?:(?:now|first|also|then|just|quickly|go ahead and|try to|try|attempt to|proceed to)\s+)*",
    re.I,
)
_CLAUSE_END = re.compile(r"\s+(?:and then|then|and|so that|so|which|while|because)\s+|[;:]\s|\.\s|\.$", re.I)
# Words that announce a click in other words ("close this dialog", "open the Reports menu").
_CLICK_WORDS = frozenset(
    {"close", "dismiss", "hide", "collapse", "expand", "toggle", "submit", "tap", "open", "press", "hit",
     "choose", "pick", "uncheck", "check", "apply", "sort", "filter", "access", "visit", "navigate"}
)  # fmt: skip
# An element named only by a pronoun or a generic noun ("click on it", "click this result").
# "continue scrolling", "start by filling in", "try clicking": the verb that follows is the action.
_LEAD_IN = re.compile(r"^(?:(?:continue|keep|start|begin|try|proceed)(?: by| with)?\s+)+", re.I)
_FILLER = frozenset({"this", "that", "these", "those", "first", "again", "now", "too", "also", "instead"})
_NO_NAME = frozenset(
    {"it", "this", "that", "these", "those", "them", "one", "here", "there", "the", "a", "an", "result",
     "suggestion", "option", "item", "entry", "element", "field", "button", "link", "box", "first", "new",
     "next", "correct", "right", "appropriate", "relevant", "above", "below", "again"}
)  # fmt: skip


def announced_call(stated: str) -> Canon:
    """The call a statement announces: the clause after "let me / I'll / I need to …" read as a step
    sentence; a clause opening with a click in other words ("close this dialog", "press the Search
    button") is a click on what it names; an element named by a pronoun or a generic noun ("click on
    it", "this suggestion") is no name."""
    text = fold(stated)
    found = _ANNOUNCING.search(text)
    clause = _CLAUSE_END.split(text[found.end() :] if found else text, maxsplit=1)[0].strip()
    clause = _LEAD_IN.sub("", clause)
    by = re.search(r"\bby (\w+ing)\b", clause)
    if by and step_verb(by.group(1).lower()) is None and _gerund_verb(by.group(1)):
        clause = clause[by.start(1) :]  # "get the directions by clicking "Go"": the click is the call
    words = clause.split(maxsplit=1)
    if words and (verb := _gerund_verb(words[0])):
        clause = " ".join([verb, *words[1:]])  # "scrolling down" reads as "scroll down"
    canon = parse_english(clause)
    if canon.verb == "unknown" and re.match(r"(?i)switch\b.*\btab\b", clause):
        canon = Canon("tab")
    named = re.search(r"\b(?:up|down|left|right)\b", clause, re.I)
    if canon.verb == "scroll" and not named and re.search(r"\btop\b", clause, re.I):
        canon = Canon("scroll", direction="up")
    first = (clause.split() or [""])[0].lower()
    names_element = re.search(r"\b(?:button|link|icon|tab|option|checkbox)\b", clause, re.I)
    if first in _CLICK_WORDS and (canon.verb == "unknown" or (canon.verb == "press" and names_element)):
        quoted = _QUOTED.search(clause)
        label = norm_label(quoted.group(2)) if quoted else _unquoted_target(clause[len(first) :])
        canon = Canon("click", label=label)
    if canon.label:
        words = [w for w in canon.label.split() if w not in _FILLER]
        label = " ".join(words) or None
        if label is None or set(re.findall(r"\w+", label)) <= _NO_NAME:
            label = None
        canon = Canon(canon.verb, label=label, value=canon.value, key=canon.key, direction=canon.direction)
    return canon


def _gerund_verb(word: str) -> str | None:
    """'scrolling' -> 'scroll', 'typing' -> 'type', 'clicking' -> 'click'; None when no verb of ours."""
    word = word.lower()
    if not word.endswith("ing") or len(word) < 6:
        return None
    stem = word[:-3]
    for candidate in (stem, stem + "e", stem[:-1] if len(stem) > 2 and stem[-1] == stem[-2] else stem):
        if step_verb(candidate):
            return candidate
    return None


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
    quoted_value = bool(cs.value) and bool(_QUOTED.search(fold(stated)))
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
