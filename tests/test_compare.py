"""Comparing two runs: McNemar's exact test and the paired bootstrap against hand-checkable cases and an
independent definition, and the comparison read model on the demo database's real runs."""

from __future__ import annotations

import math
import shutil
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from demo_support import BABEL, GOLD, OPAGENT, WAV

from core.measure import stats
from core.queries import compare
from core.store import Store

A, B = BABEL, OPAGENT


def _two_sided_binomial(k: int, n: int) -> float:
    """The exact two-sided binomial test at p = 1/2 as scipy's binomtest defines it: the probability of
    every outcome no likelier than the one observed, summed in exact fractions."""
    if n == 0:
        return 1.0
    observed = math.comb(n, k)
    return float(sum(Fraction(math.comb(n, i), 2**n) for i in range(n + 1) if math.comb(n, i) <= observed))


def test_mcnemar_exact_by_hand_and_against_the_definition():
    # 0 vs 5 discordant: p = 2 * 0.5**5 = 1/16.
    assert stats.mcnemar_exact(0, 5) == pytest.approx(1 / 16)
    assert stats.mcnemar_exact(5, 0) == stats.mcnemar_exact(0, 5)
    # 1 vs 9: p = 2 * (C(10,0) + C(10,1)) / 2**10 = 22/1024.
    assert stats.mcnemar_exact(1, 9) == pytest.approx(22 / 1024)
    assert stats.mcnemar_exact(4, 4) == 1.0 and stats.mcnemar_exact(0, 0) == 1.0
    # scipy.stats.binomtest(60, 150, 0.5).pvalue as scipy 1.17.1 printed it.
    assert stats.mcnemar_exact(60, 90) == pytest.approx(0.017597691928785828, rel=1e-12)
    for a in range(0, 40, 3):
        for b in (0, 1, 2, 7, 19, 40, 41, 120):
            assert stats.mcnemar_exact(a, b) == pytest.approx(_two_sided_binomial(a, a + b), rel=1e-12), (
                a,
                b,
            )
    assert stats.mcnemar_exact(400, 409) == pytest.approx(_two_sided_binomial(400, 809), rel=1e-12)


def test_bootstrap_of_few_values_matches_resampling_indices():
    """Counts drawn from a multinomial are the same distribution as resampled indices: same interval
    up to Monte Carlo noise."""
    rng = np.random.default_rng(7)
    data = rng.choice([-1.0, 0.0, 1.0], p=[0.1, 0.75, 0.15], size=800)
    low, high = stats.bootstrap_ci(data.tolist())
    means = data[np.random.default_rng(1).integers(0, data.size, size=(20_000, data.size))].mean(axis=1)
    ref_low, ref_high = np.percentile(means, [2.5, 97.5])
    assert low == pytest.approx(ref_low, abs=0.004) and high == pytest.approx(ref_high, abs=0.004)
    # And against the normal approximation of a mean's CI on this large sample.
    half = 1.96 * data.std(ddof=1) / math.sqrt(data.size)
    assert low == pytest.approx(data.mean() - half, abs=0.005)


@pytest.fixture(scope="module")
def cmp(demo_db):
    with Store(demo_db, read_only=True) as s:
        yield (
            compare.compare_runs(s, A, B),
            s.query(
                "SELECT a.task_id, a.status = 'success', b.status = 'success' FROM evaluations a"
                " JOIN evaluations b USING (task_id) WHERE a.run = ? AND b.run = ?",
                [A, B],
            ),
            {t for (t,) in s.query("SELECT task_id FROM evaluations WHERE run = ?", [A])},
        )


def test_two_by_two_counts_the_stored_verdicts(cmp):
    result, rows, scored_by_a = cmp
    expected = {
        "both pass": sum(x and y for _, x, y in rows), "A only": sum(x and not y for _, x, y in rows),
        "B only": sum(y and not x for _, x, y in rows), "both fail": sum(not x and not y for _, x, y in rows),
    }  # fmt: skip
    assert result.outcomes == expected and sum(expected.values()) == result.success["n"] == len(rows)
    assert result.mcnemar_p == pytest.approx(
        _two_sided_binomial(expected["A only"], expected["A only"] + expected["B only"])
    )
    s = result.success
    assert s["diff"] == pytest.approx((expected["B only"] - expected["A only"]) / len(rows))
    assert s["ci_low"] < s["diff"] < s["ci_high"]
    # babelcloud's task 782 has no OpAgent file: counted, never paired.
    assert result.unpaired["scored by A only"] == len(scored_by_a - {t for t, _, _ in rows}) == 1


def test_per_site_and_flips_partition_the_pairs(cmp):
    result, _, _ = cmp
    sites = result.per_site
    assert sites["n"].sum() == result.success["n"]
    assert (
        sites["only_a"].sum() == result.outcomes["A only"]
        and sites["only_b"].sum() == result.outcomes["B only"]
    )
    every = compare.flipped(result.pairs)
    assert len(every) == result.outcomes["A only"] + result.outcomes["B only"]
    only_b = compare.flipped(result.pairs, "B only")
    assert set(only_b["outcome"]) == {"B only"} and len(only_b) == result.outcomes["B only"]
    assert set(only_b["verdict_a"]) <= {"failure", "error"} and set(only_b["verdict_b"]) == {"success"}


def test_metric_differences_say_what_they_leave_out(cmp, demo_db):
    result, _, _ = cmp
    assert result.metric_config == (GOLD, "offline", "default")
    psr = result.metrics.set_index("metric").loc["psr"]
    assert psr["n"] > 0 and psr["ci_low"] <= psr["diff"] <= psr["ci_high"]
    # Step metrics pair the tasks both runs define them on; the others are said, not counted.
    with Store(demo_db, read_only=True) as s:
        (both,) = s.query(
            "SELECT count(DISTINCT task_id) FROM metrics a JOIN metrics b USING (task_id, gold_set, judge_config, preset)"
            " WHERE a.run = ? AND b.run = ? AND a.gold_set = ? AND a.ssr IS NOT NULL AND b.ssr IS NOT NULL",
            [A, B, GOLD],
        )[0]
    ssr = result.metrics.set_index("metric").loc["ssr"]
    assert ssr["n"] == both > 10 and ssr["ci_low"] <= ssr["diff"] <= ssr["ci_high"]
    assert "undefined in A" in ssr["left_out_why"]  # babelcloud's answer-only tasks among them


def test_one_rule_picks_the_runs_every_default_comparison_pairs(demo_db):
    """The Compare page and `report --html` pair the latest run with the latest earlier run that scored
    a task in common with it; runs that share no scored task are never paired (the HTML report once
    compared two runs with no task in common)."""
    with Store(demo_db, read_only=True) as s:
        runs = compare.report_runs(s)
        assert runs == [r for (r,) in s.query("SELECT name FROM runs ORDER BY imported_at, name")]
        a, b = compare.comparison_pair(s)
        assert compare.compare_runs(s, a, b).success["n"] > 0
        assert runs.index(a) < runs.index(b)
        assert (a, b) == (BABEL, OPAGENT)
        # wav-demo's tasks 107 and 108 are in both other runs: the latest earlier run sharing a task.
        assert compare.comparison_pair(s, [OPAGENT, BABEL, WAV]) == (BABEL, WAV)
        assert compare.comparison_pair(s, [WAV]) is None


def test_runs_sharing_no_scored_task_are_never_paired(full_demo_db):
    with Store(full_demo_db, read_only=True) as s:
        # wav-demo (tasks 107, 108) and agentlab-sample share no scored task.
        assert compare.comparison_pair(s, [WAV, "agentlab-sample"]) is None
        assert compare.comparison_pair(s, [WAV, OPAGENT, "agentlab-sample"]) == (OPAGENT, "agentlab-sample")


def test_a_delta_label_stays_inside_the_plot_and_off_the_zero_line(demo_db):
    """Compare's per-site chart: a label centred on a point near −100 or +100 ran past the plot's edge
    ('n=2, too few to tell' cut to 'oo few to tell'), and one centred on a point near 0 was crossed by the
    dotted zero line. Each label reaches from its point away from zero, or toward it beyond ±52.5 points;
    a label (at most a quarter of the axis wide) then spans neither 0 nor an edge."""
    from dashboard.charts import DELTA_LABEL_TURN, deltas

    seen = set()
    for a, b in ((BABEL, OPAGENT), (OPAGENT, BABEL)):
        with Store(demo_db, read_only=True) as s:
            fig = deltas(compare.compare_runs(s, a, b).per_site, a, b)
        (points,) = fig.data
        assert fig.layout.xaxis.range == (-105, 105) and points.cliponaxis is False
        assert [s.x0 for s in fig.layout.shapes] == [0]  # the dotted zero line
        width = (fig.layout.xaxis.range[1] - fig.layout.xaxis.range[0]) / 4
        assert width == DELTA_LABEL_TURN  # a quarter of the axis: half of each side's reach
        for x, position, text in zip(points.x, points.textposition, points.text, strict=True):
            start, end = (x, x + width) if position == "top right" else (x - width, x)
            assert position in ("top left", "top right") and not start < 0 < end, (x, text, position)
            assert start >= -105 and end <= 105, (x, text, position)
            seen.add((position, "edge" if abs(x) > DELTA_LABEL_TURN else "middle"))
    assert len(seen) == 4  # the demo has points near both edges and near 0 on both sides


def test_each_metric_difference_is_in_its_own_unit():
    """A difference of two shares is in percentage points; of two counts of steps (the mean recovery cost), in
    steps, never multiplied by 100."""
    from core.queries.paper_tables import METRIC_COLUMNS, METRIC_UNITS

    assert set(METRIC_UNITS) == set(METRIC_COLUMNS) and set(METRIC_UNITS.values()) == {
        stats.SHARE,
        stats.STEPS,
    }
    assert [m for m, unit in METRIC_UNITS.items() if unit == stats.STEPS] == ["mean_recovery_cost"]
    assert stats.difference_text(-2.114, -4.25, -0.3036, 14, stats.STEPS) == "-2.11 steps [-4.25, -0.30] n=14"
    assert stats.difference_text(0.1234, 0.041, 0.205, 58) == "+12.3 pts [+4.1, +20.5] n=58"
    assert stats.difference_text(1.5, None, None, 3, stats.STEPS) == "+1.50 steps, too few to tell (n=3)"
    assert stats.difference_text(None, None, None, 0, stats.STEPS) == "– (n=0)"
    # The one-line form is the tile's two parts joined; a share's is the points form every page used.
    assert stats.difference_parts(-0.0909, -0.303, 0.121, 33) == ("-9.1 pts", "[-30.3, +12.1] n=33")
    assert stats.estimate_text(-1.0, None, None, 2, points=True) == stats.difference_text(-1.0, None, None, 2)


@pytest.fixture
def page_db(demo_db, tmp_path):
    """A copy of the demo for a page: the module's `cmp` holds the demo file open while its tests run."""
    shutil.copy(demo_db, tmp_path / "demo.duckdb")
    return tmp_path / "demo.duckdb"


def test_the_compare_page_shows_each_metric_difference_in_its_unit(open_page, page_db):
    """On the demo's runs: the mean recovery cost's B − A is in steps (it read '-211.4 pts'), every other
    metric's in percentage points, and the metrics table says each metric's unit."""
    at = open_page(page_db, "views/compare.py", a=A, b=B)
    table = next(
        d.value for d in at.dataframe if "B − A [95 % CI]" in d.value.columns and "metric" in d.value.columns
    )
    with Store(page_db, read_only=True) as s:
        expected = compare.compare_runs(s, A, B).metrics.set_index("metric")
    rows = table.set_index("metric")
    cost = expected.loc["mean_recovery_cost"]
    assert cost["n"] >= stats.MIN_N_BOOTSTRAP and abs(cost["diff"]) > 0.5  # a real difference of steps
    assert rows.loc["mean_recovery_cost", "unit"] == "steps"
    assert rows.loc["mean_recovery_cost", "B − A [95 % CI]"].startswith(f"{cost['diff']:+.2f} steps [")
    shares = [m for m in rows.index if m != "mean_recovery_cost" and not pd.isna(expected.loc[m, "diff"])]
    assert len(shares) >= 5
    for metric in shares:
        assert rows.loc[metric, "unit"] == "share"
        assert rows.loc[metric, "B − A [95 % CI]"].startswith(
            f"{expected.loc[metric, 'diff'] * 100:+.1f} pts"
        )


def test_the_success_difference_tile_is_short_with_its_interval_beneath(open_page, page_db):
    """The B − A tile: its figure alone ('-9.1 pts'), the interval and n as the line under it (on one line they
    were cut off at the tile's width); the browser test measures that nothing is cut at 1280 and 1500 px."""
    at = open_page(page_db, "views/compare.py", a=A, b=B)
    with Store(page_db, read_only=True) as s:
        success = compare.compare_runs(s, A, B).success
    tile = next(m for m in at.metric if m.label.startswith("B − A"))
    assert tile.value == f"{success['diff'] * 100:+.1f} pts"
    assert tile.delta == f"[{success['ci_low'] * 100:+.1f}, {success['ci_high'] * 100:+.1f}] n={success['n']}"
