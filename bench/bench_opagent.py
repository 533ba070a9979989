"""OpAgent run: import (809 real files), offline evaluation of whole runs, metrics against the paper's gold.

Setup (not timed): a temporary database with the task datasets and the paper's gold; the babelcloud
render run for the offline evaluation of 812 tasks.
Timed, each repeated and reported as p50/p95:
1. `import_opagent` of ../shared/data/oagent-run (809 files, 9,858 actions, one transaction) beside a
   naive importer in the same run (stdlib `json`, one INSERT statement per row), target <= 2 s;
2. the offline WebArena evaluators over the 812 babelcloud tasks and the 809 OpAgent tasks;
3. metrics of the OpAgent run against the 652-task gold with the offline judge, with and without the
   optional embeddings stage, target <= 10 s, and the share of distinct pairs an LLM would get (the
   ambiguous band the offline judge settles approximately).
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from pathlib import Path

from core.datasets import import_tasks
from core.importers.gold import import_gold
from core.importers.opagent import import_opagent
from core.importers.webarena_render import import_webarena_render
from core.judge.cascade import make_judge
from core.metrics_run import run_metrics
from core.offline_runs import evaluate_offline
from core.paths import shared_data_dir
from core.store import Store

IMPORT_TARGET_S = 2.0
METRICS_TARGET_S = 10.0
REPEATS = 5


def _p(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return f"p50 {statistics.median(ordered):.2f} s, p95 {p95:.2f} s"


def _naive_import(store: Store, root: Path, run: str) -> None:
    """The baseline: stdlib json, a statement per row, the same tables."""
    cur = store.cursor()
    cur.execute("BEGIN TRANSACTION")
    cur.execute("DELETE FROM steps WHERE run = ?", [run])
    cur.execute("DELETE FROM trajectories WHERE run = ?", [run])
    for path in sorted((root / "final_results").glob("*.json")):
        task_id = int(path.stem)
        items = json.loads(path.read_text())
        actions = [i for i in items if i.get("type") == "action"]
        for idx, item in enumerate(actions):
            planner = item.get("planner_output") or {}
            cur.execute(
                "INSERT INTO steps (run, task_id, episode, idx, url, stated_action, executed_action, error)"
                " VALUES (?, ?, '0', ?, ?, ?, ?, ?)",
                [run, task_id, idx, item.get("page_url"), planner.get("instruction"), json.dumps(item.get("action")),
                 item.get("error_msg") or None],
            )  # fmt: skip
        cur.execute(
            "INSERT INTO trajectories (run, task_id, episode, is_answer, n_steps, termination)"
            " VALUES (?, ?, '0', true, ?, 'answered')",
            [run, task_id, len(actions)],
        )
    cur.execute("COMMIT")


def main() -> None:
    data = shared_data_dir()
    root = data / "oagent-run"
    with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "bench.duckdb") as store:
        import_tasks(store, original=True)
        import_gold(store, data / "human-gold" / "Golden Human Trajectories.xlsx", "paper")
        folder = data / "webarena-render" / "babelcloud__webarena" / "gbox" / "trajectories"
        import_webarena_render(store, folder, "babel")

        ours, base = [], []
        for i in range(REPEATS):
            start = time.perf_counter()
            s = import_opagent(store, root, "op")
            ours.append(time.perf_counter() - start)
            start = time.perf_counter()
            _naive_import(store, root, f"naive-{i}")
            base.append(time.perf_counter() - start)
        verdict = "ok" if max(ours) <= IMPORT_TARGET_S else "MISS"
        print(f"import 809 OpAgent files ({s.n_steps} steps, {s.n_tasks} tasks, offline evaluation included):")
        print(f"  ours     {_p(ours)}   target <= {IMPORT_TARGET_S:.0f} s: {verdict}")
        print(f"  baseline {_p(base)}   (stdlib json, one INSERT per row, steps and trajectories only)")
        print(f"  ratio    {statistics.median(base) / statistics.median(ours):.1f}x faster")

        for run, label in (("babel", "812 babelcloud tasks"), ("op", "809 OpAgent tasks")):
            samples = []
            for _ in range(REPEATS):
                start = time.perf_counter()
                summary = evaluate_offline(store, run)
                samples.append(time.perf_counter() - start)
            print(f"offline evaluators, {label}: {_p(samples)}; decidable {summary.decidable}, "
                  f"agree {summary.agree}/{summary.compared}")  # fmt: skip

        for embeddings in (False, True):
            judge = make_judge("offline", store, use_embeddings=embeddings)
            if embeddings and judge.embeddings is None:
                print("metrics with embeddings: the embeddings extra is not installed, skipped")
                continue
            start = time.perf_counter()
            summary = run_metrics(store, "op", "paper", judge)
            took = time.perf_counter() - start
            pairs = sum(summary.stages.values())
            ambiguous = summary.stages.get("offline", 0) + summary.stages.get("embedding", 0)
            verdict = "ok" if took <= METRICS_TARGET_S else "MISS"
            print(f"metrics OpAgent vs paper gold, offline judge{' + embeddings' if embeddings else ''}: "
                  f"{took:.1f} s for {summary.tasks_with_gold} tasks with gold (target <= {METRICS_TARGET_S:.0f} s: "
                  f"{verdict}); {pairs} distinct pairs, {ambiguous} ({ambiguous / pairs:.1%}) in the band an LLM "
                  f"would get; stages {dict(summary.stages)}")  # fmt: skip


if __name__ == "__main__":
    main()
