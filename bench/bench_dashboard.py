"""Dashboard page views: server time per view (query plus page script) on 3 and 50 runs of 812 tasks,
beside the baseline of loading a whole run into pandas as AgentLab's XRay does; then, in Chromium, the
time to idle of each click from Runs to a failed task's explanation.

Setup (not timed): bench/volume.py replicates the real babelcloud run (812 tasks, offline metrics
against the paper's gold) under new names, with a 70-step task (real AgentLab steps and screenshots)
and a 35,000-event trace (the real task-107 HAR) in the first copy.

Timed, per page, N views each, through Streamlit's AppTest (the real page script, its queries and its
element tree), each database in a process of its own (`_measure_apart`), with the pre-warm off:
- first view: every cache emptied before every view, the scaled screenshots kept on disk beside the
  database included (the first view ever of the task);
- cold: every cache of the process emptied before every view, the kept scaled screenshots left (the first
  view after a server start; core.files.thumbnails);
- after import: the database cache emptied, scaled screenshots kept (what an import invalidates);
- warm: the cache as a second reviewer finds it.
Data access, ours vs the baseline, for the same view: our read models (the page's own calls, one open
of the database) against AgentLab XRay's way — every table the view needs read whole for the run into
pandas, then filtered and joined there.
Targets on 3 runs: Runs <= 500 ms, Triage <= 300 ms, Task review (70 steps) <= 300 ms, Network
(35,000 events) <= 500 ms; on 50 runs at most 1.5x those (on the cold p95). Cold p50 (issue 36): Task review
<= 300 ms, Compare (a replicated run against OpAgent's 809 tasks) <= 1 s, Metrics <= 500 ms.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from bench.volume import VolumeDb, build_volume_db
from core.files import thumbnails
from core.paths import REPO_ROOT
from core.store import Store

VIEWS = 15
TARGETS_MS = {"runs": 500, "triage": 300, "task": 300, "network": 500, "compare": 1000, "metrics": 500}
COLD_P50_MS = {"task": 300, "compare": 1000, "metrics": 500}  # issue 36, on the cold p50
DATA_ACCESS = ("runs", "triage", "task", "network")  # pages whose reads are also timed against XRay's way
SCALE_50 = 1.5
APP = str(REPO_ROOT / "dashboard" / "app.py")


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return statistics.median(ordered) * 1000, p95 * 1000


def _pages(vol) -> dict[str, tuple[str, dict[str, str]]]:
    run, long_task = vol.long_task
    trace_run, trace_task = vol.trace_task
    return {
        "runs": ("views/runs.py", {}),
        "triage": ("views/triage.py", {"run": vol.runs[0]}),
        "task": ("views/task.py", {"run": run, "task": str(long_task), "step": "35"}),
        "network": ("views/task.py", {"run": trace_run, "task": str(trace_task), "tab": "Network"}),
        "compare": ("views/compare.py", {"a": vol.runs[0], "b": "opagent"}),
        "metrics": ("views/metrics.py", {"run": vol.runs[0]}),
    }


def time_views(db: Path, page: str, params: dict[str, str], mode: str) -> list[float]:
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    os.environ["TRAJREVIEW_DB"] = str(db)
    at = AppTest.from_file(APP, default_timeout=120)
    at.switch_page(page)
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    if at.exception:
        raise RuntimeError(f"{page}: {[e.value for e in at.exception]}")
    from dashboard import db as app_db

    samples = []
    for _ in range(VIEWS):
        if mode == "first view":
            st.cache_data.clear()
            shutil.rmtree(thumbnails.folder_for(db), ignore_errors=True)
        elif mode == "cold":
            st.cache_data.clear()
        elif mode == "after import":
            app_db.forget_reads()
        start = time.perf_counter()
        at.run()
        samples.append(time.perf_counter() - start)
    return samples


# -- data access: our read models vs a whole run into pandas, XRay-style ----------------------------
def view_reads(store: Store, name: str, vol) -> None:
    """The read models one view of page `name` (runs, triage, task, network) calls, on `vol`'s first run or
    its heavy task (bench_volume times the same views as the database grows)."""
    from core.queries import network, runs, task, triage

    if name == "runs":
        names = runs.runs_table(store)["run"].tolist()
        for r in names[:3]:
            runs.success_by_site(store, r)
    elif name == "triage":
        runs.run_names(store)
        triage.triage_table(store, vol.runs[0])
    else:
        r, t = vol.long_task if name == "task" else vol.trace_task
        task.task_header(store, r, t)
        triage.triage_table(store, r)
        task.other_runs(store, t)
        eps = task.episodes(store, r, t)
        if name == "task":
            task.steps(store, r, t, eps[0]["episode"])
        else:
            network.event_count(store, r, t)
            network.matched_events(store, r, t)
            network.events(store, r, t)


def _ours(db: Path, name: str, vol) -> list[float]:
    samples = []
    for _ in range(VIEWS):
        start = time.perf_counter()
        with Store(db, read_only=True) as store:
            view_reads(store, name, vol)
        samples.append(time.perf_counter() - start)
    return samples


def _load_run(store: Store, run: str, tables: tuple[str, ...]) -> dict[str, pd.DataFrame]:
    return {t: store.query_df(f"SELECT * FROM {t} WHERE run = ?", [run]) for t in tables}


def _baseline(db: Path, name: str, vol) -> list[float]:
    run = vol.runs[0]
    samples = []
    for _ in range(VIEWS):
        start = time.perf_counter()
        with Store(db, read_only=True) as store:
            if name == "runs":
                tasks = store.query_df("SELECT task_id, site_key FROM tasks")
                for r in [n for (n,) in store.query("SELECT name FROM runs")]:
                    d = _load_run(store, r, ("trajectories", "evaluations", "import_problems", "metrics"))
                    d["evaluations"].merge(tasks, on="task_id").groupby("site_key")["status"].value_counts()
            elif name == "triage":
                d = _load_run(
                    store, run, ("trajectories", "steps", "evaluations", "evaluator_results", "metrics")
                )
                tasks = store.query_df("SELECT task_id, site_key, intent FROM tasks")
                t = d["trajectories"][d["trajectories"]["is_answer"]]
                t.merge(d["evaluations"], on=["run", "task_id"], how="left").merge(
                    tasks, on="task_id", how="left"
                )
            elif name == "task":
                r, task = vol.long_task
                d = _load_run(store, r, ("trajectories", "steps", "observations", "evaluations", "metrics"))
                d["steps"][d["steps"]["task_id"] == task].sort_values("idx")
            elif name == "network":
                r, task = vol.trace_task
                d = _load_run(store, r, ("network_events", "evaluator_results"))
                ev = d["network_events"]
                ev[(ev["task_id"] == task) & ~ev["is_static_asset"].fillna(False)]
            samples.append(time.perf_counter() - start)
    return samples


def _measure(db: Path, vol, label: str, scale: float) -> None:
    print(f"\n{label}: {db.stat().st_size / 1e6:.0f} MB database, {len(vol.runs)} replicated runs")
    print("page view, server time (AppTest: queries + page script), p50/p95 in ms; target on the cold p95")
    print(f"{'page':<9} {'first view':>11} {'cold':>11} {'after import':>13} {'warm':>11} {'target':>7}")
    for name, (page, params) in _pages(vol).items():
        first = percentiles(time_views(db, page, params, "first view"))
        cold = percentiles(time_views(db, page, params, "cold"))
        after = percentiles(time_views(db, page, params, "after import"))
        warm = percentiles(time_views(db, page, params, "warm"))
        target = TARGETS_MS[name] * scale
        verdict = "ok" if cold[1] <= target else "MISS"
        if name in COLD_P50_MS:
            verdict += (
                f"; cold p50 <= {COLD_P50_MS[name]}: {'ok' if cold[0] <= COLD_P50_MS[name] else 'MISS'}"
            )
        print(f"{name:<9} {first[0]:>5.0f}/{first[1]:<5.0f} {cold[0]:>5.0f}/{cold[1]:<5.0f} "
              f"{after[0]:>6.0f}/{after[1]:<6.0f} "
              f"{warm[0]:>5.0f}/{warm[1]:<5.0f} {target:>6.0f} {verdict}")  # fmt: skip
    print("data access for the same view, p50/p95 in ms: our read models vs the whole run in pandas (XRay)")
    print(f"{'page':<9} {'ours':>11} {'baseline':>11} {'baseline/ours':>14}")
    for name in DATA_ACCESS:
        ours, base = percentiles(_ours(db, name, vol)), percentiles(_baseline(db, name, vol))
        print(
            f"{name:<9} {ours[0]:>5.0f}/{ours[1]:<5.0f} {base[0]:>5.0f}/{base[1]:<5.0f} {base[0] / ours[0]:>12.1f}x"
        )


def _clicks(db: Path, vol) -> None:
    """Chromium: time to idle of each click from Runs to a failed task's explanation."""
    sys.path.insert(0, str(REPO_ROOT / "tests"))
    from browser_support import browser_page, chromium_available, click_grid_row, serve, wait_idle, wait_url

    from core.queries.runs import runs_table
    from dashboard.components.tables import WRAP_ROW_HEIGHT

    if not chromium_available():
        print("chromium not installed: click timings skipped")
        return
    with Store(db, read_only=True) as store:
        order = runs_table(store)["run"].tolist()
    with serve(db) as url, browser_page() as page:
        start = time.perf_counter()
        page.goto(url + "/runs")
        wait_idle(page)
        page.locator("[data-testid='stDataFrame']").first.wait_for()
        timings = [("open /runs", time.perf_counter() - start)]
        start = time.perf_counter()
        click_grid_row(page, order.index("wav-demo"), row_height=WRAP_ROW_HEIGHT)  # run names wrap
        wait_url(page, "/triage?run=wav-demo")
        wait_idle(page)
        timings.append(("click run row -> Triage", time.perf_counter() - start))
        start = time.perf_counter()
        click_grid_row(page, 0)
        wait_url(page, "task=107")
        wait_idle(page)
        page.get_by_text("task_type: expected RETRIEVE").first.wait_for(timeout=60_000)
        timings.append(("click failed task -> explanation", time.perf_counter() - start))
        start = time.perf_counter()
        page.goto(url + f"/task?run={vol.long_task[0]}&task={vol.long_task[1]}")
        wait_idle(page)
        page.get_by_text("Step 0").first.wait_for(timeout=60_000)
        timings.append(("open the 70-step task cold", time.perf_counter() - start))
        start = time.perf_counter()
        page.keyboard.press("n")
        wait_url(page, "step=")
        wait_idle(page)
        timings.append(("key N -> next step", time.perf_counter() - start))
    print("\nChromium, time to idle per action (database of 3 replicated runs):")
    for what, seconds in timings:
        print(f"  {what:<36} {seconds * 1000:>6.0f} ms")


def _measure_apart(vol, label: str, scale: float) -> None:
    """`_measure` in a process of its own, as a server starts: what one database's measurement leaves in
    the process (the XRay baseline's frames, its caches) never slows the other's views. The pre-warm is
    off there: the views are timed on the request path, and its thread would only add noise."""
    spec = {"path": str(vol.path), "runs": vol.runs, "long_task": list(vol.long_task),
            "trace_task": list(vol.trace_task), "label": label, "scale": scale}  # fmt: skip
    subprocess.run(
        [sys.executable, "-m", "bench.bench_dashboard", "--measure", json.dumps(spec)],
        check=True, cwd=REPO_ROOT, env={**os.environ, "TRAJREVIEW_PREWARM": "0"},
    )  # fmt: skip


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--measure":
        spec = json.loads(sys.argv[2])
        vol = VolumeDb(Path(spec["path"]), spec["runs"], tuple(spec["long_task"]), tuple(spec["trace_task"]))
        _measure(vol.path, vol, spec["label"], spec["scale"])
        return
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        small = build_volume_db(Path(tmp) / "runs3.duckdb", 3)
        big = build_volume_db(Path(tmp) / "runs50.duckdb", 50)
        print(f"setup: two volume databases built in {time.perf_counter() - started:.0f} s", flush=True)
        _measure_apart(small, "3 runs x 812 tasks", 1.0)
        _measure_apart(big, "50 runs x 812 tasks", SCALE_50)
        _clicks(small.path, small)


if __name__ == "__main__":
    main()
