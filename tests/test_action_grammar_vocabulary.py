"""The verb vocabulary (spellings -> canonical verbs) and the grammars' strict forms, on real data."""

from __future__ import annotations

import re

import pytest

from core.measure.action_grammar import VERBS
from core.measure.action_grammar.browsergym import FUNCTION_VERBS, parse_calls, strict_first_call
from core.measure.action_grammar.vocabulary import GOLD_TYPOS, STEP_VERBS, step_verb
from core.measure.action_grammar.webarena import (
    ACTION_VERBS,
    is_unparsed_output,
    parse_element_description,
    parse_webarena_action,
)


def test_every_spelling_names_a_canonical_verb():
    for table in (STEP_VERBS, GOLD_TYPOS, FUNCTION_VERBS, ACTION_VERBS):
        assert set(table.values()) <= set(VERBS), table
    assert not set(GOLD_TYPOS) & set(STEP_VERBS)  # a typo is not also a word


def test_step_verb_reads_words_typos_and_grammar_names_but_not_ordinary_words():
    assert step_verb("click") == step_verb("clicl") == step_verb("mouse_click") == "click"
    assert step_verb("hober") == "hover"
    assert step_verb("send_msg_to_user") == step_verb("answer") == "answer"
    assert step_verb("tab_close") == step_verb("close_tab") == "close_tab"
    # WebArena's `stop` and `none` are ordinary words in a sentence ("Stop when ...", "None of ...").
    assert step_verb("stop") is None and step_verb("none") is None
    # No edit distance: inflected words are not verbs.
    assert step_verb("types") is None and step_verb("clicks") is None


def test_no_gold_step_starts_with_a_misspelt_verb_the_vocabulary_misses(store, shared_data):
    """The paper's gold writes 'Clicl', 'Clock', 'Hober' for its verbs: every first word of a real gold
    step that is one edit away from a step verb must itself be read as a verb (listed as a typo)."""
    from rapidfuzz.distance import Levenshtein

    from core.ingest.gold import import_gold

    import_gold(store, shared_data / "human-gold" / "Golden Human Trajectories.xlsx", "paper")
    first_words = {
        m.group(1).lower()
        for (text,) in store.query("SELECT DISTINCT text FROM gold_steps")
        if (m := re.match(r"\s*([A-Za-z]+)", text))
    }
    assert {"clicl", "clock", "hober"} <= first_words  # the file's own typos are still there to test
    missed = {
        word: verb
        for word in first_words
        if step_verb(word) is None
        for verb in STEP_VERBS
        if len(verb) >= 4 and Levenshtein.distance(word, verb) <= 1
    }
    assert missed == {}


@pytest.mark.parametrize(
    ("text", "verb", "fields"),
    [
        ("click('12')", "click", {"element_id": "12"}),
        ("fill(bid='216', value='yoga mat')", "type", {"element_id": "216", "value": "yoga mat"}),
        ("fill('1', 'x')\nclick('2')", "type", {"value": "x"}),
        ("fill('1', 'x')\nthen some prose", "type", {"value": "x"}),  # the first line alone parses
        ("keyboard_type('abc')", "type", {"value": "abc"}),
    ],
)
def test_strict_first_call_reads_calls_in_the_grammar(text, verb, fields):
    action = strict_first_call(text)
    assert action is not None and action.verb == verb
    assert {k: getattr(action, k) for k in fields} == fields


@pytest.mark.parametrize(
    "text",
    [
        "send_msg_to_user('It's 5')",  # the lenient parser reads it; strict does not
        "click (the 'Save' button)",
        "tap('12')",  # not a BrowserGym function
        "click(x)",  # not a literal argument
        "Click on the 'Save' button",
        "click [12]",
        "",
    ],
)
def test_strict_first_call_refuses_what_it_would_only_read_leniently(text):
    assert strict_first_call(text) is None


def test_strict_and_lenient_calls_agree_where_strict_reads(store, shared_data):
    """On the real AgentLab actions, the strict first call is the lenient parser's first call."""
    from core.ingest.agentlab import import_agentlab

    import_agentlab(store, shared_data / "browsergym-run", "bg")
    actions = [
        a for (a,) in store.query("SELECT executed_action FROM steps WHERE executed_action IS NOT NULL")
    ]
    assert len(actions) >= 25
    for action in actions:
        strict = strict_first_call(action)
        assert strict is not None, action
        assert strict == parse_calls(action)[0], action


@pytest.mark.parametrize(
    "text",
    ["scroll down", "click on the 'Save' button", "press enter", "stop N/A", "click [abc]", "type [x] [y]"],
)
def test_strict_webarena_refuses_sentences_and_missing_ids(text):
    assert parse_webarena_action(text, strict=True) is None


def test_strict_webarena_reads_the_bracketed_forms():
    assert parse_webarena_action("scroll [down]", strict=True).direction == "down"
    assert parse_webarena_action("go_back", strict=True).verb == "go_back"
    assert parse_webarena_action("page_focus [1]", strict=True).verb == "tab_focus"
    typed = parse_webarena_action("type [12] [yoga mat] [1]", strict=True)
    assert (typed.element_id, typed.value) == ("12", "yoga mat")


def test_unparsed_output_is_marked():
    assert is_unparsed_output(parse_webarena_action("none"))
    assert not is_unparsed_output(parse_webarena_action("stop [none]"))


def test_element_description_without_the_repeated_id():
    assert parse_element_description("link 'Reports'") == ("link", "Reports")
    assert parse_element_description("[12] link 'Reports'") == ("link", "Reports")
    assert parse_element_description("Account Activity") == (None, "Account Activity")
