"""Presenting results at volume: on the 50-run database of the dashboard benchmark (50 copies of the
real 812-task babelcloud run, plus the demo's own runs), in one process, side by side with baselines:

- Breakdowns and Compare pages: server time per view through Streamlit's AppTest (the real page
  script, its queries and element tree), cold (every cache emptied before every view) and warm, p50/p95;
  target <= 500 ms on the cold p95. Beside them the data access of the same view, ours (the read model)
  against the whole run tables read into pandas and aggregated there, as AgentLab's XRay does;
- the HTML report of 3 runs: time (target <= 5 s) and size;
- Parquet export of every table: time and size against the DuckDB file, beside DuckDB's own
  `EXPORT DATABASE … (FORMAT parquet)` (one file per table, no partitions);
- one aggregate query (success rate per run and site) over the Parquet directory against the same query
  on the DuckDB file, p50/p95.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import duckdb
import pandas as pd

from bench.bench_dashboard import percentiles, time_views
from bench.volume import build_volume_db
from core.store import Store

VIEWS = 15
QUERIES = 10
TARGET_PAGE_MS = 500
TARGET_REPORT_S = 5.0
COMPARE_B = "opagent"  # a real, different run: the comparison has flips in every site


def _pages(vol) -> dict[str, tuple[str, dict]]:
    return {
        "breakdowns": ("views/breakdowns.py", {"runs": vol.runs[:3]}),
        "breakdowns (task type)": ("views/breakdowns.py", {"runs": vol.runs[:3], "dim": "task type"}),
        "compare": ("views/compare.py", {"a": vol.runs[1], "b": COMPARE_B, "flip": "B only"}),
    }


def _ours(db: Path, name: str, vol) -> list[float]:
    from core.queries import breakdowns, compare, runs

    samples = []
    for _ in range(VIEWS):
        start = time.perf_counter()
        with Store(db, read_only=True) as store:
            runs.run_names(store)
            if name.startswith("breakdowns"):
                breakdowns.breakdowns(store, vol.runs[:3])
            else:
                compare.compare_runs(store, vol.runs[1], COMPARE_B)
        samples.append(time.perf_counter() - start)
    return samples


def _baseline(db: Path, name: str, vol) -> list[float]:
    """Whole run tables into pandas, then the same aggregation there."""
    from core.measure.stats import mcnemar_exact, paired_bootstrap_diff, wilson_ci

    samples = []
    for _ in range(VIEWS):
        start = time.perf_counter()
        with Store(db, read_only=True) as store:
            tasks = store.query_df("SELECT * FROM tasks")
            wanted = vol.runs[:3] if name.startswith("breakdowns") else [vol.runs[1], COMPARE_B]
            frames = {t: store.query_df(f"SELECT * FROM {t} WHERE list_contains(?, run)", [wanted])
                      for t in ("evaluations", "trajectories", "annotations", "metrics")}  # fmt: skip
        ev = frames["evaluations"].merge(tasks, on="task_id")
        if name.startswith("breakdowns"):
            for column in ("site_key", "task_type", "in_hard_subset"):
                for _key, part in ev.groupby(["run", column]):
                    wilson_ci(int((part["status"] == "success").sum()), len(part))
        else:
            wide = ev.pivot_table(index="task_id", columns="run", values="status", aggfunc="first").dropna()
            a, b = (wide[r] == "success" for r in (vol.runs[1], COMPARE_B))
            mcnemar_exact(int((a & ~b).sum()), int((b & ~a).sum()))
            paired_bootstrap_diff(a.astype(float).tolist(), b.astype(float).tolist())
        samples.append(time.perf_counter() - start)
    return samples


def _pages_bench(vol) -> None:
    db = vol.path
    print(
        f"\npage view server time (AppTest), p50/p95 ms, {VIEWS} views; target {TARGET_PAGE_MS} ms on the cold p95"
    )
    print(f"{'page':<24} {'cold':>11} {'warm':>11}  verdict")
    for name, (page, params) in _pages(vol).items():
        cold = percentiles(time_views(db, page, params, "cold"))
        warm = percentiles(time_views(db, page, params, "warm"))
        verdict = "ok" if cold[1] <= TARGET_PAGE_MS else "MISS"
        print(f"{name:<24} {cold[0]:>5.0f}/{cold[1]:<5.0f} {warm[0]:>5.0f}/{warm[1]:<5.0f}  {verdict}")
    print("data access for the same view, p50/p95 ms: our read model vs whole run tables in pandas (XRay)")
    print(f"{'page':<24} {'ours':>11} {'baseline':>11} {'baseline/ours':>14}")
    for name in ("breakdowns", "compare"):
        ours, base = percentiles(_ours(db, name, vol)), percentiles(_baseline(db, name, vol))
        print(
            f"{name:<24} {ours[0]:>5.0f}/{ours[1]:<5.0f} {base[0]:>5.0f}/{base[1]:<5.0f} {base[0] / ours[0]:>12.1f}x"
        )


def _report_bench(vol, tmp: Path) -> None:
    from dashboard.report import write

    runs = [vol.runs[1], COMPARE_B, vol.runs[2]]
    samples, size = [], 0
    for i in range(3):
        start = time.perf_counter()
        with Store(vol.path, read_only=True) as store:
            size = write(store, runs, tmp / f"report{i}.html")
        samples.append(time.perf_counter() - start)
    p50, p95 = percentiles(samples)
    verdict = "ok" if p95 <= TARGET_REPORT_S * 1000 else "MISS"
    print(f"\nHTML report, 3 runs: {p50:.0f}/{p95:.0f} ms p50/p95 over 3 builds (target {TARGET_REPORT_S:.0f} s: "
          f"{verdict}), {size / 1e6:.1f} MB (plotly.js embedded: ~4.6 MB of it)")  # fmt: skip


def _dir_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


AGGREGATE = """SELECT e.run, k.site_key, count(*) AS n, avg((e.status = 'success')::INT) AS rate
               FROM {evaluations} e JOIN {tasks} k USING (task_id) GROUP BY ALL ORDER BY ALL"""


def _parquet_bench(vol, tmp: Path) -> None:
    from core.export.parquet import export_parquet

    db_size = vol.path.stat().st_size
    out = tmp / "parquet"
    start = time.perf_counter()
    with Store(vol.path, read_only=True) as store:
        summary = export_parquet(store, out)
    ours = time.perf_counter() - start
    base_dir = tmp / "export-database"
    start = time.perf_counter()
    con = duckdb.connect(str(vol.path), read_only=True)
    con.execute(f"EXPORT DATABASE '{base_dir}' (FORMAT parquet)")
    base = time.perf_counter() - start
    print(f"\nParquet export of {len(summary.tables)} tables, {sum(summary.tables.values()):,} rows "
          f"({len(summary.partitioned)} partitioned by run):")  # fmt: skip
    print(f"  ours (Hive, by run)       {ours:>6.1f} s  {summary.bytes / 1e6:>7.1f} MB  "
          f"= {summary.bytes / db_size:.2f} x the DuckDB file ({db_size / 1e6:.0f} MB)")  # fmt: skip
    print(f"  EXPORT DATABASE (parquet) {base:>6.1f} s  {_dir_size(base_dir) / 1e6:>7.1f} MB  ratio ours/baseline "
          f"{ours / base:.2f}x time")  # fmt: skip
    # The 50 runs are copies: in one file Parquet's dictionaries fold the copies together, one file per
    # run cannot. The demo database (distinct real runs) gives the size comparison without that artefact.
    from bench.volume import base_db

    real_out, real_base = tmp / "parquet-real", tmp / "export-real"
    with Store(base_db(), read_only=True) as store:
        real = export_parquet(store, real_out)
    duckdb.connect(str(base_db()), read_only=True).execute(f"EXPORT DATABASE '{real_base}' (FORMAT parquet)")
    print(f"  on the demo database (distinct real runs, {base_db().stat().st_size / 1e6:.0f} MB): ours "
          f"{real.bytes / 1e6:.1f} MB, EXPORT DATABASE {_dir_size(real_base) / 1e6:.1f} MB")  # fmt: skip
    on_file = AGGREGATE.format(evaluations="evaluations", tasks="tasks")
    on_parquet = AGGREGATE.format(
        evaluations=f"read_parquet('{out}/evaluations/**/*.parquet', hive_partitioning = true)",
        tasks=f"read_parquet('{out}/tasks/*.parquet')",
    )
    mem = duckdb.connect()
    assert pd.DataFrame(con.execute(on_file).fetchall()).equals(
        pd.DataFrame(mem.execute(on_parquet).fetchall())
    )
    timings = {}
    for label, cursor, sql in (("DuckDB file", con, on_file), ("Parquet directory", mem, on_parquet)):
        samples = []
        for _ in range(QUERIES):
            start = time.perf_counter()
            cursor.execute(sql).fetchall()
            samples.append(time.perf_counter() - start)
        timings[label] = percentiles(samples)
    print("aggregate query (success rate per run and site, same rows from both), p50/p95 ms:")
    for label, (p50, p95) in timings.items():
        print(f"  {label:<18} {p50:>6.1f}/{p95:<6.1f}")
    print(f"  Parquet / file: {timings['Parquet directory'][0] / timings['DuckDB file'][0]:.1f}x")
    con.close()


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        vol = build_volume_db(Path(tmp) / "runs50.duckdb", 50)
        print(f"setup: 50-run database built in {time.perf_counter() - started:.0f} s "
              f"({vol.path.stat().st_size / 1e6:.0f} MB)")  # fmt: skip
        _pages_bench(vol)
        _report_bench(vol, Path(tmp))
        _parquet_bench(vol, Path(tmp))


if __name__ == "__main__":
    main()
