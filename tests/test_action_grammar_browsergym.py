"""The BrowserGym action grammar: calls -> canonical verbs, bids -> AXTree role and name, sentences."""

from __future__ import annotations

import pytest

from core.files import safe_pickle
from core.measure.action_grammar import VERBS
from core.measure.action_grammar.browsergym import (
    FUNCTION_VERBS,
    AXTree,
    answer_call,
    parse_action,
    parse_calls,
    stated_action,
)

AXTREE = "\n".join(
    [
        "RootWebArea 'One Stop Market', focused",
        "\t[210] banner ''",
        "\t\t[215] link 'My Account'",
        "\t\t[235] link '\ue611 My Cart'",
        "\t\t[252] combobox '\ue615 Search', autocomplete='both', hasPopup='listbox', expanded=False",
        "\t\t[257] button 'Search', disabled=True",
        '\t\t[260] link "It\'s here"',
        "\t\t[1501] combobox '', hasPopup='menu'",
        "\t\t\tStaticText 'Search'",
    ]
)


def test_every_function_maps_to_a_canonical_verb():
    assert set(FUNCTION_VERBS.values()) <= set(VERBS)


@pytest.mark.parametrize(
    ("action", "verb", "fields", "sentence"),
    [
        ("click('215')", "click", {"element_id": "215", "element_role": "link", "element_label": "My Account"},
         "Click link 'My Account'"),
        ("fill('252', 'yoga mat')", "type", {"value": "yoga mat", "element_label": "Search"},
         "Type 'yoga mat' into combobox 'Search'"),
        ("select_option('1501', '50')", "select", {"value": "50", "element_role": "combobox", "element_label": None},
         "Select '50' in combobox [1501]"),
        ("press('252', 'Enter')", "press", {"key": "Enter"}, "Press Enter on combobox 'Search'"),
        ("hover('235')", "hover", {"element_label": "My Cart"}, "Hover link 'My Cart'"),
        ("scroll(0, 500)", "scroll", {"direction": "down"}, "Scroll down"),
        ("scroll(0, -300)", "scroll", {"direction": "up"}, "Scroll up"),
        ("goto('http://example.com/a')", "goto", {"target_url": "http://example.com/a"}, "Go to http://example.com/a"),
        ("go_back()", "go_back", {}, "Go back"),
        ("new_tab()", "new_tab", {}, "Open a new tab"),
        ("tab_focus(1)", "tab_focus", {"value": "1"}, "Switch to tab 1"),
        ("send_msg_to_user('$365.42')", "answer", {"answer": "$365.42"}, "Answer '$365.42'"),
        ("report_infeasible('no such order')", "infeasible", {"answer": "no such order"},
         "Report the task infeasible: 'no such order'"),
        ("noop()", "noop", {}, "Wait"),
        ("click('260')", "click", {"element_label": "It's here"}, "Click link 'It's here'"),
        ("click('9999')", "click", {"element_id": "9999", "element_label": None}, "Click element [9999]"),
        ("click(bid='215', button='left')", "click", {"element_label": "My Account"}, "Click link 'My Account'"),
    ],
)  # fmt: skip
def test_single_calls(action, verb, fields, sentence):
    parsed, text = parse_action(action, AXTREE)
    assert parsed.verb == verb
    for key, value in fields.items():
        assert getattr(parsed, key) == value, key
    assert text == sentence
    assert parsed.raw == action


def test_multi_call_action_keeps_every_call():
    # README (browsergym-run): "58 action strings contain more than one call, one per line".
    action = "fill('252', 'jaw bruxism')\nclick('257')"
    calls = parse_calls(action)
    assert [c.verb for c in calls] == ["type", "click"]
    parsed, text = parse_action(action, AXTREE)
    assert parsed.verb == "type" and parsed.value == "jaw bruxism" and parsed.raw == action
    assert text == "Type 'jaw bruxism' into combobox 'Search', then click button 'Search'"


def test_answer_inside_a_multi_call_action():
    action = "fill('252', 'x')\nsend_msg_to_user('done')"
    assert answer_call(action).answer == "done"
    assert parse_action(action, AXTREE)[0].answer == "done"


def test_malformed_answers_keep_their_text():
    # An unescaped quote is a SyntaxError for Python; the text is still the answer.
    parsed, text = parse_action("send_msg_to_user('It's 5')")
    assert parsed.verb == "answer" and parsed.answer == "It's 5"
    calls = parse_calls("click('215')\nfill('252', 'it's')")
    assert [c.verb for c in calls] == ["click", "type"]


def test_code_is_never_executed(tmp_path):
    marker = tmp_path / "ran"
    for action in (
        f"__import__('os').system('touch {marker}')",
        f"click(__import__('os').system('touch {marker}'))",
        f"exec(\"open('{marker}', 'w')\")",
    ):
        parsed, text = parse_action(action, AXTREE)
        assert parsed.verb in ("unknown", "click")
        assert parsed.element_id is None
    assert not marker.exists()


def test_unknown_and_empty_actions():
    assert parse_action(None) == (None, None)
    assert parse_action("   ") == (None, None)
    parsed, text = parse_action("import os")
    assert parsed.verb == "unknown" and text.startswith("Unparsed action")


def test_axtree_lookup_strips_icon_glyphs_and_handles_absent_bids():
    tree = AXTree(AXTREE)
    assert tree.lookup("235") == ("link", "My Cart")
    assert tree.lookup("210") == ("banner", "")
    assert tree.lookup("404") is None
    assert tree.lookup(None) is None


def test_real_observation_resolves_the_readme_example(shared_data):
    # data-formats.md section 2: "resolve click('184') to link 'My Account' from the observation the
    # action was chosen on"; webarena.188 step 0 is that click (README sample table, webarena.188).
    step = safe_pickle.load_path(shared_data / "browsergym-run" / "webarena.188" / "step_0.pkl.gz").fields
    assert step["action"] == "click('184')"
    parsed, text = parse_action(step["action"], step["obs"]["axtree_txt"])
    assert (parsed.element_role, parsed.element_label) == ("link", "My Account")
    assert text == "Click link 'My Account'"


def test_stated_action_is_the_announced_step():
    thought = (
        'I see a "My Account" link in the header. I will click on it to open the account page. '
        "If that fails, I will search instead."
    )
    assert stated_action(thought) == "I will click on it to open the account page."
    assert stated_action("The order total is $365.42.") is None
    assert stated_action(None) is None
