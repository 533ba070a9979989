"""The WebArena action grammar and the gold step text parser, on strings taken from the real data."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.ingest.webarena_render import parse_render
from core.measure.action_grammar import is_na_answer
from core.measure.action_grammar.webarena import (
    describe,
    element_from_axtree,
    gold_value,
    parse_gold_step,
    parse_webarena_action,
    stated_action,
)


@pytest.mark.parametrize(
    ("text", "fields"),
    [
        # Rendered forms quoted in the render README.
        (
            "click [1096] where [1096] is [1096] button 'All Store Views' hasPopup: menu",
            {
                "verb": "click",
                "element_id": "1096",
                "element_role": "button",
                "element_label": "All Store Views",
            },
        ),
        (
            "type [5008] [01/01/2022] where [5008] is [5008] textbox 'From *' required: True",
            {"verb": "type", "element_id": "5008", "value": "01/01/2022", "element_label": "From *"},
        ),
        (
            "hover [1177] where [1177] is [1177] gridcell 'Sprite Stasis Ball 65 cm' required: False",
            {"verb": "hover", "element_role": "gridcell", "element_label": "Sprite Stasis Ball 65 cm"},
        ),
        ("click [16] where [16] is Account Activity", {"verb": "click", "element_label": "Account Activity"}),
        # LLM forms of the grammar.
        ("type [12] [yoga mat] [1]", {"verb": "type", "element_id": "12", "value": "yoga mat"}),
        ("type [12] [a [b] c] [0]", {"verb": "type", "value": "a [b] c"}),
        ("press [Meta+a]", {"verb": "press", "key": "Meta+a"}),
        ("scroll [down]", {"verb": "scroll", "direction": "down"}),
        ("goto [http://x.org/a?b=1]", {"verb": "goto", "target_url": "http://x.org/a?b=1"}),
        ("go_back", {"verb": "go_back"}),
        ("new_tab", {"verb": "new_tab"}),
        ("tab_focus [2]", {"verb": "tab_focus", "value": "2"}),
        ("page_focus [1]", {"verb": "tab_focus", "value": "1"}),
        ("close_tab", {"verb": "close_tab"}),
        ("stop [Quest Lumaflex™ Band]", {"verb": "answer", "answer": "Quest Lumaflex™ Band"}),
        ("stop [a [nested] answer]", {"verb": "answer", "answer": "a [nested] answer"}),
        ("none", {"verb": "noop"}),
    ],
)
def test_webarena_actions(text, fields):
    action = parse_webarena_action(text)
    assert action is not None and action.raw == text
    assert {k: getattr(action, k) for k in fields} == fields


def test_other_grammars_are_not_claimed():
    assert parse_webarena_action("click('184')") is None
    assert parse_webarena_action("send_msg_to_user('hi')") is None
    assert parse_webarena_action("") is None
    assert parse_webarena_action("Let's think step by step") is None


def test_readable_sentences():
    assert describe(
        parse_webarena_action("click [1096] where [1096] is [1096] button 'All Store Views'")
    ) == ("Click button 'All Store Views'")
    assert describe(parse_webarena_action("stop [Early stop: Same action for 3 times]")) == (
        "Harness early stop: Same action for 3 times"
    )
    assert describe(parse_webarena_action("none")) == "No action (the output did not parse)"


def test_na_answers():
    assert is_na_answer("N/A") and is_na_answer("'N/A'") and not is_na_answer("NA Band")
    # One definition for every grammar: BrowserGym's send_msg_to_user('"N/A"') and a bare NA too.
    assert (
        is_na_answer(' "n/a" ') and is_na_answer("NA") and not is_na_answer(None) and not is_na_answer("N/A.")
    )


def test_stated_action_and_axtree_lookup_on_a_real_render(shared_data: Path):
    path = shared_data / "webarena-render" / "Ziha0-Zhang__webarena" / "my_results" / "render_0.html"
    step = parse_render(path.read_text(encoding="utf-8")).steps[0]
    assert stated_action(step.raw_output) == "click [1096]"
    assert element_from_axtree(step.observation, "1096") == ("button", "All Store Views")
    assert element_from_axtree(step.observation, "999999") == (None, None)
    assert stated_action("no summary here") is None


@pytest.mark.parametrize(
    ("text", "verb", "label", "value"),
    [
        # The brief's examples and rows of the paper's gold file.
        ("Click on 'Reports'", "click", "Reports", None),
        ("Type 'yoga mat' in the search bar", "type", None, "yoga mat"),
        ("Type '404 for many URLs' into the 'Title' textbox.", "type", "Title", "404 for many URLs"),
        ("Type 'Let's keep the project alive' into the 'Title (required)' textbox.", "type",
         "Title (required)", "Let's keep the project alive"),
        ("Type '404' in the the 'Search or filter results", "type", "Search or filter results", "404"),
        ('Type "Blanchon" in the "Username or email address" search box', "type", "Username or email address",
         "Blanchon"),
        ("In the 'Product' filter type 'fleece'", "type", "Product", "fleece"),
        ("under the 'Sales' section click on the 'Orders' link", "click", "Orders", None),
        ("Select the 'Period' dropdown and choose 'Year'.", "select", "Period", "Year"),
        ("from the 'Period' dropdown select the 'Month' option", "select", "Period", "Month"),
        ("Select the option 'Foot (OSRM)' from the combobox", "select", None, "Foot (OSRM)"),
        ("Press 'Enter'", "press", None, "Enter"),
        ("Press Ctrl + A", "press", None, "Ctrl+A"),
        ("Press the 'Go' button", "click", "Go", None),
        ("Scroll down", "scroll", None, "down"),
        ("Go to http://wikipedia.com", "goto", None, "http://wikipedia.com"),
        ("Go back", "go_back", None, None),
        ("Clicl on the \"astro-gaming-a50-wireless-headset-base-station\" link", "click",
         "astro-gaming-a50-wireless-headset-base-station", None),
        ("Hober over BP, East Carson Street", "hover", None, None),
        ("Clear the 'City' textbox", "clear", "City", None),
        ("Mark the checkbox \"Brown\"", "check", "Brown", None),
        ("Double click on the 'Tokyo Japanese Food Store' element on the map", "dblclick",
         "Tokyo Japanese Food Store", None),
        ("Extract the price information of the current product", "unknown", None, None),
        ("Check the cart to confirm if the 'X' has been added successfully.", "unknown", None, None),
    ],
)  # fmt: skip
def test_gold_step_text(text, verb, label, value):
    action = parse_gold_step(text)
    assert (action.verb, action.element_label, gold_value(action)) == (verb, label, value)


def test_gold_parser_never_drops_quoted_text():
    # Every quoted string of a click/type/select row ends up in the label or the value.
    for text in ("Click on the link 'Women's Clothing' now", "Type 'x' into the 'Y' textbox"):
        action = parse_gold_step(text)
        assert {action.element_label, action.value} - {None} <= {"Women's Clothing", "x", "Y"}
        assert action.element_label is not None
