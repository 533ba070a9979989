"""The review read models without Streamlit, on the demo database's real runs; and the app's cache."""

from __future__ import annotations

import shutil

import pytest
from demo_support import BABEL, OPAGENT, WAV

from core.queries import network, runs, task, triage
from core.queries.records import field_docs
from core.store import Store


@pytest.fixture
def demo(demo_db):
    with Store(demo_db, read_only=True) as s:
        yield s


def test_runs_table_counts_match_the_evaluations(demo):
    table = runs.runs_table(demo).set_index("run")
    for run in table.index:
        by_status = dict(
            demo.query("SELECT status, count(*) FROM evaluations WHERE run = ? GROUP BY 1", [run])
        )
        row = table.loc[run]
        assert row["successes"] == by_status.get("success", 0)
        assert row["failures"] >= by_status.get("failure", 0)
        assert row["successes"] + row["failures"] + row["errors"] == row["scored"]
        if row["scored"]:
            assert row["ci_low"] <= row["success_rate"] <= row["ci_high"]


def test_crashed_attempts_are_errors(full_demo_db):
    """agentlab-sample: five answer attempts crashed or were interrupted and carry no verdict of their own:
    they are errors (never successes, never silently dropped)."""
    with Store(full_demo_db, read_only=True) as demo:
        table = runs.runs_table(demo).set_index("run")
        crashed = demo.query(
            "SELECT count(*) FROM trajectories t WHERE run = 'agentlab-sample' AND is_answer"
            " AND termination IN ('error', 'interrupted')"
            " AND NOT EXISTS (SELECT 1 FROM evaluations e WHERE e.run = t.run AND e.task_id = t.task_id)"
        )[0][0]
    assert crashed == 5 and table.loc["agentlab-sample", "errors"] == crashed
    assert table.loc["agentlab-sample", "tasks"] == table.loc["agentlab-sample", "scored"] == 11


def test_success_by_site_uses_the_official_buckets(demo):
    per_site = runs.success_by_site(demo, BABEL).set_index("site")
    assert (
        per_site["scored"].sum()
        == demo.query("SELECT count(*) FROM evaluations WHERE run = ?", [BABEL])[0][0]
    )
    assert "gitlab-reddit" in per_site.index  # multi-site tasks are their own bucket
    expected = demo.query(
        "SELECT count(*) FILTER (WHERE e.status = 'success'), count(*) FROM evaluations e JOIN tasks t USING (task_id)"
        " WHERE e.run = ? AND t.site_key = 'map'",
        [BABEL],
    )[0]
    assert (per_site.loc["map", "successes"], per_site.loc["map", "scored"]) == expected


def test_triage_filter_search_sort_and_neighbours(demo):
    table = triage.triage_table(demo, BABEL)
    n = demo.query("SELECT count(DISTINCT task_id) FROM trajectories WHERE run = ?", [BABEL])[0][0]
    assert len(table) == n and len(set(table.task_ids())) == n
    failed_shopping = triage.apply_filter(
        table, triage.TriageFilter(sites=("shopping",), verdicts=("failure",))
    )
    assert {r.site for r in failed_shopping.rows} == {"shopping"}
    assert {r.verdict for r in failed_shopping.rows} == {"failure"} and len(failed_shopping) >= 3
    without_gold = triage.apply_filter(table, triage.TriageFilter(has_gold="without gold"))
    assert not any(r.has_gold for r in without_gold.rows)
    assert len(without_gold) == n - sum(r.has_gold for r in table.rows)
    by_steps = triage.apply_filter(table, triage.TriageFilter(sort="steps (most first)"))
    steps = [r.steps for r in by_steps.rows if r.steps is not None]
    assert steps == sorted(steps, reverse=True) and by_steps.rows[-1].steps is None or None not in steps
    found = triage.apply_filter(table, triage.TriageFilter(text="YOGA STRAP"))  # case-insensitive, in answers
    assert 2 in set(found.task_ids())
    ordered = failed_shopping.task_ids()
    prev_, next_ = triage.task_neighbours(
        table, triage.TriageFilter(sites=("shopping",), verdicts=("failure",)), ordered[1]
    )
    assert (prev_, next_) == (ordered[0], ordered[2])
    assert triage.neighbours([1, 2, 3, 4], {1, 4}, 2) == (1, 4)  # a passed task's neighbours are failed ones
    assert triage.neighbours([1, 2], {1, 2}, 1) == (None, 2)


def test_filter_fingerprint_changes_with_every_field():
    base = triage.TriageFilter()
    variants = [triage.TriageFilter(sites=("map",)), triage.TriageFilter(text="x"), triage.TriageFilter(sort="task"),
                triage.TriageFilter(has_gold="with gold"), triage.TriageFilter(labels=("wrong element",))]  # fmt: skip
    assert len({base.fingerprint(), *(v.fingerprint() for v in variants)}) == 1 + len(variants)


def test_network_filters_run_in_the_database(demo):
    counts = network.event_count(demo, WAV, 107)
    hidden = network.events(demo, WAV, 107)
    assert len(hidden) == counts["events"] - counts["static"]
    redirects = network.events(demo, WAV, 107, network.EventFilter(show_static=True, status_classes=("3xx",)))
    assert len(redirects) > 0 and all(300 <= s < 400 for s in redirects["status"])
    detail = network.event_detail(demo, WAV, 107, int(hidden["seq"].iloc[0]))
    assert detail["url"] == hidden["url"].iloc[0] and isinstance(detail["request_headers"], dict)


def test_screenshot_bytes_reads_only_regular_image_files(tmp_path):
    import os

    png = tmp_path / "a.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n")
    assert task.screenshot_bytes(str(png)) == png.read_bytes()
    (tmp_path / "secret.txt").write_text("x")
    assert task.screenshot_bytes(str(tmp_path / "secret.txt")) is None  # not an image suffix
    os.mkfifo(tmp_path / "fifo.png")
    assert task.screenshot_bytes(str(tmp_path / "fifo.png")) is None  # would block the page forever
    (tmp_path / "link.png").symlink_to(png)
    assert task.screenshot_bytes(str(tmp_path / "link.png")) is None
    assert task.screenshot_bytes(None) is None and task.screenshot_bytes(str(tmp_path / "gone.png")) is None


def test_app_cache_is_keyed_by_arguments_and_database_fingerprint(demo_db, tmp_path, monkeypatch):
    from dashboard import db

    path = tmp_path / "cache.duckdb"
    shutil.copy(demo_db, path)
    monkeypatch.setenv("TRAJREVIEW_DB", str(path))
    a = db.read(triage.triage_table, OPAGENT)
    b = db.read(triage.triage_table, BABEL)
    with Store(path, read_only=True) as s:
        counts = dict(s.query("SELECT run, count(*) FROM evaluations GROUP BY run"))
    assert (len(a), len(b)) == (counts[OPAGENT], counts[BABEL])  # one run's rows never answer for another
    assert len(a) != len(b)
    with pytest.raises(TypeError, match="module-level core function"):
        db.read(lambda store: runs.runs_table(store))
    before = db.fingerprint()
    with Store(path) as s, s.transaction() as cur:
        cur.execute("DELETE FROM evaluations WHERE run = ? AND task_id = 51", [OPAGENT])
    assert db.fingerprint() != before
    after = db.read(triage.triage_table, OPAGENT)
    # The same call after the write reads the new state: the evaluation row is gone, so the verdict now
    # comes from the episode's own success flag.
    assert a.row(51).verdict_source == "opagent-score"
    assert after.row(51).verdict_source == "source-success"
    assert after.row(51).verdict == "failure"


def _reference_filter(rows: list[triage.TriageRow], f: triage.TriageFilter) -> list[int]:
    """Triage's filter and sort semantics spelled out in plain Python over the typed rows."""
    from core.queries.annotations import split_labels

    def isin(value, wanted) -> bool:
        return value in wanted or (triage.NONE in wanted and value is None)

    def keep(r: triage.TriageRow) -> bool:
        text = f.text.strip()
        labels = split_labels(r.label)
        return all((
            not f.sites or r.site in f.sites,
            not f.verdicts or r.verdict in f.verdicts,
            not f.evaluators or bool(set(f.evaluators) & {e.strip() for e in (r.failing_evaluators or "").split(",")}),
            not f.terminations or isin(r.termination, f.terminations),
            not f.task_types or isin(r.task_type, f.task_types),
            f.hard is None or r.hard is (f.hard == triage.HARD[0]),
            f.has_gold is None or r.has_gold == (f.has_gold == triage.HAS_GOLD[0]),
            not f.labels or bool(set(f.labels) & labels) or (triage.NONE in f.labels and not labels),
            not text
            or text.casefold() in "\n".join((r.intent or "", r.answer or "", r.explanation or "")).casefold()
            or (text.isdigit() and r.task_id == int(text)),
        ))  # fmt: skip

    sort_keys = {
        "failed first": lambda r: (not r.failed, r.task_id),
        "task": lambda r: r.task_id,
        "site": lambda r: (r.site is None, r.site or "", r.task_id),
        "steps (most first)": lambda r: (r.steps is None, -(r.steps or 0), r.task_id),
        "SSR (lowest first)": lambda r: (r.ssr is None, r.ssr or 0.0, r.task_id),
    }
    assert set(sort_keys) == set(triage.SORTS)
    return [r.task_id for r in sorted(filter(keep, rows), key=sort_keys[f.sort])]


@pytest.mark.slow
def test_typed_triage_rows_filter_and_sort_as_documented(demo):
    import pickle
    import random

    rng = random.Random(7)
    for run in [r for (r,) in demo.query("SELECT name FROM runs ORDER BY name")]:
        table = triage.triage_table(demo, run)
        assert pickle.loads(pickle.dumps(table)) == table  # noqa: S301 (our own bytes: the app cache pickles it)
        frame = table.frame()
        assert list(frame.columns) == [*triage.ROW_FIELDS, *triage.DERIVED_COLUMNS]
        assert len(frame) == len(table) and frame["task_id"].tolist() == table.task_ids()
        assert set(field_docs(triage.TriageRow)) == set(triage.ROW_FIELDS)  # every field says what it is
        opts = triage.options(table)

        def pick(values: list[str]) -> tuple[str, ...]:
            return tuple(rng.sample(values, rng.randint(0, min(2, len(values)))))

        filters = [triage.TriageFilter(sort=s) for s in triage.SORTS]
        filters += [
            triage.TriageFilter(
                sites=pick(opts["sites"]),
                verdicts=pick(opts["verdicts"]),
                evaluators=pick(opts["evaluators"]),
                terminations=pick(opts["terminations"]),
                has_gold=rng.choice([None, *triage.HAS_GOLD]),
                labels=pick(opts["labels"]),
                text=rng.choice(["", "", "the", "2", "n/a"]),
                sort=rng.choice(list(triage.SORTS)),
                task_types=pick(opts["task_types"]),
                hard=rng.choice([None, *triage.HARD]),
            )  # fmt: skip
            for _ in range(60)
        ]
        for f in filters:
            shown = triage.apply_filter(table, f)
            assert shown.task_ids() == _reference_filter(table.rows, f), (run, f)
            assert (
                triage.counts(shown)["tasks"]
                == len(shown)
                == sum(triage.counts(shown)[v] for v in triage.VERDICTS)
            )


def test_task_header_is_a_typed_picklable_record(demo):
    import pickle

    header = task.task_header(demo, WAV, 107)
    assert isinstance(header, task.TaskHeader) and header.verdict == "failure"
    assert (
        header.explanations and header.agent_answer == header.response_raw
    )  # no trajectory: the response file
    assert pickle.loads(pickle.dumps(header)) == header  # noqa: S301 (our own bytes: the app cache pickles it)
    assert all(info.description for info in task.TaskHeader.model_fields.values())
    assert task.task_header(demo, WAV, 5) is None
