"""The rules of docs/failure-causes.md that name the benchmark's defects with evidence (other runs as
witnesses, equivalent values, a page WebArena-Verified expects), a loop before the step limit, and drift
from the sites a task names: on the shipped demo's real tasks, and on those tasks' facts changed in the one
respect each rule reads."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from demo_support import BABEL, NAV, OPAGENT

from core.diagnose.facts import StepFact, TaskFacts, WitnessFact, load_facts
from core.diagnose.rules import drifted_off_site, find_causes, site_of
from core.diagnose.rules_defects import equivalent, other_runs_agree, verified_url_reached
from core.store import Store


@pytest.fixture(scope="module")
def facts(demo_db: Path) -> dict[tuple[str, int], TaskFacts]:
    with Store(demo_db, read_only=True) as store:
        return {(f.run, f.task_id): f for run in (OPAGENT, BABEL, NAV) for f in load_facts(store, run)}


def _primary(f: TaskFacts) -> tuple[str, str] | None:
    found = find_causes(f)
    return (found[0].cause, found[0].rule) if found else None


def test_two_agents_with_the_same_refused_answer_witness_against_the_reference(facts):
    """Task 25: OpAgent and babelcloud both answered 'Roxanne Brandon Coffey' and both failed on the
    original reference, which also wanted 'Goldfish' (Verified dropped it). Each run cites the other."""
    for run, other in ((OPAGENT, BABEL), (BABEL, OPAGENT)):
        f = facts[(run, 25)]
        assert _primary(f) == ("evaluator_strict", "other_runs_agree")
        finding = other_runs_agree(f)
        check, *witnesses = finding.evidence
        assert (check.check, check.actual) == ("string_match", "Roxanne Brandon Coffey")
        assert "Goldfish" in check.reference and "Roxanne Brandon Coffey" in check.verified
        assert [(w.kind, w.run, w.task_id, w.supports) for w in witnesses] == [("witness", other, 25, True)]
        assert other in finding.summary


def test_a_run_that_passed_with_another_answer_speaks_against_the_agent(facts):
    f = facts[(OPAGENT, 25)]
    passed = WitnessFact("another-run", "AnotherAgent", "success", "Goldfish, Roxanne Brandon Coffey", None)
    assert other_runs_agree(replace(f, witnesses=(*f.witnesses, passed))) is None
    # The same agent run twice is no second witness; an answer that gives up is never witnessed.
    assert other_runs_agree(replace(f, agent="GBOX")) is None
    assert other_runs_agree(replace(f, answer="N/A")) is None


def test_a_page_verified_expects_is_a_defect_of_the_original_check(facts):
    """OpAgent's task 375 ended on the theme's edit page that WebArena-Verified's network check expects,
    while the run was scored with the original program_html check; another last page is no defect."""
    f = facts[(OPAGENT, 375)]
    assert _primary(f) == ("evaluator_strict", "verified_url_reached")
    (evidence,) = verified_url_reached(f).evidence
    assert evidence.actual == f.final_url and evidence.verified.endswith("/system_design_theme/edit/id/3")
    assert evidence.check in ("url_match", "program_html")
    elsewhere = replace(f, final_url=f.final_url.replace("/edit/id/3", "/edit/id/2"))
    assert verified_url_reached(elsewhere) is None
    assert verified_url_reached(replace(f, verdict_source="webarena-verified")) is None


def test_equivalent_values_the_check_refused():
    assert equivalent("359.546", "The total is 359.55")  # rounded to the answer's precision
    assert not equivalent("359.546", "The total is 359.56")
    assert equivalent("1700.84", "$1,700.84 in all")  # thousands separator and currency
    assert equivalent("1.2km", "Walking: 1.2 km, 16 minutes")  # a unit
    assert equivalent(
        "ssh://git@metis.lti.cs.cmu.edu:2222/yjlou/2019-nCov.git",
        "git clone ssh://git@metis.lti.cs.cmu.edu:2222/yjlou/2019-nCov.git",
    )  # the asked-for value wrapped in a command
    assert equivalent(
        "__GITLAB__/a11yproject/a11yproject.com/-/issues%20",
        "__gitlab__/a11yproject/A11yproject.com/-/issues",
    )
    assert equivalent("March 3, 2022", "It was placed on 3/3/2022")
    assert not equivalent("Goldfish", "Roxanne Brandon Coffey")
    assert not equivalent("12", "121 reviews")


def test_a_loop_that_ran_into_the_cap_is_looped(facts):
    """Tasks 148 and 335 were cut at the 70-action cap while repeating the same click: looped, with the
    step limit found beside it; the same cut without the repetition is the step limit."""
    for task in (148, 335):
        f = facts[(OPAGENT, task)]
        causes = [c.cause for c in find_causes(f)]
        assert causes[0] == "looped" and "step_limit" in causes[1:]
        # Every action and page another: no repetition, no round of pages.
        varied = tuple(
            replace(s, action=f"{s.action} #{s.idx}", url=s.url and f"{s.url}?step={s.idx}") for s in f.steps
        )
        assert [c.cause for c in find_causes(replace(f, steps=varied))][0] == "step_limit"


def test_an_attempt_on_other_sites_than_the_task_names_drifted(facts):
    f = facts[(OPAGENT, 414)]  # a gitlab task whose steps record their pages
    assert drifted_off_site(f) is None
    gitlab = [s for s in f.steps if s.url]
    assert gitlab and {site_of(s.url) for s in gitlab} == {"gitlab"} and f.sites == ("gitlab",)
    searched = tuple(
        replace(s, url=f"https://cn.bing.com/search?q=step{s.idx}") if s.url and i >= len(gitlab) // 2 else s
        for i, s in enumerate(f.steps)
    )
    away = replace(f, steps=searched, final_url="https://cn.bing.com/search?q=a11y")
    finding = drifted_off_site(away)
    assert finding.cause == "drifted" and "off-site" in finding.summary
    assert all(e.step_idx is not None and "bing.com" in e.text for e in finding.evidence)
    # A task naming two sites, one never visited, in an attempt whose steps record their pages.
    both = replace(f, sites=("gitlab", "reddit"))
    assert "never visited reddit" in drifted_off_site(both).summary
    # A run that records no page per step tells nothing about the sites it never visited.
    unrecorded = tuple(replace(s, url=None) for s in f.steps[1:])
    assert drifted_off_site(replace(both, steps=(f.steps[0], *unrecorded), final_url=None)) is None


def test_the_site_of_a_page():
    assert site_of("http://ecs_ip:7770/catalogsearch/result/?q=x") == "shopping"
    assert (
        site_of("http://ec2-3-149-78-74.us-east-2.compute.amazonaws.com:7780/admin/sales/")
        == "shopping_admin"
    )
    assert site_of("https://cn.bing.com/search?q=x") == "off-site"
    assert site_of("http://18.191.180.130/sales/order/history/") is None  # a site on an address: unknown
    assert site_of("chrome-error://chromewebdata/") is None


def test_step_facts_carry_their_page(facts):
    f = facts[(OPAGENT, 148)]
    assert all(isinstance(s, StepFact) for s in f.steps) and any(s.url for s in f.steps)
    assert f.urls[-1] == f.final_url


def test_a_commonplace_answer_witnesses_nothing(facts):
    """Both agents answered '1' to task 28: one small number is agreed on by chance too easily."""
    f = facts[(OPAGENT, 28)]
    assert [w.answer for w in f.witnesses if w.run == BABEL] == ["1"] and f.answer == "1"
    assert other_runs_agree(f) is None
    assert other_runs_agree(
        replace(f, answer="17 comments", witnesses=(replace(f.witnesses[0], answer="17 comments"),))
    )


def test_going_back_is_no_loop_and_a_repeated_cycle_is(facts):
    """babelcloud's task 335 walked the order list (open an order, go back) and said it could not find the
    purchase: the repeated 'back' key is how it walked, not a loop. Three clicks done again right after
    themselves, taking most of an attempt that said it could not do it, are."""
    from core.diagnose.rules import looped

    walked = facts[(BABEL, 335)]
    assert any("alt" in s.action for s in walked.actions) and looped(walked) is None
    f = facts[(OPAGENT, 148)]
    cycle = ("click('View Order')", "click('My Orders')", "click('Next')")
    steps = tuple(
        StepFact(i, cycle[i % 3] if i < 9 else f"type('box {i}')", "action", None, None) for i in range(12)
    )
    found = looped(replace(f, steps=steps, termination="answered", answer="I could not find the order."))
    assert (
        found is not None
        and "cycle" in found.summary
        and [e.step_idx for e in found.evidence] == list(range(9))
    )
    assert looped(replace(f, steps=steps, termination="answered", answer="Order #180")) is None


@pytest.mark.parametrize(
    ("action", "is_back"),
    [
        ("go_back()", True),
        ("press('Alt+Left')", True),
        ("mcp__gbox-browser__click: {'target': 'Back button at the top of the page'}", True),  # babelcloud
        ("mcp__gbox-browser__click: {'target': 'back navigation arrow button at the top'}", True),
        ("click('Back to cart')", False),  # a link whose label starts with the word
        ("mcp__gbox-browser__press_key: {'keys': ['backspace']}", False),
    ],
)
def test_what_counts_as_going_back(action, is_back):
    from core.diagnose.rules import GOING_BACK

    assert bool(GOING_BACK.search(action)) is is_back


def test_an_unreachable_proxy_is_the_environment(facts):
    from core.diagnose.rules_site import tool_server_errors

    f = facts[(OPAGENT, 148)]
    failed = replace(f.steps[0], error="net::ERR_TUNNEL_CONNECTION_FAILED at http://ecs_ip:3000/")
    assert tool_server_errors(replace(f, steps=(failed, *f.steps[1:]))).cause == "environment"


def test_a_page_check_with_query_values_reads_dates_as_dates(facts):
    """Verified's check of task 375 made to require a date in the query: the last page with the same date
    written another way satisfies it, another date does not; the evidence writes Verified's URL and query."""
    f = facts[(OPAGENT, 375)]
    wanted = {"evaluator": "NetworkEventEvaluator",
              "expected": {"url": "__SHOPPING_ADMIN__/reports/report_sales/tax/filter", "query_params": {"from": ["01/1/2023"]}}}  # fmt: skip
    base = "http://ecs_ip:7780/admin/reports/report_sales/tax/filter/"
    dated = replace(
        f, verified_evaluators=(wanted,), verified_data=None, final_url=f"{base}?from=2023-01-01&x=1"
    )
    (evidence,) = verified_url_reached(dated).evidence
    assert evidence.verified.endswith("/tax/filter") and evidence.actual.endswith("from=2023-01-01&x=1")
    assert verified_url_reached(replace(dated, final_url=f"{base}?from=2023-01-02")) is None
    assert verified_url_reached(replace(dated, final_url=base)) is None  # the date missing
    # A check that posts data cannot be told from the last page.
    posted = {**wanted, "expected": {**wanted["expected"], "post_data": {"name": "x"}}}
    assert verified_url_reached(replace(dated, verified_evaluators=(posted,))) is None


def test_equivalent_values_on_a_real_string_check(facts):
    """Task 2's string_match, its reference changed to a number the answer gives rounded: a defect of
    format, citing the check; an exact match read into a long answer is not."""
    from core.diagnose.rules_defects import equivalent_values

    f = facts[(OPAGENT, 2)]
    assert any(ev.evaluator == "string_match" and ev.status == "failure" for ev in f.evaluators)
    rounded = replace(f, original_reference={"must_include": ["359.546"]}, answer="The total is $359.55")
    finding = equivalent_values(rounded)
    assert finding.rule == "equivalent_values" and finding.evidence[0].check == "string_match"
    assert finding.evidence[0].reference == "359.546" and "359.55" in finding.evidence[0].actual
    long = replace(f, original_reference={"exact_match": "12"}, answer="12 " + "and more words " * 10)
    assert equivalent_values(long) is None
    assert equivalent_values(replace(rounded, answer="The total is $359.56")) is None


def test_a_count_verified_corrected_is_a_strict_evaluator(full_demo_db):
    """babelcloud's task 29 (the whole run): the original reference wants a count of 1, WebArena-Verified
    corrected it to 0 (and asks for the post's title and author too), and the agent answered 0."""
    from core.diagnose.rules_site import verified_corrected_value

    with Store(full_demo_db, read_only=True) as store:
        f = next(f for f in load_facts(store, BABEL) if f.task_id == 29)
    assert f.original_reference["must_include"] == ["1"] and f.answer == "0"
    found = verified_corrected_value(f)
    assert found is not None and found.cause == "evaluator_strict"
    assert "'1'" in found.summary and "corrected it to '0'" in found.summary
    assert verified_corrected_value(replace(f, answer="1")) is None  # the original value: not this rule
    assert verified_corrected_value(replace(f, answer="2")) is None  # neither value
    kept = replace(f, verified_data=[{**f.verified_data[0], "count": 1}])
    assert verified_corrected_value(replace(kept, answer="0")) is None  # Verified kept the original's value


def test_the_reference_a_check_failed_on_is_said_whatever_its_values(facts):
    """The evidence quotes every value the original reference requires, an exact match of 0 included (a
    count of none: it read as no reference at all), and `reference_values` lists must_include then it."""
    from core.diagnose import rules_defects

    _reference_text = rules_defects._reference_text  # the evidence's own wording
    f = facts[(OPAGENT, 25)]
    zero = replace(f, original_reference={"exact_match": 0})
    assert zero.reference_values == (0,) and _reference_text(zero) == "0"
    both = replace(
        f, original_reference={"must_include": ["a", "b"], "exact_match": "c", "reference_url": "u"}
    )
    assert both.reference_values == ("a", "b", "c") and _reference_text(both) == "a; b; c; u"
    assert _reference_text(replace(f, original_reference={})) == "(the run's own reference)"


def test_the_request_a_network_check_wants_sent_as_no_navigation(facts):
    """Demo task 677 (WebArena-Verified's own HAR): the engine read the last page navigation,
    `/sales/order`, but event 356 is the order grid's reload with `filters[status]=processing` and an empty
    `search=` (a blank query value counts), the request Verified's check wants. Without that event, or with
    another status filtered, the rule does not hold."""
    from core.diagnose.rules_defects import expected_request_not_navigation

    f = facts[(NAV, 677)]
    finding = expected_request_not_navigation(f)
    assert _primary(f) == ("evaluator_strict", "expected_request_not_navigation")
    assert [e.seq for e in finding.evidence if e.kind == "event"] == [356]
    others = tuple(e for e in f.requests if e.seq != 356)
    assert expected_request_not_navigation(replace(f, requests=others)) is None
    pending = tuple(replace(e, url=e.url.replace("processing", "pending")) for e in f.requests)
    assert expected_request_not_navigation(replace(f, requests=pending)) is None
