"""The presenting pages (Breakdowns, Compare, Metrics) through Streamlit's AppTest on the demo data,
opened cold from their URLs."""

from __future__ import annotations

import json

from apptest_support import page_texts
from demo_support import BABEL, GOLD, OPAGENT, WAV
from streamlit.testing.v1 import AppTest

from core.store import Store

BREAKDOWNS, COMPARE, METRICS, TRIAGE = (
    "views/breakdowns.py", "views/compare.py", "views/metrics.py", "views/triage.py",
)  # fmt: skip


def _figure(at: AppTest) -> dict:
    [chart] = at.get("plotly_chart")
    return json.loads(chart.proto.spec)


def test_breakdowns_cold_url_shows_the_chosen_runs_and_dimension(open_page, demo_db):
    at = open_page(demo_db, BREAKDOWNS, runs=[BABEL, OPAGENT], dim="task type", img="svg")
    assert at.multiselect(key="url:runs").value == [BABEL, OPAGENT]
    figure = _figure(at)
    bars = [t for t in figure["data"] if t["type"] == "bar"]
    assert {trace["name"] for trace in bars} == {BABEL, OPAGENT}
    babel = next(t for t in bars if t["name"] == BABEL)
    assert set(babel["y"]) == {"retrieve", "mutate", "navigate"}
    # Every bar carries the run and value a click sends to Triage, and its counts.
    assert all(run == BABEL for run, _ in babel["customdata"])
    with Store(demo_db, read_only=True) as s:
        passed, n = s.query(
            "SELECT count(*) FILTER (WHERE e.status = 'success'), count(*) FROM evaluations e JOIN tasks k"
            " USING (task_id) WHERE e.run = ? AND k.task_type = 'mutate'",
            [BABEL],
        )[0]
    # Its label, inside the bar or beside it (the text trace of the bar's offset group).
    beside = next(
        t for t in figure["data"] if t["type"] == "scatter" and t["offsetgroup"] == babel["offsetgroup"]
    )
    assert any(text.endswith(f"{passed}/{n}") for text in [*babel["text"], *beside["text"]])
    table = at.dataframe[0].value
    assert set(table["run"]) == {BABEL, OPAGENT} and "task type" in table.columns
    assert len(at.get("download_button")) == 2  # CSV and xlsx
    [chart] = at.get("plotly_chart")
    assert json.loads(chart.proto.config)["toImageButtonOptions"]["format"] == "svg"  # img=svg


def test_table_downloads_round_trip():
    import io

    import pandas as pd

    from dashboard.components.downloads import xlsx_bytes

    df = pd.DataFrame({"run": ["a", "<b>"], "rate": [0.5, None], "n": [2, 0]})
    back = pd.read_excel(io.BytesIO(xlsx_bytes(df)))
    assert (
        back["run"].tolist() == ["a", "<b>"]
        and back["n"].tolist() == [2, 0]
        and back["rate"].isna().tolist() == [False, True]
    )


def test_breakdowns_default_and_unknown_run(open_page, demo_db):
    at = open_page(demo_db, BREAKDOWNS)
    assert len(at.multiselect(key="url:runs").value) == 3 and at.get("plotly_chart")
    at = open_page(demo_db, BREAKDOWNS, runs=["no-such-run", BABEL])
    assert "No run named 'no-such-run'" in page_texts(at)


def test_triage_takes_the_breakdown_filters_from_the_url(open_page, demo_db):
    at = open_page(demo_db, TRIAGE, run=BABEL, type="navigate", hard="hard")
    table = at.dataframe[0].value
    with Store(demo_db, read_only=True) as s:
        expected = s.query(
            "SELECT count(*) FROM evaluations JOIN tasks USING (task_id) WHERE run = ? AND task_type = 'navigate'"
            " AND in_hard_subset",
            [BABEL],
        )[0][0]
    assert expected > 0 and len(table) == expected and set(table["task_type"]) == {"navigate"}


def test_compare_cold_url_shows_outcomes_test_and_both_task_views(open_page, demo_db):
    at = open_page(demo_db, COMPARE, a=BABEL, b=OPAGENT, flip="B only", task="603")
    assert at.selectbox(key="url:a").value == BABEL and at.selectbox(key="url:b").value == OPAGENT
    labels = [m.label for m in at.metric]
    assert "McNemar exact p" in labels and "B − A [95 % CI]" in labels
    two_by_two = at.dataframe[0].value
    assert list(two_by_two.columns) == ["B passed", "B failed"]
    flips = next(d.value for d in at.dataframe if "outcome" in d.value.columns)
    assert set(flips["outcome"]) == {"B only"} and 603 in set(flips["task_id"])
    text = page_texts(at)
    assert text.count("Task 603") == 2  # both runs' task views, side by side
    links = [link.proto.page for link in at.get("page_link")]
    assert len(links) >= 2


def test_compare_defaults_same_run_and_unknown_run(open_page, demo_db):
    at = open_page(demo_db, COMPARE)
    # The default pair is the one rule's (core.queries.compare.comparison_pair): runs sharing scored tasks.
    assert (at.selectbox(key="url:a").value, at.selectbox(key="url:b").value) == (BABEL, OPAGENT)
    at = open_page(demo_db, COMPARE, a=BABEL, b=BABEL)
    assert "Choose two different runs" in page_texts(at)
    at = open_page(demo_db, COMPARE, a="nope", b=BABEL)
    assert any("No run named 'nope'" in e.value for e in at.error)


def test_metrics_cold_url_shows_each_table_with_n_and_left_out(open_page, demo_db):
    runs = [OPAGENT, BABEL]
    at = open_page(demo_db, METRICS, runs=runs, gold=GOLD, judge="offline", table="Table 4")
    table = at.dataframe[-1].value
    ssr = table[(table["run"] == OPAGENT) & (table["metric"] == "ssr")].iloc[0]
    with Store(demo_db, read_only=True) as s:
        n, tasks = s.query(
            "SELECT count(ssr), count(*) FROM metrics WHERE run = ? AND gold_set = ?", [OPAGENT, GOLD]
        )[0]
    assert ssr["n"] == n and ssr["left_out"] == tasks - n and f"n={n}" in ssr["mean [95 % CI]"]
    babel_ssr = table[(table["run"] == BABEL) & (table["metric"] == "ssr")].iloc[0]
    with Store(demo_db, read_only=True) as s:
        n_babel, answer_only = s.query(
            "SELECT count(ssr), count(*) FILTER (WHERE null_reasons->>'ssr' = 'answer_only') FROM metrics"
            " WHERE run = ? AND gold_set = ?",
            [BABEL, GOLD],
        )[0]
    # babelcloud's answer-only tasks (no call that acts on the page) are said, not counted as 0.
    assert babel_ssr["n"] == n_babel > 0 and answer_only > 0
    assert f"answer_only {answer_only}" in babel_ssr["left_out_why"]
    at = open_page(demo_db, METRICS, runs=runs, table="Table 6")
    six = at.dataframe[-1].value
    assert "no_gold" in " ".join(six["left_out_why"])
    at = open_page(demo_db, METRICS, runs=runs, table="Table 3")
    three = at.dataframe[-1].value
    assert set(three["run"]) == set(runs) and "delta [95 % CI]" in three.columns


def test_metrics_paradigm_view_groups_runs(open_page, demo_db):
    at = open_page(demo_db, METRICS, runs=[OPAGENT, BABEL, WAV], table="Planning paradigms")
    groups = [m.value for m in at.markdown if m.value.startswith("**")]
    assert "**step by step**" in groups and "**unknown**" in groups
    step = next(d.value for d in at.dataframe if OPAGENT in set(d.value.get("run", [])))
    assert set(step["run"]) == {OPAGENT, BABEL}
    assert any("Only 2 of the 3 runs have metrics" in w.value for w in at.warning)
    chart = _figure(at)
    assert [t["name"] for t in chart["data"]] == ["success", "SSR", "RR", "PSR", "EAR"]
    assert chart["data"][0]["x"][0] == ["step by step", "step by step", "unknown"]


def test_compare_site_filter_from_the_url(open_page, demo_db):
    at = open_page(demo_db, COMPARE, a=BABEL, b=OPAGENT, site="reddit", img="svg")
    flips = next(d.value for d in at.dataframe if "outcome" in d.value.columns)
    assert len(flips) > 0 and set(flips["site"]) == {"reddit"}
    chart = _figure(at)
    assert "reddit" in chart["data"][0]["customdata"]
    with Store(demo_db, read_only=True) as s:
        expected = s.query(
            "SELECT count(*) FROM evaluations a JOIN evaluations b USING (task_id) JOIN tasks k USING (task_id)"
            " WHERE a.run = ? AND b.run = ? AND k.site_key = 'reddit' AND (a.status = 'success') <> (b.status = 'success')",
            [BABEL, OPAGENT],
        )[0][0]
    assert len(flips) == expected
