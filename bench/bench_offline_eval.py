"""Benchmark: offline WebArena evaluation of a whole run (babelcloud, 812 tasks; and OpAgent, 809).

Setup (not timed): a database with the tasks and both runs imported.
Ours: `evaluate_run_offline`: one query loads every task's answer, last URL and config, the evaluators
run in memory, one transaction writes every evaluator row (Arrow) and annotates the verdict rows.
Baseline: the same evaluators driven the naive way: one query per task to load it, one INSERT per
evaluator row and one UPDATE per verdict row.
Target: a second or less for 812 tasks (cheap enough to run at every import). Five runs each.

Run: .venv/bin/python -m bench.bench_offline_eval
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

import orjson

from core.ingest.opagent import import_opagent
from core.ingest.tasks import import_tasks
from core.ingest.webarena_render import import_webarena_render
from core.paths import shared_data_dir
from core.scoring.offline.run import SOURCES, evaluate_run_offline
from core.scoring.offline.webarena import TaskRecord, combined_status, evaluate_task
from core.store import Store

TARGET_S = 1.0
RUNS = 5


def _naive(store: Store, run: str) -> int:
    """One query per task (its trajectory, config and last step), one INSERT per evaluator row, one
    UPDATE per verdict: the same evaluators and rows as ours."""
    task_ids = [
        t for (t,) in store.query("SELECT task_id FROM trajectories WHERE run = ? AND is_answer", [run])
    ]
    with store.transaction() as cur:
        cur.execute("DELETE FROM evaluator_results WHERE run = ? AND source LIKE 'offline%'", [run])
        for task_id in task_ids:
            config, answer, final_url, answer_only = cur.execute(
                "SELECT task_config, final_answer, final_url, answer_only FROM trajectories"
                " WHERE run = ? AND task_id = ? AND is_answer",
                [run, task_id],
            ).fetchone()
            last = cur.execute(
                "SELECT url, answer FROM steps WHERE run = ? AND task_id = ? ORDER BY idx DESC LIMIT 1",
                [run, task_id],
            ).fetchone() or (None, None)
            config = orjson.loads(config)
            record = TaskRecord(
                config["eval"], config.get("intent", ""), answer if answer is not None else last[1],
                None if answer_only else (final_url or last[0]),
            )  # fmt: skip
            outcomes = evaluate_task(record)
            for idx, o in enumerate(outcomes):
                cur.execute(
                    "INSERT INTO evaluator_results (run, task_id, idx, evaluator, status, score, assertions,"
                    " explanation, source, unresolved_reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [run, task_id, idx, o.evaluator, o.status, o.score, orjson.dumps(o.assertions).decode(),
                     o.explanation, SOURCES["run"], o.unresolved_reason],
                )  # fmt: skip
            cur.execute(
                "UPDATE evaluations SET offline_status = ? WHERE run = ? AND task_id = ?",
                [combined_status(outcomes), run, task_id],
            )
    return len(task_ids)


def main() -> None:
    data = shared_data_dir()
    folder = data / "webarena-render" / "babelcloud__webarena" / "gbox" / "trajectories"
    with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "bench.duckdb") as store:
        import_tasks(store, original=True)
        import_webarena_render(store, folder, "babelcloud")
        import_opagent(store, data / "oagent-run", "opagent")
        print(f"{'':<30}{'p50 (s)':>10}{'p95 (s)':>10}{'tasks/s':>10}")
        for run in ("babelcloud", "opagent"):
            timings = []
            for _ in range(RUNS):
                started = time.perf_counter()
                summary = evaluate_run_offline(store, run)
                timings.append(time.perf_counter() - started)
            p50, p95 = statistics.median(timings), max(timings)
            print(f"{'ours ' + run:<30}{p50:>10.3f}{p95:>10.3f}{summary.tasks / p50:>10.0f}")
            if run == "babelcloud":
                ours = p50
        started = time.perf_counter()
        n = _naive(store, "babelcloud")
        baseline = time.perf_counter() - started
        print(f"{'baseline babelcloud (1 run)':<30}{baseline:>10.3f}{baseline:>10.3f}{n / baseline:>10.0f}")
        print(
            f"ratio ours/baseline (babelcloud): {ours / baseline:.3f}; target ≤ {TARGET_S} s: {ours <= TARGET_S}"
        )


if __name__ == "__main__":
    main()
