"""The judge's English reader: the canonical form (`Canon`, `VERB_CLASS`) every rule compares on, step
sentences (the human gold, "Click on the 'X' link", and trajreview's readable sentences, "Click link
'X'") and the statement that announces a tool-using agent's call ("Now let me click the "Go" button").
The verb vocabulary is the grammar's (`core.measure.action_grammar.vocabulary`); the decisions are in
`core.measure.judge.rules`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from core.measure.action_grammar.vocabulary import step_verb
from core.measure.judge.values import fold, norm_label

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

_ROLE_WORDS = {
    "link", "button", "textbox", "dropdown", "tab", "option", "checkbox", "filter", "menu", "combobox",
    "searchbox", "field", "box", "icon", "menuitem", "radio", "listbox", "heading", "element", "bar",
}  # fmt: skip
_DIRECTIONS = ("down", "up", "left", "right")


# -- English sentences (gold steps and readable agent steps) ------------------------------------
# A quote opens after start/space/bracket and closes before space/punctuation/end, so an apostrophe
# inside a value ("Let's keep the project alive") is kept.
QUOTED = re.compile(r"(?:(?<=^)|(?<=[\s(\[:,]))(['\"‘“])(.+?)['\"’”](?=[\s.,;:)\]!?]|$)")
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
    quotes = [(m.start(), m.end(), m.group(2)) for m in QUOTED.finditer(text)]
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
        quoted = QUOTED.search(clause)
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
