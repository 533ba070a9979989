"""Regression on real data for the rule stage, without stored verdicts: every assertion compares two
decisions computed here, so a change that alters a verdict shows up as a broken property.

1. Two readings of one action. Every step of the real runs is stored twice: `executed_action`
   (BrowserGym or WebArena grammar, or a tool-using agent's call, parsed by core.measure.action_grammar)
   and `readable` (the sentence the metrics compare, parsed as English by the judge). The two readings
   must not disagree on the steps the metrics see (observe-only calls are none of them).
2. Properties of the real gold × agent pairs the metrics ask: symmetric, unchanged by whitespace the
   normaliser folds, every gold step equivalent to itself, and another number in a label or value is
   another step (the paper's rule 2).
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from core.measure.judge.rules import (
    canonicalize,
    decide_repeat,
    decide_steps,
    parse_browsergym,
    parse_tool,
    parse_webarena,
)
from core.measure.judge.values import as_date, as_number, label_numbers
from core.store import Store

RENDER_RUNS = (
    "HuiyuanYan__webarena/results",
    "DEM1TASSE__webarena/your_result_dir",
    "devin-distyl__webarena/parallel_demo_results/example_result",
    "OpenLemur__webarena/test",
    "Ziha0-Zhang__webarena/my_results",
    "neelkandlikar__webarena/out",
    "babelcloud__webarena/gbox/trajectories",
)


@pytest.fixture(scope="module")
def real_steps(tmp_path_factory: pytest.TempPathFactory, shared_data: Path):
    """(steps in order with run/task/episode, gold step texts by task) of every real run we import."""
    from build_cache import built_db

    from core.measure.metrics_run import load_task_inputs, task_pairs

    def build(path: Path) -> None:  # its source is part of the cache key
        from core.ingest.agentlab import import_agentlab
        from core.ingest.gold import import_gold
        from core.ingest.opagent import import_opagent
        from core.ingest.webarena_render import import_webarena_render

        with Store(path) as store:
            import_gold(store, shared_data / "human-gold" / "Golden Human Trajectories.xlsx", "paper")
            import_agentlab(store, shared_data / "browsergym-run", "agentlab")
            for i, folder in enumerate(RENDER_RUNS):
                import_webarena_render(store, shared_data / "webarena-render" / folder, f"render-{i}")
            # OpAgent's readable sentences: more real gold x agent pairs (its executed actions are OpAgent's
            # call form, so they are not read twice like the others).
            import_opagent(store, shared_data / "oagent-run", "opagent")

    inputs = [shared_data / "human-gold", shared_data / "browsergym-run", shared_data / "oagent-run",
              *(shared_data / "webarena-render" / folder for folder in RENDER_RUNS)]  # fmt: skip
    path = built_db(tmp_path_factory, "readings", build, inputs)
    with Store(path) as store:
        steps = store.query(
            """SELECT run, task_id, episode, executed_action, readable, element_id FROM steps
               WHERE executed_action IS NOT NULL AND readable IS NOT NULL AND run <> 'opagent' AND kind = 'action'
               ORDER BY run, task_id, episode, idx"""
        )
        gold: dict[int, set[str]] = {}
        for task_id, text in store.query("SELECT task_id, text FROM gold_steps"):
            gold.setdefault(task_id, set()).add(text)
        asked = {
            (pair.a, pair.b)
            for run in ("agentlab", *(f"render-{i}" for i in range(len(RENDER_RUNS))), "opagent")
            for task in load_task_inputs(store, run, "paper")
            for pair in task_pairs(task)
            if pair.kind == "gold_vs_agent"
        }
    return steps, gold, sorted(asked)


def _in_grammar(action: str) -> bool:
    return (parse_browsergym(action) or parse_webarena(action) or parse_tool(action)) is not None


def test_rendered_actions_read_like_their_sentences(real_steps):
    """A render file's `click [id] where [id] is [id] link 'X'` names its element: the grammar reading
    and the readable sentence give the same verb class, label, value, key and direction."""
    steps, _, _ = real_steps
    labelled = [(raw, text) for _, _, _, raw, text, _ in steps if " where [" in raw and parse_webarena(raw)]
    assert len(labelled) >= 15
    for raw, text in labelled:
        grammar, english = parse_webarena(raw), canonicalize(text)
        fields = ("verb", "label", "value", "key", "direction")
        assert [getattr(grammar, f) for f in fields] == [getattr(english, f) for f in fields], (raw, text)


def test_repeat_decisions_agree_across_readings(real_steps):
    """RepR's rule on consecutive raw actions and on the same steps' sentences (with their bids)."""
    steps, _, _ = real_steps
    compared = Counter()
    for before, after in zip(steps, steps[1:], strict=False):
        if before[:3] != after[:3]:
            continue
        raw = decide_repeat(before[3], after[3]).verdict
        sentences = [f"{s[4]} [bid {s[5]}]" if s[5] else s[4] for s in (before, after)]
        assert raw is decide_repeat(*sentences).verdict, (before[3], after[3], sentences)
        compared[raw] += 1
    assert compared[True] >= 20 and compared[False] >= 50  # both outcomes are exercised


def test_gold_decisions_never_contradict_across_readings(real_steps):
    """Against every gold step of its task, an action and its sentence are never decided oppositely:
    one reading may leave a pair to the later stages (a raw bid has no label), never flip it."""
    steps, gold, _ = real_steps
    outcomes = Counter()
    for _, task_id, _, raw, text, _ in steps:
        if not _in_grammar(raw):
            continue
        for step in gold.get(task_id, ()):
            pair = (decide_steps(step, raw).verdict, decide_steps(step, text).verdict)
            assert None in pair or pair[0] is pair[1], (step, raw, text, pair)
            outcomes[pair] += 1
    assert sum(outcomes.values()) >= 1000
    assert outcomes[(True, True)] >= 1 and outcomes[(False, False)] >= 500


def test_real_pairs_are_symmetric_and_fold_whitespace(real_steps):
    _, _, asked = real_steps
    assert len(asked) >= 3000
    for gold, agent in asked:
        verdict = decide_steps(gold, agent).verdict
        assert decide_steps(agent, gold).verdict is verdict, (gold, agent)
        spaced = " " + gold.replace(" ", "  ").replace(" ", "\u00a0", 1) + " "
        assert decide_steps(spaced, agent).verdict is verdict, (gold, agent)


def test_every_real_gold_step_with_a_verb_is_equivalent_to_itself(real_steps):
    _, _, asked = real_steps
    read = [g for g in {g for g, _ in asked} if canonicalize(g).verb != "unknown"]
    assert len(read) >= 1000
    assert [g for g in read if decide_steps(g, g).verdict is not True] == []


def _another_number(gold: str, mutated: str) -> bool:
    """The mutation changed a number of the label, or a value that is one number or one date."""
    before, after = canonicalize(gold), canonicalize(mutated)
    numbers = label_numbers(before.label), label_numbers(after.label)
    if numbers[0] and numbers[1] and sorted(numbers[0]) != sorted(numbers[1]):
        return True
    values = before.value, after.value
    if not (values[0] and values[1]) or values[0] == values[1]:
        return False
    return all(as_number(v) is not None for v in values) or all(as_date(v) is not None for v in values)


def test_another_number_in_a_real_gold_step_is_another_step(real_steps):
    """Each digit of each real gold step, changed by one: when that changes a number of the label or a
    numeric/date value ('Page 2', 'Order #170', '01/01/2022'), the rule says different."""
    _, _, asked = real_steps
    checked = 0
    for gold in sorted({g for g, _ in asked}):
        if canonicalize(gold).verb == "unknown":
            continue
        for digit in re.finditer(r"\d", gold):
            at = digit.start()
            mutated = f"{gold[:at]}{(int(gold[at]) + 1) % 10}{gold[at + 1 :]}"
            if _another_number(gold, mutated):
                assert decide_steps(gold, mutated).verdict is False, (gold, mutated)
                checked += 1
    assert checked >= 500
