"""The Alignment tab reads what `metrics` stored (`alignment_steps`) and never runs the judge.

The reference below is the replay the read model used to do for every page view (the offline judge over
the task's gold x agent pairs, the metrics' alignment and recovery walk): on the demo's real runs against
its gold (the shipped demo's, and the paper's on the whole runs), the stored-and-read view must show
exactly the same rows, marks and pairs.
"""

from __future__ import annotations

import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from core.gold.versions import current_gold
from core.measure import metrics as m
from core.measure.judge import Pair
from core.measure.judge.cascade import CascadeJudge
from core.measure.metrics_run import load_task_inputs, run_task_metrics
from core.queries import alignment as qa
from core.queries.task_report import task_report
from core.store import Store


def _gold(store: Store) -> str:
    """The gold set of a demo database (each demo brings one)."""
    (name,) = store.query("SELECT name FROM gold_sets")
    return name[0]


@pytest.fixture(scope="module")
def demo(demo_db):
    with Store(demo_db, read_only=True) as s:
        yield s


def _old_view(store: Store, run: str, task_id: int, alternative: int | None) -> dict:
    """The read model as it was: the offline judge replayed for this one task at read time."""
    gold_set = _gold(store)
    gold = current_gold(store, gold_set, task_id)
    task = load_task_inputs(store, run, gold_set, [task_id])[0]
    stored = store.query_dicts(
        "SELECT * FROM metrics WHERE run = ? AND task_id = ? AND gold_set = ? AND judge_config = 'offline'"
        " AND preset = 'default'",
        [run, task_id, gold_set],
    )
    metrics_row = stored[0] if stored else None
    alternatives = list(range(len(gold.alternatives)))
    if alternative is None or alternative not in alternatives:
        chosen = metrics_row["alternative"] if metrics_row and metrics_row["alternative"] is not None else 0
        alternative = chosen if chosen in alternatives else 0
    gold_texts = [s.text for s in gold.alternatives[alternative]]
    agent = task.steps
    judge = CascadeJudge("offline")
    pairs = [Pair("gold_vs_agent", g, s.text, task.intent) for g in gold_texts for s in agent]
    pairs += [
        Pair("agent_vs_agent", agent[i - 1].repeat_text, agent[i].repeat_text, "")
        for i in range(1, len(agent))
    ]
    verdicts = dict(zip(pairs, judge.judge_many(pairs), strict=True))

    def eq(g: int, a: int) -> bool | None:
        return verdicts[Pair("gold_vs_agent", gold_texts[g], agent[a].text, task.intent)].verdict

    ordered = m.step_success_ordered(len(gold_texts), len(agent), eq)
    recovery = m.recovery_rate(len(gold_texts), len(agent), eq, lookahead=m.PRESETS["default"].lookahead,
                               paper_code=m.PRESETS["default"].paper_code_recovery)  # fmt: skip
    repeats = {
        i for i in range(1, len(agent))
        if verdicts[Pair("agent_vs_agent", agent[i - 1].repeat_text, agent[i].repeat_text, "")].verdict
    }  # fmt: skip
    stored_pairs = {
        (g, a): (source, score)
        for g, a, source, score in store.query(
            "SELECT gold_idx, agent_idx, source, score FROM alignments WHERE run = ? AND task_id = ?"
            " AND episode = ? AND gold_set = ? AND judge_config = 'offline' AND alternative = ?",
            [run, task_id, task.episode, gold_set, alternative],
        )
    }
    by_step_idx = {s.idx: i for i, s in enumerate(agent)}
    if stored_pairs:
        matches = sorted(
            (g, by_step_idx[a]) for (g, a) in stored_pairs if a in by_step_idx and g < len(gold_texts)
        )
    else:
        matches = list(ordered.matches)
    marks: dict[int, list[str]] = {}
    for a in recovery.deviated_at:
        marks.setdefault(a, []).append("deviation")
    for a, g in recovery.recovered_at:
        marks.setdefault(a, []).append(f"recovery: rejoined gold #{g + 1}")
    for a in repeats:
        marks.setdefault(a, []).append("repeat")
    rows = []

    def agent_row(a: int, g: int | None = None) -> tuple:
        s = agent[a]
        stage = score = verdict = None
        if g is not None:
            found = stored_pairs.get((g, s.idx))
            if found:
                stage, score = found
            else:
                v = verdicts[Pair("gold_vs_agent", gold_texts[g], s.text, task.intent)]
                stage, score = v.source, v.score
            verdict = "same"
        gold_text = gold_texts[g] if g is not None else None
        return (g, gold_text, s.idx, s.stated, s.text, verdict, stage, score, marks.get(a, []))

    def missed(g: int) -> tuple:
        return (g, gold_texts[g], None, None, None, None, None, None, ["missed gold"])

    g_next = a_next = 0
    for g, a in matches:
        while g_next < g:
            rows.append(missed(g_next))
            g_next += 1
        while a_next < a:
            rows.append(agent_row(a_next))
            a_next += 1
        rows.append(agent_row(a, g))
        g_next, a_next = g + 1, a + 1
    while g_next < len(gold_texts):
        rows.append(missed(g_next))
        g_next += 1
    while a_next < len(agent):
        rows.append(agent_row(a_next))
        a_next += 1
    judged = []
    matched_steps = {r[2] for r in rows if r[5] is not None}
    for r in rows:
        if r[5] is not None:
            judged.append((r[0], r[2], r[1] or "", r[4] or "", True, r[6], r[7], "offline", True))
    for s in agent:
        if s.idx in matched_steps or not gold_texts:
            continue
        scored = [
            (verdicts[Pair("gold_vs_agent", g, s.text, task.intent)], i) for i, g in enumerate(gold_texts)
        ]
        best, g = max(scored, key=lambda vi: (vi[0].score if vi[0].score is not None else -1.0, -vi[1]))
        judged.append(
            (g, s.idx, gold_texts[g], s.text, best.verdict, best.source, best.score, "offline", False)
        )
    judged.sort(key=lambda p: (p[1], p[0]))
    return {"alternative": alternative, "alternatives": alternatives, "gold_version": gold.version, "rows": rows,
            "pairs": judged, "n_agent": len(agent), "n_gold": len(gold_texts), "episode": task.episode}  # fmt: skip


def _new_view(store: Store, run: str, task_id: int, alternative: int | None) -> dict:
    view = qa.alignment_view(store, run, task_id, _gold(store), "offline", "default", alternative)
    assert view is not None and view.computed, (run, task_id, view and view.missing)
    return {
        "alternative": view.alternative, "alternatives": view.alternatives, "gold_version": view.gold_version,
        "rows": [(r.gold_idx, r.gold_text, r.agent_idx, r.stated, r.executed, r.verdict, r.stage, r.score, r.marks)
                 for r in view.rows],
        "pairs": [(p.gold_idx, p.step_idx, p.gold_text, p.agent_text, p.verdict, p.stage, p.score, p.judge_config,
                   p.aligned) for p in view.pairs],
        "n_agent": view.n_agent, "n_gold": view.n_gold, "episode": view.episode,
    }  # fmt: skip


def _measured_tasks(store: Store, run: str, answer_only: bool) -> list[int]:
    return [t for (t,) in store.query(
        "SELECT m.task_id FROM metrics m JOIN trajectories t ON t.run = m.run AND t.task_id = m.task_id"
        " AND t.episode = m.episode WHERE m.run = ? AND m.gold_set = ? AND m.gold_version IS NOT NULL"
        " AND coalesce(t.answer_only, false) = ? AND m.n_agent > 0 ORDER BY m.task_id",
        [run, _gold(store), answer_only],
    )]  # fmt: skip


def _replay_matches(store: Store, runs: tuple[tuple[str, int | None], ...]) -> tuple[int, int, int, int]:
    """Compare the stored view with the replay on every measured task of `runs` (up to a limit, plus every
    task with several alternatives): (tasks compared, rows marked, pairs checked, other alternatives)."""
    compared = marked = checked_pairs = other_alternatives = 0
    several = {t for (t,) in store.query(
        "SELECT task_id FROM gold_steps WHERE gold_set = ? GROUP BY task_id HAVING max(alternative) > 0",
        [_gold(store)],
    )}  # fmt: skip
    for run, limit in runs:
        tasks = _measured_tasks(store, run, answer_only=False)
        assert tasks, run
        for task_id in [t for i, t in enumerate(tasks) if limit is None or i < limit or t in several]:
            default = _new_view(store, run, task_id, None)
            assert default == _old_view(store, run, task_id, None), (run, task_id)
            for alt in default["alternatives"]:
                if alt != default["alternative"]:
                    assert _new_view(store, run, task_id, alt) == _old_view(store, run, task_id, alt), (
                        run,
                        task_id,
                        alt,
                    )
                    other_alternatives += 1
            compared += 1
            marked += sum(1 for r in default["rows"] if r[8])
            checked_pairs += len(default["pairs"])
    return compared, marked, checked_pairs, other_alternatives


def _mark_kinds(store: Store, run: str, limit: int) -> set[str]:
    return {mark.split(":")[0] for t in _measured_tasks(store, run, False)[:limit]
            for r in _new_view(store, run, t, None)["rows"] for mark in r[8]}  # fmt: skip


@pytest.mark.slow
def test_stored_view_equals_the_old_replay_on_real_runs(demo):
    compared, marked, checked_pairs, other_alternatives = _replay_matches(demo, (("opagent", None),))
    # Every measured OpAgent task of the shipped demo, marks and both kinds of pairs, both alternatives
    # of the two tasks that have two.
    assert compared == len(_measured_tasks(demo, "opagent", False)) >= 15
    assert marked > 20 and checked_pairs > 100 and other_alternatives == 2
    assert {"deviation", "recovery", "repeat", "missed gold"} <= _mark_kinds(demo, "opagent", 160)
    # babelcloud's tool calls too (its answer-only renders: see test_answer_only_attempts_are_not_judged).
    compared, marked, _, _ = _replay_matches(demo, (("webarena-render-babelcloud", None),))
    assert compared == len(_measured_tasks(demo, "webarena-render-babelcloud", False)) >= 10 and marked > 10


def test_stored_view_equals_the_old_replay_on_the_whole_runs(full_demo_db):
    with Store(full_demo_db, read_only=True) as store:
        compared, marked, checked_pairs, other_alternatives = _replay_matches(
            store, (("agentlab-sample", None), ("opagent", 160), ("webarena-render-babelcloud", 40))
        )
        # Real coverage: many tasks, marks of every kind, both kinds of pairs, other alternatives than the best.
        assert compared >= 150 and marked > 100 and checked_pairs > 500 and other_alternatives > 10
        assert {"deviation", "recovery", "repeat", "missed gold"} <= _mark_kinds(store, "opagent", 160)


def test_every_alternative_of_every_measured_step_is_stored(demo):
    # One row per agent step per gold alternative, for every task measured against gold.
    missing = demo.query(
        """SELECT m.task_id, g.alternative FROM metrics m
           JOIN (SELECT DISTINCT task_id, version, alternative FROM gold_steps WHERE gold_set = $g) g
             ON g.task_id = m.task_id AND g.version = m.gold_version
           WHERE m.run = 'opagent' AND m.gold_set = $g AND m.n_agent > 0
             AND (SELECT count(*) FROM alignment_steps a WHERE a.run = m.run AND a.task_id = m.task_id
                  AND a.gold_set = m.gold_set AND a.judge_config = m.judge_config AND a.preset = m.preset
                  AND a.alternative = g.alternative) <> m.n_agent""",
        {"g": _gold(demo)},
    )
    assert missing == []
    # The best alternative's matched pairs are exactly the `alignments` rows.
    diff = demo.query(
        """(SELECT a.task_id, a.gold_idx, a.agent_idx, a.match_source FROM alignment_steps a
            JOIN metrics m USING (run, task_id, gold_set, judge_config, preset)
            WHERE a.run = 'opagent' AND a.alternative = m.alternative AND a.gold_idx IS NOT NULL)
           EXCEPT (SELECT task_id, gold_idx, agent_idx, source FROM alignments WHERE run = 'opagent')"""
    )
    assert diff == []


def test_answer_only_attempts_are_not_judged(demo):
    # babelcloud's renders whose session made no call that acts on the page, with gold.
    tasks = _measured_tasks(demo, "webarena-render-babelcloud", answer_only=True)
    # At least one such task is in the shipped slice (782), more in the whole run.
    assert tasks
    for task_id in tasks[:40]:
        view = qa.alignment_view(demo, "webarena-render-babelcloud", task_id, _gold(demo))
        assert view.computed and view.answer_only and view.pairs == []
        assert all(r.marks in ([], ["missed gold"]) and r.verdict is None for r in view.rows)
        assert view.n_agent == sum(1 for r in view.rows if r.agent_idx is not None) > 0


@pytest.mark.slow
def test_read_model_never_imports_the_judge(demo_db):
    script = (
        "import sys\n"
        "from core.store import Store\n"
        "from core.queries.alignment import alignment_view\n"
        "from core.queries.task_report import task_report\n"
        f"with Store({str(demo_db)!r}, read_only=True) as s:\n"
        "    ids = [t for (t,) in s.query(\"SELECT task_id FROM metrics WHERE run = 'opagent' AND n_agent > 0"
        ' AND gold_version IS NOT NULL ORDER BY task_id LIMIT 5")]\n'
        "    (gold,) = s.query('SELECT name FROM gold_sets')[0]\n"
        "    views = [alignment_view(s, 'opagent', t, gold) for t in ids]\n"
        "    assert all(v.computed and v.rows for v in views)\n"
        "    task_report(s, 'opagent', ids[0])\n"
        "print(','.join(sorted(m for m in sys.modules if m.startswith('core.measure.judge.'))))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""  # no judge stage (cascade, rules, lexical, llm, embeddings) loaded


def test_read_model_never_asks_the_judge(demo, monkeypatch):
    def refuse(self, pairs, on_progress=None):
        raise AssertionError("a read model asked the judge")

    monkeypatch.setattr(CascadeJudge, "judge_many", refuse)
    for task_id in _measured_tasks(demo, "opagent", answer_only=False)[:10]:
        view = qa.alignment_view(demo, "opagent", task_id, _gold(demo))
        assert view.rows and pickle.loads(pickle.dumps(view)) == view  # noqa: S301 (the app cache pickles it)
        assert task_report(demo, "opagent", task_id)["alignment"]["computed"]


def test_nothing_stored_says_so_and_one_task_computes_it(demo_db, tmp_path: Path):
    db = tmp_path / "demo.duckdb"
    shutil.copy(demo_db, db)
    with Store(db) as s:
        gold_set = _gold(s)
        task_id = _measured_tasks(s, "opagent", answer_only=False)[0]
        # Another preset was never computed.
        view = qa.alignment_view(s, "opagent", task_id, gold_set, "offline", "paper-code")
        assert not view.computed and view.missing == qa.NOT_COMPUTED and view.rows == [] and view.pairs == []
        # A database migrated from schema 3 has metrics but no stored alignment steps.
        with s.transaction() as cur:
            cur.execute("DELETE FROM alignment_steps WHERE run = 'opagent' AND task_id = ?", [task_id])
        view = qa.alignment_view(s, "opagent", task_id, gold_set)
        assert not view.computed and view.missing == qa.NO_ALIGNMENT and view.metrics is not None
        run_task_metrics(s, "opagent", task_id, gold_set, "paper-code")
        run_task_metrics(s, "opagent", task_id, gold_set)
        assert qa.alignment_view(s, "opagent", task_id, gold_set, "offline", "paper-code").computed
        assert qa.alignment_view(s, "opagent", task_id, gold_set).computed
        # Recomputing one task replaces its rows (same key), never duplicates them.
        count = "SELECT count(*) FROM alignment_steps WHERE run = 'opagent' AND task_id = ?"
        n = s.query(count, [task_id])[0][0]
        run_task_metrics(s, "opagent", task_id, gold_set)
        assert s.query(count, [task_id])[0][0] == n > 0


def test_after_a_gold_edit_the_stored_rows_are_stale_and_keep_their_version(demo_db, tmp_path: Path):
    from core.gold.editing import save_gold

    db = tmp_path / "demo.duckdb"
    shutil.copy(demo_db, db)
    with Store(db) as s:
        gold_set = _gold(s)
        task_id = _measured_tasks(s, "opagent", answer_only=False)[0]
        before = qa.alignment_view(s, "opagent", task_id, gold_set)
        save_gold(
            s,
            gold_set,
            task_id,
            [[{"text": "Click on the 'Nowhere' link"}]],
            "ada",
            "test",
            before.gold_version,
        )
        after = qa.alignment_view(s, "opagent", task_id, gold_set)
        assert after.stale and after.computed and after.current_gold_version == before.gold_version + 1
        assert after.rows == before.rows and after.gold_version == before.gold_version  # what was judged
        run_task_metrics(s, "opagent", task_id, gold_set)
        fresh = qa.alignment_view(s, "opagent", task_id, gold_set)
        assert not fresh.stale and fresh.n_gold == 1 and fresh.gold_version == after.current_gold_version
