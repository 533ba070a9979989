"""Regression check for the judge's cheap stages: record every pair's rule decision and offline verdict,
change the judge, compare. Not a benchmark (no timing), so `python -m bench` does not run it.

    python -m bench.judge_parity record BEFORE.json   # before changing core/judge or core/action_grammar
    python -m bench.judge_parity compare BEFORE.json  # after: every recorded pair decided again

Pairs come from three sets:
- `real`: every pair the demo's metrics ask (agentlab-sample and webarena-render-babelcloud against
  paper-gold, `load_task_inputs` + `task_pairs`), the demo built into a temporary directory;
- `tests`: every pair the judge and metrics tests hand to the rule and lexical stages (recorded by
  running those tests with the stage functions wrapped);
- `corpus`: the raw grammar strings of the real data, which the metrics never send (they compare
  readable sentences): the other WebArena render runs' stated vs executed actions, consecutive raw
  actions, gold steps vs raw actions, each raw action vs its own readable sentence, and consecutive
  gold steps against each other (every verb spelling of the human gold).
A pair's decision is the rule stage's (verdict, score, rationale) and the offline cascade's verdict
without the embedding stage (verdict, source, score, approximate); the embedding stage only sees pairs
the first two stages left open, so equal first stages give equal embedding input.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import orjson

import core.measure.judge.rules as rules

TEST_FILES = (
    "tests/test_judge_rules.py",
    "tests/test_judge_llm.py",
    "tests/test_metrics.py",
    "tests/test_metrics_run.py",
    "tests/test_reports_paper.py",
)
OTHER_RENDER_RUNS = (
    "HuiyuanYan__webarena/results",
    "DEM1TASSE__webarena/your_result_dir",
    "devin-distyl__webarena/parallel_demo_results/example_result",
    "OpenLemur__webarena/test",
    "Ziha0-Zhang__webarena/my_results",
    "neelkandlikar__webarena/out",
)
DECIDERS = {
    "decide_steps": "gold_vs_agent",
    "decide_repeat": "agent_vs_agent",
    "decide_stated_vs_executed": "stated_vs_executed",
    "decide_requirement": "requirement_in_answer",
}


def _test_pairs() -> set[tuple[str, str, str, str]]:
    """Run the judge tests with the stage entry points wrapped; every (kind, a, b) they decide."""
    import pytest

    seen: set[tuple[str, str, str, str]] = set()
    originals = {name: getattr(rules, name) for name in DECIDERS}

    def wrap(name: str):
        def recorded(a, b, *args, **kwargs):
            if isinstance(a, str) and isinstance(b, str):
                seen.add((DECIDERS[name], a, b, ""))
            return originals[name](a, b, *args, **kwargs)

        return recorded

    for name in DECIDERS:
        setattr(rules, name, wrap(name))
    # Import the stages only now, so their `from core.measure.judge.rules import ...` binds the wrappers.
    import core.measure.judge.lexical as lexical

    score_pair = lexical.score_pair

    def recorded_score(kind, a, b, *args, **kwargs):
        seen.add((kind, a, b, ""))
        return score_pair(kind, a, b, *args, **kwargs)

    lexical.score_pair = recorded_score
    try:
        code = pytest.main(["-q", "-x", "-p", "no:cacheprovider", *TEST_FILES])
    finally:
        lexical.score_pair = score_pair
        for name, fn in originals.items():
            setattr(rules, name, fn)
    if code != 0:
        raise SystemExit(f"the judge tests failed (exit {code}); record on a green tree")
    return seen


def _real_and_corpus_pairs() -> tuple[set, set]:
    from core.ingest.demo import build_demo
    from core.ingest.webarena_render import import_webarena_render
    from core.measure.metrics_run import load_task_inputs, task_pairs
    from core.paths import shared_data_dir
    from core.store import Store

    data = shared_data_dir()
    real: set[tuple[str, str, str, str]] = set()
    corpus: set[tuple[str, str, str, str]] = set()
    with tempfile.TemporaryDirectory() as tmp:
        build_demo(Path(tmp) / "parity.duckdb", source="shared")
        with Store(Path(tmp) / "parity.duckdb") as store:
            for run in ("agentlab-sample", "webarena-render-babelcloud"):
                for task in load_task_inputs(store, run, "paper-gold"):
                    real.update((p.kind, p.a, p.b, p.context) for p in task_pairs(task))
            for i, folder in enumerate(OTHER_RENDER_RUNS):
                import_webarena_render(store, data / "webarena-render" / folder, f"render-{i}")
            gold: dict[int, list[str]] = {}
            for task_id, texts in store.query(
                "SELECT task_id, list(text ORDER BY alternative, idx) FROM gold_steps GROUP BY task_id"
            ):
                gold[task_id] = list(dict.fromkeys(texts))
                for previous, text in zip(texts, texts[1:], strict=False):
                    corpus.add(("gold_vs_agent", previous, text, ""))
                    corpus.add(("agent_vs_agent", previous, text, ""))
            by_episode: dict[tuple, list[tuple]] = {}
            for run, task_id, episode, stated, executed, readable in store.query(
                """SELECT run, task_id, episode, stated_action, executed_action, readable FROM steps
                   WHERE executed_action IS NOT NULL ORDER BY run, task_id, episode, idx"""
            ):
                by_episode.setdefault((run, task_id, episode), []).append((stated, executed, readable))
            for (_, task_id, _), steps in by_episode.items():
                for n, (stated, executed, readable) in enumerate(steps):
                    if stated:
                        corpus.add(("stated_vs_executed", stated, executed, ""))
                        corpus.add(("gold_vs_agent", stated, executed, ""))
                    corpus.add(("stated_vs_executed", executed, executed, ""))
                    if readable:
                        corpus.add(("gold_vs_agent", executed, readable, ""))
                        corpus.add(("agent_vs_agent", executed, readable, ""))
                    if n:
                        corpus.add(("agent_vs_agent", steps[n - 1][1], executed, ""))
                        corpus.add(("stated_vs_executed", steps[n - 1][1], executed, ""))
                    corpus.update(("gold_vs_agent", g, executed, "") for g in gold.get(task_id, ()))
    return real, corpus - real


def _decide(pairs: list[tuple[str, str, str, str]]) -> list[dict]:
    from core.measure.judge import Pair
    from core.measure.judge.cascade import CascadeJudge, rule_stage

    as_pairs = [Pair(kind, a, b, ctx) for kind, a, b, ctx in pairs]
    offline = CascadeJudge("offline").judge_many(as_pairs)
    out = []
    for pair, verdict in zip(as_pairs, offline, strict=True):
        rule = rule_stage(pair)
        out.append(
            {
                "rule": [rule.verdict, rule.score, rule.rationale],
                "offline": [verdict.verdict, verdict.source, verdict.score, verdict.approximate],
            }
        )
    return out


def record(path: Path) -> None:
    tests = _test_pairs()
    real, corpus = _real_and_corpus_pairs()
    tests -= real | corpus
    entries = []
    for name, pairs in (("real", real), ("tests", tests), ("corpus", corpus)):
        ordered = sorted(pairs)
        for pair, decision in zip(ordered, _decide(ordered), strict=True):
            entries.append({"set": name, "pair": list(pair), **decision})
    path.write_bytes(orjson.dumps(entries))
    counts = {name: sum(e["set"] == name for e in entries) for name in ("real", "tests", "corpus")}
    print(f"recorded {len(entries)} pairs to {path}: {counts}")


def _difference(before: dict, after: dict) -> str | None:
    """The most serious way two decisions of one pair differ, or None when they are identical."""
    if before["rule"][:2] != after["rule"][:2]:
        return "rule verdict"
    if before["offline"][:2] != after["offline"][:2]:
        return "offline verdict"
    if before["offline"] != after["offline"]:
        return "offline score only"
    if before["rule"][2] != after["rule"][2]:
        return "rule rationale only"
    return None


def compare(path: Path) -> int:
    entries = orjson.loads(path.read_bytes())
    fresh = _decide([tuple(e["pair"]) for e in entries])
    found: dict[str, list[tuple[dict, dict]]] = {}
    for entry, now in zip(entries, fresh, strict=True):
        what = _difference(entry, now)
        if what:
            found.setdefault(what, []).append((entry, now))
    for name in ("real", "tests", "corpus"):
        total = sum(e["set"] == name for e in entries)
        changed = sum(e["set"] == name for group in found.values() for e, _ in group)
        print(f"{name}: {total - changed}/{total} pairs decided identically (verdict, score, rationale)")
    for what in ("rule verdict", "offline verdict", "offline score only", "rule rationale only"):
        group = found.get(what, [])
        print(f"{what}: {len(group)} pairs")
        for entry, now in group[:40]:
            print(f"  [{entry['set']}] {entry['pair'][:3]}\n    before {entry['rule']} {entry['offline']}")
            print(f"    after  {now['rule']} {now['offline']}")
    return 1 if found else 0


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("record", "compare"):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    if argv[0] == "record":
        record(Path(argv[1]))
        return 0
    return compare(Path(argv[1]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
