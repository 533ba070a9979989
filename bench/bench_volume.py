"""Growth: the same real run replicated to 50 and to 500 runs (bench/volume.py), and what each page's reads
cost as the database grows. Reports each database's file size and build time, then the p50/p95 of each
page's read models (one open of the database, the page's own calls, as bench_dashboard's data access):

- Runs (the landing page): the runs table, the defect links, the latest run's failures by cause and the
  success by site of the three charted runs; beside it the baseline, the same page with each run's counts
  computed from every task's verdict (`summary_sql` over every run: what Runs read before migration 8);
- Triage, Task review (a 70-step task) and Network (35,000 events) of the first run, the reads of
  bench_dashboard's data access (`view_reads`).

Targets at 500 runs (issue 36): Runs <= 250 ms p50 and within 1.5x its 50-run p50; Triage, Task and Network
<= 400 ms p95. `python -m bench volume [N ...]` measures other sizes (default 50 500).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from bench.bench_dashboard import percentiles, view_reads
from bench.volume import build_volume_db
from core.store import Store

VIEWS = 15
RUNS_P50_MS = 250
RUNS_GROWTH = 1.5
OTHER_P95_MS = 400


def _runs_page(store: Store, *, live: bool) -> None:
    from core.measure.run_summaries import summary_sql
    from core.queries import defects, failures, runs

    table = store.query_df(summary_sql(one_run=False)) if live else runs.runs_table(store)
    defects.defect_counts(store)
    latest = failures.latest_run(store)
    if latest:
        failures.failures_by_cause(store, latest)
    for run in table["run"].tolist()[:3]:
        runs.success_by_site(store, run)


def _timed(db: Path, read) -> tuple[float, float]:
    samples = []
    for _ in range(VIEWS):
        start = time.perf_counter()
        with Store(db, read_only=True) as store:
            read(store)
        samples.append(time.perf_counter() - start)
    return percentiles(samples)


def measure(folder: Path, n_runs: int) -> dict[str, tuple[float, float]]:
    started = time.perf_counter()
    vol = build_volume_db(folder / f"runs{n_runs}.duckdb", n_runs)
    built = time.perf_counter() - started
    print(f"\n{n_runs} runs: {vol.path.stat().st_size / 2**30:.2f} GiB, built in {built:.0f} s")
    print(f"{'page':<16} {'p50':>7} {'p95':>7}  (ms, {VIEWS} views, one open of the file each)")
    figures = {
        "runs": _timed(vol.path, lambda s: _runs_page(s, live=False)),
        "runs, baseline": _timed(vol.path, lambda s: _runs_page(s, live=True)),
    }
    for name in ("triage", "task", "network"):
        figures[name] = _timed(vol.path, lambda s, name=name: view_reads(s, name, vol))
    for name, (p50, p95) in figures.items():
        print(f"{name:<16} {p50:>7.0f} {p95:>7.0f}")
    ours, base = figures["runs"][0], figures["runs, baseline"][0]
    print(f"Runs: baseline / ours = {base / ours:.1f}x")
    vol.path.unlink()
    return figures


def main() -> None:
    sizes = [int(a) for a in sys.argv[1:]] or [50, 500]
    with tempfile.TemporaryDirectory() as tmp:
        results = {n: measure(Path(tmp), n) for n in sizes}
    largest, smallest = max(results), min(results)
    runs_big, runs_small = results[largest]["runs"][0], results[smallest]["runs"][0]
    print(f"\nRuns p50 at {largest} runs: {runs_big:.0f} ms (target <= {RUNS_P50_MS}) "
          f"{'ok' if runs_big <= RUNS_P50_MS else 'MISS'}; {runs_big / runs_small:.2f}x its {smallest}-run p50 "
          f"(target <= {RUNS_GROWTH}) {'ok' if runs_big <= RUNS_GROWTH * runs_small else 'MISS'}")  # fmt: skip
    for name in ("triage", "task", "network"):
        p95 = results[largest][name][1]
        print(f"{name} p95 at {largest} runs: {p95:.0f} ms (target <= {OTHER_P95_MS}) "
              f"{'ok' if p95 <= OTHER_P95_MS else 'MISS'}")  # fmt: skip


if __name__ == "__main__":
    main()
