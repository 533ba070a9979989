"""Benchmark: importing the whole OpAgent run (809 JSON trajectories, 9,858 actions, 23.8 MB).

Ours: `import_opagent` into a fresh database with the task datasets loaded: orjson per file, every step
parsed and described, screenshots located, one transaction of Arrow bulk inserts, and the offline
WebArena evaluation of the 809 tasks that import runs in the same transaction.
Baseline: the naive importer one would write first: `json.load` per file and one `INSERT` statement per
trajectory and per step row (same columns, same one transaction), no parsing, no evaluation.
Target: the whole import in <= 2 s. Three runs each (p50 / p95 of the runs). The machine is shared:
the process CPU time and the load average are printed too (wall time inflates with the load, CPU time
much less).

Run: .venv/bin/python -m bench.bench_opagent
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from core.ingest.opagent import import_opagent
from core.ingest.tasks import import_tasks
from core.paths import shared_data_dir
from core.store import Store

TARGET_S = 2.0
RUNS = 3


def _naive(store: Store, files: list[Path]) -> int:
    steps = 0
    with store.transaction() as cur:
        for path in files:
            with open(path, encoding="utf-8") as handle:
                items = json.load(handle)
            task_id = int(path.stem)
            actions = [x for x in items if x.get("type") == "action"]
            cur.execute(
                "INSERT INTO trajectories (run, task_id, episode, is_answer, n_steps, termination) "
                "VALUES ('naive', ?, '0', TRUE, ?, 'answered')",
                [task_id, len(actions)],
            )
            for idx, item in enumerate(actions):
                planner = item.get("planner_output") or {}
                cur.execute(
                    "INSERT INTO steps (run, task_id, episode, idx, url, thought, stated_action, executed_action,"
                    " error) VALUES ('naive', ?, '0', ?, ?, ?, ?, ?, ?)",
                    [task_id, idx, item.get("page_url"), json.dumps(item.get("reflector_output")),
                     planner.get("instruction"), json.dumps(item.get("action")), item.get("error_msg")],
                )  # fmt: skip
                steps += 1
    return steps


def _percentiles(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return statistics.median(ordered), p95


def main() -> None:
    root = shared_data_dir() / "oagent-run"
    files = sorted((root / "final_results").glob("*.json"))
    with tempfile.TemporaryDirectory() as tmp:
        seed = Path(tmp) / "tasks.duckdb"
        with Store(seed) as store:
            import_tasks(store, original=True)
        ours, naive, ours_cpu, naive_cpu = [], [], [], []
        for attempt in range(RUNS):
            db = Path(tmp) / f"ours{attempt}.duckdb"
            shutil.copy(seed, db)
            with Store(db) as store:
                started, cpu = time.perf_counter(), time.process_time()
                summary = import_opagent(store, root, "opagent")
                ours.append(time.perf_counter() - started)
                ours_cpu.append(time.process_time() - cpu)
            db = Path(tmp) / f"naive{attempt}.duckdb"
            shutil.copy(seed, db)
            with Store(db) as store:
                started, cpu = time.perf_counter(), time.process_time()
                naive_steps = _naive(store, files)
                naive.append(time.perf_counter() - started)
                naive_cpu.append(time.process_time() - cpu)
    (o50, o95), (n50, n95) = _percentiles(ours), _percentiles(naive)
    print(
        f"{len(files)} files, {summary.n_steps} steps (naive: {naive_steps}), {summary.n_success} successes"
    )
    print(f"{'':<24}{'ours':>10}{'baseline':>10}{'ratio':>8}{'target':>10}")
    print(f"{'import p50 (s)':<24}{o50:>10.2f}{n50:>10.2f}{o50 / n50:>8.2f}{'≤ ' + str(TARGET_S):>10}")
    print(f"{'import p95 (s)':<24}{o95:>10.2f}{n95:>10.2f}{o95 / n95:>8.2f}")
    c50, b50 = statistics.median(ours_cpu), statistics.median(naive_cpu)
    print(f"{'CPU time p50 (s)':<24}{c50:>10.2f}{b50:>10.2f}{c50 / b50:>8.2f}")
    print(f"{'files/s (p50)':<24}{len(files) / o50:>10.0f}{len(files) / n50:>10.0f}{n50 / o50:>8.2f}")
    print(f"target met: {o50 <= TARGET_S} (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
