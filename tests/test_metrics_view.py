"""The Metrics page's read models on the demo database: configurations, Table 7's left-out tasks, the
paradigm view."""

from __future__ import annotations

from demo_support import GOLD

from core.queries import metrics_view as mv
from core.store import Store

RUNS = ("opagent", "webarena-render-babelcloud", "wav-demo")


def test_choices_table7_and_paradigms(demo_db):
    with Store(demo_db, read_only=True) as s:
        choices = mv.metric_choices(s, RUNS)
        assert choices.iloc[0][["gold_set", "judge_config", "preset", "runs"]].tolist() == [
            GOLD, "offline", "default", 2,
        ]  # fmt: skip
        seven = mv.paper_table(s, "Table 7", RUNS, GOLD, "offline", "default").set_index("run")
        counts = dict(
            s.query(
                "SELECT run, count(*) FILTER (WHERE coalesce(n_requirements, 0) < 2) FROM metrics"
                " WHERE gold_set = ? GROUP BY run",
                [GOLD],
            )
        )
        assert seven.loc["opagent", "left_out"] == counts["opagent"]
        assert seven.loc["opagent", "left_out_why"] == f"fewer_than_2_requirements {counts['opagent']}"
        view = mv.paradigm_view(s, RUNS, GOLD, "offline", "default")
        assert view["paradigm"].tolist() == ["step_by_step", "step_by_step", "unknown"]
        opagent = view.set_index("run").loc["opagent"]
        n = s.query("SELECT count(ssr) FROM metrics WHERE run = 'opagent'")[0][0]
        assert (
            opagent["ssr_n"] == n and opagent["ssr_ci_low"] <= opagent["ssr_mean"] <= opagent["ssr_ci_high"]
        )


def test_table3_counts_runs_without_trajectories(demo_db):
    """wav-demo (official run: agent responses and evaluations, no trajectory) has its tasks in Table 3."""
    with Store(demo_db, read_only=True) as s:
        three = mv.paper_table(s, "Table 3", ("opagent", "wav-demo"), None, None, "default")
        wav = three[(three["run"] == "wav-demo") & (three["domain"] == "all")].iloc[0]
        passed, n = s.query(
            "SELECT count(*) FILTER (WHERE status = 'success'), count(*) FROM evaluations WHERE run = 'wav-demo'"
        )[0]
        assert wav["n"] == n == 2 and wav["mean"] == passed / n
