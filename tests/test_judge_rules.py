"""Rule and lexical stages, the offline cascade, and the cache key."""

from __future__ import annotations

import importlib

import pytest

from core.errors import InputError
from core.measure.judge import Pair
from core.measure.judge.cascade import CascadeJudge
from core.measure.judge.lexical import score_pair
from core.measure.judge.rules import (
    canonicalize,
    decide_repeat,
    decide_requirement,
    decide_stated_vs_executed,
    decide_steps,
)
from core.measure.judge.values import as_date, as_number
from core.measure.llm.cache import cache_key


@pytest.mark.parametrize(
    ("text", "verb", "label", "value"),
    [
        ("Click on the 'REPORTS' link in the navigation menu.", "click", "reports", None),
        ("Click on the link 'The A11Y Project / a11yproject.com' ", "click", "the a11y project / a11yproject.com", None),
        ("Type 'Let's keep the project alive' into the 'Title (required)' textbox.", "type",
         "title (required)", "Let's keep the project alive"),
        ("Type '404' in the  the 'Search or filter results' ", "type", "search or filter results", "404"),
        ("Select the 'Period' dropdown and choose 'Year'.", "select", "period", "Year"),
        ("Select 'Year' in combobox 'Period'", "select", "period", "Year"),
        ("Click link 'My Account'", "click", "my account", None),
        ("In the 'Catalog' menu, click 'Products'", "click", "products", None),
        ("Click on the Reports link in the menu", "click", "reports", None),
        ("fill('216', 'yoga mat')", "type", None, "yoga mat"),
        ("type [12] [yoga mat] [1]", "type", None, "yoga mat"),
        ("click [1096] where [1096] is [1096] button 'All Store Views'", "click", "all store views", None),
        ("send_msg_to_user('42 orders')", "answer", None, "42 orders"),
        ("stop [N/A]", "answer", None, "N/A"),
    ],
)  # fmt: skip
def test_canonicalize_keeps_labels_and_values(text, verb, label, value):
    canon = canonicalize(text)
    assert (canon.verb, canon.label, canon.value) == (verb, label, value)


def test_direction_and_keys_are_kept():
    assert canonicalize("Scroll up to the top").direction == "up"
    assert canonicalize("scroll(0, -300)").direction == "up"
    assert canonicalize("scroll [down]").direction == "down"
    assert canonicalize("Press enter").key == "enter"
    assert canonicalize("keyboard_press('Enter')").key == "enter"


def test_values_numbers_and_dates():
    assert as_number("$1,234.50") == 1234.5
    assert as_number("twelve") is None
    assert as_date("03/31/2022") == as_date("2022-03-31") == as_date("March 31, 2022")


def test_step_rules():
    assert decide_steps("Click on the 'REPORTS' link.", "Click link 'Reports'").verdict is True
    assert decide_steps(
        "Type '01/01/2022' into the 'From' textbox.", "Type '1/1/2022' into textbox 'From'"
    ).verdict
    # The paper's rule 2: different dates, names or numbers are different steps.
    assert (
        decide_steps("Type '01/01/2022' into 'From'", "Type '01/02/2022' into textbox 'From'").verdict
        is False
    )
    assert (
        decide_steps("Type 'Byte Blaze' into 'Assignee'", "Type 'Lukas Opp' into textbox 'Assignee'").verdict
        is False
    )
    # Incompatible verbs, and scroll directions.
    assert decide_steps("Scroll down", "Click link 'Reports'").verdict is False
    assert decide_steps("Scroll down", "Scroll up").verdict is False
    # A label that only differs in wording is not the rule's call.
    assert decide_steps("Click 'All Customers'", "Click link 'Customer Grid'").verdict is None
    # A sentence with no known verb passes.
    assert decide_steps("Assign the issue to myself.", "Click button 'Assign to me'").verdict is None


def test_repeat_rule_uses_bid_or_label():
    assert decide_repeat("Click link 'Next' [bid 12]", "Click link 'Next' [bid 40]").verdict is True
    assert decide_repeat("Click link 'Next' [bid 12]", "Click link 'Prev' [bid 13]").verdict is False
    assert (
        decide_repeat("Type 'a' into textbox 'Q' [bid 5]", "Type 'b' into textbox 'Q' [bid 5]").verdict
        is False
    )
    assert decide_repeat("Scroll down", "Scroll down").verdict is True


def test_stated_vs_executed_rule():
    assert (
        decide_stated_vs_executed("click [1234]", "click [1234] where [1234] is link 'Reports'").verdict
        is True
    )
    assert (
        decide_stated_vs_executed("type [35] [Randyland ] [1]", "type [35] [Randyland] [0]").verdict is True
    )
    assert decide_stated_vs_executed("click [12]", "click [13] where [13] is link 'X'").verdict is False
    assert decide_stated_vs_executed("", "click [13]").verdict is False
    assert decide_stated_vs_executed("click [12]", "None").verdict is False


def test_requirement_rule():
    assert decide_requirement("1234.5", "The total is $1,234.50.").verdict is True
    assert decide_requirement("365.42", "It cost $365.43").verdict is False
    assert decide_requirement("2022-03-31", "It was placed on March 31, 2022").verdict is True
    assert decide_requirement("Massachusetts", "massachusetts").verdict is True
    assert decide_requirement("Anglebert Dinkherhump || Dinkherhump", "Reviewer: Dinkherhump").verdict is True
    assert decide_requirement("Massachusetts", "").verdict is False
    assert decide_requirement("11min", "It takes 11 minutes to walk there").verdict is True
    assert decide_requirement("1hr 44min", "Walking: 7.8km, 1:44 (1 hour 44 minutes)").verdict is True
    assert decide_requirement("New York", "Massachusetts").verdict is None  # words: the fuzzier stages decide


def test_lexical_band():
    assert score_pair("gold_vs_agent", "Click 'Customers'", "Click link 'Customers '").verdict is True
    assert score_pair("gold_vs_agent", "Click 'Reports'", "Click link 'Sign out'").verdict is False
    assert score_pair("gold_vs_agent", "Click 'All Customers'", "Click link 'Customer Grid'").verdict is None
    assert score_pair("requirement_in_answer", "New York", "Massachusetts").verdict is False


def test_connecticut_requirements_offline():
    judge = CascadeJudge("offline")
    answer = "Massachusetts"
    verdicts = judge.judge_many(
        [Pair("requirement_in_answer", r, answer, "") for r in ("Rhode Island", "Massachusetts", "New York")]
    )
    assert [v.verdict for v in verdicts] == [False, True, False]


def test_offline_settles_ambiguous_band_approximately():
    pair = Pair("gold_vs_agent", "Click the 'All Customers' link", "Click link 'Customer Grid'", "")
    (verdict,) = CascadeJudge("offline").judge_many([pair])
    assert verdict.source == "offline" and verdict.approximate and verdict.verdict in (True, False)


def test_cascade_without_llm_is_refused():
    with pytest.raises(InputError, match="TRAJREVIEW_LLM_MODEL"):
        CascadeJudge("cascade")


def test_cache_key_covers_every_input():
    pair = Pair("gold_vs_agent", "a", "b", "c")
    base = cache_key(pair, model="m", prompt_version="1")
    assert base == cache_key(Pair("gold_vs_agent", "a", "b", "c"), model="m", prompt_version="1")
    assert base != cache_key(pair, model="m2", prompt_version="1")
    assert base != cache_key(pair, model="m", prompt_version="2")
    assert base != cache_key(pair, model="m", prompt_version="1", judge_version="0")
    assert base != cache_key(Pair("agent_vs_agent", "a", "b", "c"), model="m", prompt_version="1")
    assert base != cache_key(Pair("gold_vs_agent", "a", "b", ""), model="m", prompt_version="1")


def test_embedding_stage_is_optional():
    from core.measure.judge import embeddings
    from core.measure.judge.cascade import make_judge

    ok, why = embeddings.available()
    judge = make_judge("offline")
    assert (judge.embeddings is not None) == ok
    if not ok:
        assert "skipped" in why
        with pytest.raises(RuntimeError):
            embeddings.EmbeddingStage()


@pytest.mark.embeddings
@pytest.mark.skipif(
    not importlib.import_module("core.measure.judge.embeddings").available()[0], reason="no [embeddings]"
)
def test_embedding_stage_only_rejects():
    from core.measure.judge.embeddings import EmbeddingStage

    stage = EmbeddingStage()
    far = Pair("gold_vs_agent", "Click the 'Reports' link", "Type 'yoga mat' into the search box")
    near = Pair("gold_vs_agent", "Click the 'Reports' link", "Click link 'Reports'")
    (reject_far, _), (reject_near, _) = stage.rejects([far, near])
    assert reject_far and not reject_near


# -- adversarial: normalising must keep quoted labels, values, numbers, field and direction words --
@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Click 'Save'", "Click 'Save draft'"),
        ("Click on the 'Save' button", "Click button 'Save draft'"),
        ("scroll up", "scroll down"),
        ("Scroll up the page", "scroll [down]"),
        ("Scroll up", "scroll(0, 300)"),
        ("Type '5'", "Type '50'"),
        ("Type '5' into the 'Qty' field", "type [12] [50] [1]"),
        ("Type '5'", "fill('12', '50')"),
        ("Type 'abc' into the 'First name' field", "Type 'abc' into the 'Last name' field"),
        ("Click on the 'Page 2' link", "Click link 'Page 3'"),
        ("Click on 'Order #000000170'", "Click link 'Order #000000171'"),
        ("Select 'Red' from the 'Color' dropdown", "Select 'Red' from the 'Size' dropdown"),
        ("Type 'C++' into the 'Language' field", "Type 'C#' into the 'Language' field"),
    ],
)
def test_canonical_forms_keep_what_tells_steps_apart(a, b):
    ca, cb = canonicalize(a), canonicalize(b)
    assert (ca.label, ca.value, ca.direction) != (cb.label, cb.value, cb.direction)
    # No cheap stage may call them the same step; only an LLM (or, offline, an approximate guess) may.
    assert decide_steps(a, b).verdict is not True
    assert decide_repeat(a, b).verdict is False
    lexical = score_pair("gold_vs_agent", a, b).verdict
    assert lexical is not True
    (verdict,) = CascadeJudge("offline").judge_many([Pair("gold_vs_agent", a, b)])
    assert verdict.verdict is False or (verdict.verdict is True and verdict.approximate)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("scroll up", "scroll down"),
        ("Type '5'", "Type '50'"),
        ("Type '5' into the 'Qty' field", "type [12] [50] [1]"),
        ("Click on the 'Page 2' link", "Click link 'Page 3'"),
        ("Click on 'Order #000000170'", "Click link 'Order #000000171'"),
        ("Type 'C++' into the 'Language' field", "Type 'C#' into the 'Language' field"),
    ],
)
def test_other_numbers_values_and_directions_are_different_by_rule(a, b):
    assert decide_steps(a, b).verdict is False


def test_same_numbers_in_labels_still_match():
    assert decide_steps("Click on the 'Page 2' link", "Click link 'page 2'").verdict is True
    assert decide_steps("Click on 'Order #000000170'", "Click link 'Order 000000170'").verdict is not False
    assert decide_steps("Click on the 'Reports' link", "Click link 'Reports (2)'").verdict is None


# -- grammar actions are parsed by core.measure.action_grammar; the judge maps canonical verbs to classes ----
def test_every_canonical_verb_has_a_class():
    from core.measure.action_grammar import VERBS
    from core.measure.judge.english import VERB_CLASS

    assert set(VERB_CLASS) == set(VERBS)


@pytest.mark.parametrize(
    ("verb", "fields", "verb_class"),
    [
        ("click", {"element_role": "link", "element_label": "Reports"}, "click"),
        ("dblclick", {"element_role": "link", "element_label": "Reports"}, "click"),
        ("check", {"element_role": "checkbox", "element_label": "Agree"}, "click"),
        ("focus", {"element_role": "textbox", "element_label": "Name"}, "click"),
        ("hover", {"element_role": "menuitem", "element_label": "Catalog"}, "hover"),
        ("type", {"element_role": "textbox", "element_label": "Name", "value": "Ann"}, "type"),
        ("clear", {"element_role": "textbox", "element_label": "Name"}, "clear"),
        ("select", {"element_role": "combobox", "element_label": "Size", "value": "M"}, "select"),
        ("press", {"key": "Enter"}, "press"),
        ("scroll", {"direction": "up"}, "scroll"),
        ("goto", {"target_url": "http://example.com/a"}, "goto"),
        ("go_back", {}, "go_back"),
        ("go_forward", {}, "go_forward"),
        ("upload", {"element_role": "button", "element_label": "File", "value": "a.pdf"}, "upload"),
        ("drag", {"element_role": "img", "element_label": "Card"}, "drag"),
        ("answer", {"answer": "42"}, "answer"),
        ("infeasible", {"answer": "no such page"}, "answer"),
        ("noop", {}, "noop"),
        # new_tab / tab_focus / close_tab: their sentences ("Open a new tab", "Switch to tab 2") are
        # not read back as tab actions by the English reader; see docs/metrics.md.
    ],
)
def test_readable_sentences_read_back_to_their_verb_class(verb, fields, verb_class):
    """The sentence trajreview writes for an action (what the metrics compare) names its class."""
    from core.measure.action_grammar import ParsedAction, readable

    assert canonicalize(readable(ParsedAction(raw="", verb=verb, **fields))).verb == verb_class


@pytest.mark.parametrize(
    ("text", "verb"),
    [
        ("Clicl on the 'Reports' link", "click"),
        ("Clock '1925' fron the 'Year' dropdown", "click"),
        ("Hober over BP, East Carson Street", "hover"),
        ("Stop when the page has loaded", "unknown"),
        ("None of the results match", "unknown"),
        ("none", "unknown"),  # the WebArena harness's unparsed output: no chosen action
        ("page_focus [1]", "tab"),
        ("keyboard_type('abc')", "type"),
    ],
)
def test_verbs_come_from_the_grammar_vocabulary(text, verb):
    assert canonicalize(text).verb == verb


def test_grammar_actions_through_action_grammar():
    assert canonicalize("fill(bid='216', value='yoga mat')") == canonicalize("fill('216', 'yoga mat')")
    assert canonicalize("scroll").direction == "down"
    assert canonicalize("press [ Enter ]").key == "enter"
    # The render file's label is read as the readable sentence reads it (icon glyphs dropped).
    rendered = canonicalize("click [2616] where [2616] is [2616] link '\\ue60a REPORTS'")
    assert (rendered.label, rendered.element_id) == ("reports", "2616")
    assert canonicalize("click [5] where [5] is link 'Save'").label == "save"
    # Text the grammar would only read leniently is read as a sentence.
    assert canonicalize("click (the 'Save' button)").label == "save"
    # EAR: the tab index and the checked state are part of the action.
    assert decide_stated_vs_executed("tab_focus [1]", "tab_focus [2]").verdict is False
    assert decide_stated_vs_executed("page_focus [1]", "tab_focus [1]").verdict is True
    assert decide_repeat("check('12')", "uncheck('12')").verdict is False
    assert decide_stated_vs_executed("none", "click [12]").verdict is False  # no chosen action


@pytest.mark.xfail(
    strict=True, reason="known: 'Select the X option from the Y dropdown' reads X as the label"
)
def test_select_option_from_dropdown_reads_option_as_value():
    gold = "Select the 'Black' option from the 'Color' dropdown"
    assert decide_steps(gold, "Select 'Black' in combobox 'Color'").verdict is not False


def test_rule_and_lexical_stages_are_pure_domain():
    """No store-level module (or DuckDB) behind the cheap stages: requirements import the separator
    from core.measure.requirement_spellings, not the other way round."""
    import subprocess
    import sys

    script = (
        "import sys\n"
        "import core.measure.judge.rules, core.measure.judge.lexical, core.measure.requirement_spellings\n"
        "print(','.join(sorted(m for m in sys.modules if m in ('duckdb', 'core.store', 'core.measure.requirements'))))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == ""
