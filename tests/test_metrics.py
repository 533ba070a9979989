"""Pure metric functions: the spec's worked examples and edge cases, with a fake judge (equal labels)."""

from __future__ import annotations

import pytest

from core.measure import metrics as m


def same(gold, agent):
    """A fake judge: steps are equivalent when their labels are equal; '?' is unresolved."""

    def eq(i, j):
        if gold[i] == "?" or agent[j] == "?":
            return None
        return gold[i] == agent[j]

    return eq


GOLD_T1 = ["Products", "Electronics", "Smartphones filter"]
EXECUTED_T1 = ["About Us", "Products", "Electronics", "Scroll down", "Smartphones filter", "Back"]
PLAN_T1 = ["About Us", "Products", "Electronics", "Scroll down", "Smartphones filter", "Smartphones filter"]


def adjacent(actions):
    return lambda i: actions[i] == actions[i - 1]


def test_table1_step_success_and_recovery():
    eq = same(GOLD_T1, EXECUTED_T1)
    ssr = m.step_success_ordered(3, 6, eq)
    assert ssr.value == 1.0
    assert ssr.matches == ((0, 1), (1, 2), (2, 4))
    assert m.step_success_unordered(3, 6, eq).value == 1.0
    rr = m.recovery_rate(3, 6, eq)
    assert rr.value == 1.0
    assert (rr.deviations, rr.recoveries, rr.costs) == (2, 2, (2, 2))
    assert rr.mean_recovery_cost == 2.0
    assert rr.missed_gold == 0


def test_table1_element_accuracy_plan_vs_executed():
    matches = [p == e for p, e in zip(PLAN_T1, EXECUTED_T1, strict=True)]
    assert m.element_accuracy(matches).value == pytest.approx(5 / 6)


def test_table1_repetitiveness_views():
    executed = m.repetitiveness(6, adjacent(EXECUTED_T1))
    assert executed.value == 1.0 and executed.run_members == 1.0
    plan = m.repetitiveness(6, adjacent(PLAN_T1))
    assert plan.value == pytest.approx(1 - 1 / 6)
    assert plan.run_members == pytest.approx(1 - 2 / 6)


def test_table5_task82_plan_ssr():
    gold = ["Directions", "From", "To", "Foot (OSRM)", "Go", "Reverse", "Go2", "Read"]
    # The plan lacks 'Foot (OSRM)' and replaces 'Reverse Directions' by typing (two typed steps).
    plan = ["Directions", "From", "To", "Go", "Type A", "Type B", "Go2", "Read", "Stop"]
    assert m.step_success_ordered(8, 9, same(gold, plan)).value == 0.75
    assert m.step_success_unordered(8, 9, same(gold, plan)).value == 0.75


def test_connecticut_partial_success():
    found = [
        "Rhode Island" in "Massachusetts",
        "Massachusetts" in "Massachusetts",
        "New York" in "Massachusetts",
    ]
    assert m.partial_success(found, has_answer=True).value == pytest.approx(1 / 3)


def test_repetitiveness_examples():
    actions = ["A", "B", "B", "C", "A"]
    result = m.repetitiveness(5, adjacent(actions))
    assert result.value == pytest.approx(0.8)
    assert result.run_members == pytest.approx(0.6)
    assert m.repetitiveness(1, adjacent(["A"])).value == 1.0
    none = m.repetitiveness(0, adjacent([]))
    assert none.value is None and none.run_members is None
    assert m.repetitiveness(4, adjacent(["A"] * 4)).value == pytest.approx(1 / 4)
    assert m.repetitiveness(4, adjacent(["A"] * 4)).run_members == 0.0


def test_ssr_one_to_one_and_order():
    # Repeated gold steps need as many agent repetitions.
    assert m.step_success_ordered(2, 1, same(["A", "A"], ["A"])).value == 0.5
    assert m.step_success_ordered(1, 2, same(["A"], ["A", "A"])).value == 1.0
    # Ordered LCS cannot cross; the unordered variant can.
    assert m.step_success_ordered(2, 2, same(["A", "B"], ["B", "A"])).value == 0.5
    assert m.step_success_unordered(2, 2, same(["A", "B"], ["B", "A"])).value == 1.0
    assert m.step_success_ordered(0, 3, same([], ["A", "B", "C"])).value is None


def test_recovery_skip_costs_one_and_counts_missed():
    rr = m.recovery_rate(3, 2, same(["A", "B", "C"], ["A", "C"]))
    assert (rr.value, rr.deviations, rr.recoveries, rr.costs, rr.missed_gold) == (1.0, 1, 1, (1,), 1)


def test_recovery_undefined_without_incident_and_stop_on_track():
    assert m.recovery_rate(2, 2, same(["A", "B"], ["A", "B"])).value is None
    # Stopping on track with gold left: one unrecovered incident.
    rr = m.recovery_rate(3, 1, same(["A", "B", "C"], ["A"]))
    assert (rr.value, rr.deviations, rr.missed_gold) == (0.0, 1, 2)
    assert rr.mean_recovery_cost is None


def test_recovery_lookahead_bounds_recovery():
    gold = ["A", "B", "C", "D", "E", "F", "G"]
    agent = ["A", "X", "G"]
    assert m.recovery_rate(7, 3, same(gold, agent), lookahead=5).value == 0.0
    assert m.recovery_rate(7, 3, same(gold, agent), lookahead=7).value == 1.0
    # Bounds are exact: gold[g..g+L-1] with g = 1, so 'G' (gold[6]) needs L = 6, not 5.
    rr = m.recovery_rate(7, 3, same(gold, agent), lookahead=6)
    assert (rr.value, rr.missed_gold, rr.costs) == (1.0, 5, (2,))


def test_recovery_paper_code_preset():
    # No deviation and all gold fulfilled: the paper's code scores 1.0.
    assert m.recovery_rate(2, 2, same(["A", "B"], ["A", "B"]), lookahead=1, paper_code=True).value == 1.0
    # On track with gold left: every remaining gold step is its own incident.
    rr = m.recovery_rate(3, 1, same(["A", "B", "C"], ["A"]), lookahead=1, paper_code=True)
    assert (rr.value, rr.deviations) == (0.0, 2)
    # Lookahead 1: a skipped gold step is never a recovery.
    assert (
        m.recovery_rate(3, 2, same(["A", "B", "C"], ["A", "C"]), lookahead=1, paper_code=True).recoveries == 0
    )


def test_unresolved_pair_makes_metric_none_never_different():
    eq = same(["A", "?"], ["A", "B"])
    ssr = m.step_success_ordered(2, 2, eq)
    assert ssr.value is None and ssr.unresolved
    assert m.recovery_rate(2, 2, eq).unresolved
    assert m.repetitiveness(2, lambda i: None).value is None
    assert m.element_accuracy([True, None]).value is None
    assert m.partial_success([True, None], has_answer=True).unresolved


def test_partial_success_rules():
    assert m.partial_success([True], has_answer=True).value is None  # fewer than 2 requirements
    assert m.partial_success([], has_answer=True).value is None
    assert m.partial_success([False, False], has_answer=False).value == 0.0  # no answer: 0, not None
    assert m.partial_success([], has_answer=True, empty_score=1.0, min_requirements=1).value == 1.0


def test_element_accuracy_and_early_stop_truncation():
    assert m.element_accuracy([]).value is None
    assert m.element_accuracy([True, False, False, True]).value == 0.5
    actions = ["click [1]", "type [2] [x] [1]", "stop [Early stop: Same action for 3 times]"]
    assert m.truncate_at_early_stop(actions) == 2
    assert m.truncate_at_early_stop(["click [1]"]) == 1


def test_answer_category_and_success():
    assert m.answer_category("na_answer", "N/A") == "na_answer"
    assert m.answer_category("answered", "N/A") == "na_answer"
    assert m.answer_category("answered", "42") == "produced_answer"
    assert m.answer_category("early_stop", None) == "early_stop"
    assert m.answer_category("error", "") == "early_stop"
    assert m.task_success("success", False, 0.0) is True
    assert m.task_success("error", True, 1.0) is None
    assert m.task_success(None, None, 1.0) is True
    assert m.task_success(None, None, 0.5) is False
    assert m.task_success(None, None, None) is None
