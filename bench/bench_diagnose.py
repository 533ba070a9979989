"""Benchmark: `trajreview diagnose` on the whole OpAgent run (228 failed tasks, rules only).

Ours: `load_facts`, the six set-based queries that read what the rules need for the whole run, and the
whole `diagnose_run` (facts, rules, the final transaction) through a ShortLivedStore, with the longest
time it held the file.
Baseline: the same facts read one task at a time (a query per task for its row, its steps, its trace's
server errors and its failing evaluators), the shape the design avoids.
Five rounds each; p50 and p95 (of five: the slowest).
Target: the whole run diagnosed in ≤ 10 s, holding the file ≤ 0.5 s at a time.

Run: .venv/bin/python -m bench diagnose (needs ../shared/data; builds the whole-run demo first)
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

from core.diagnose.facts import load_facts
from core.diagnose.run import diagnose_run
from core.ingest.demo import build_demo
from core.store import ShortLivedStore, Store

RUN = "opagent"
ROUNDS = 5
TARGET_S = 10.0
TARGET_HOLD_S = 0.5

PER_TASK = [
    "SELECT e.*, t.final_answer, t.termination, k.intent, k.eval FROM evaluations e"
    " LEFT JOIN trajectories t ON t.run = e.run AND t.task_id = e.task_id AND t.is_answer"
    " LEFT JOIN tasks k ON k.task_id = e.task_id WHERE e.run = ? AND e.task_id = ?",
    "SELECT idx, executed_action, kind, error, answer FROM steps WHERE run = ? AND task_id = ? ORDER BY idx",
    "SELECT seq, status, url FROM network_events WHERE run = ? AND task_id = ? AND status >= 500",
    "SELECT idx, evaluator, status, explanation FROM evaluator_results WHERE run = ? AND task_id = ?"
    " AND status <> 'success'",
]


def _per_task(store: Store) -> int:
    tasks = store.query(
        "SELECT task_id FROM evaluations WHERE run = ? AND status IN ('failure', 'error') ORDER BY 1", [RUN]
    )
    for (task_id,) in tasks:
        for sql in PER_TASK:
            store.query(sql, [RUN, task_id])
    return len(tasks)


def _timed(fn) -> list[float]:
    timings = []
    for _ in range(ROUNDS):
        started = time.perf_counter()
        fn()
        timings.append(time.perf_counter() - started)
    return timings


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "whole.duckdb"
        build_demo(path, source="shared")
        with Store(path, read_only=True) as store:
            ours_facts = _timed(lambda: load_facts(store, RUN))
            base_facts = _timed(lambda: _per_task(store))
            n = len(load_facts(store, RUN))
        holds: list[float] = []

        def whole() -> None:
            short = ShortLivedStore(path)
            diagnose_run(short, RUN)
            holds.extend(short.holds)

        ours_whole = _timed(whole)
    load = os.getloadavg()[0]
    print(f"{RUN}: {n} failed tasks; load average {load:.2f} (2 cores shared)")
    print(f"{'':<34}{'ours':>10}{'baseline':>10}{'ratio':>8}{'target':>10}")
    for label, ours, base in (("read the facts p50 (s)", ours_facts, base_facts),):
        o50, b50 = statistics.median(ours), statistics.median(base)
        print(f"{label:<34}{o50:>10.3f}{b50:>10.3f}{o50 / b50:>8.2f}{'':>10}")
        print(
            f"{'read the facts p95 (s)':<34}{max(ours):>10.3f}{max(base):>10.3f}{max(ours) / max(base):>8.2f}"
        )
    print(
        f"{'diagnose the run p50 (s)':<34}{statistics.median(ours_whole):>10.2f}{'':>10}{'':>8}{'≤ 10':>10}"
    )
    print(f"{'diagnose the run p95 (s)':<34}{max(ours_whole):>10.2f}")
    print(f"{'longest hold of the file (s)':<34}{max(holds):>10.3f}{'':>10}{'':>8}{'≤ 0.5':>10}")
    print(f"target met: {max(ours_whole) <= TARGET_S and max(holds) <= TARGET_HOLD_S}")


if __name__ == "__main__":
    main()
