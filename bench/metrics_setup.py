"""The set-up and baseline the trajectory-metrics benchmarks share (bench_opagent_metrics,
bench_transcript_metrics): a database with the tasks and the paper's gold, and the metrics computed by
asking the judge pair by pair."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from core.ingest.gold import import_gold
from core.ingest.tasks import import_tasks
from core.measure.judge.cascade import make_judge
from core.measure.metrics import PRESETS
from core.measure.metrics_run import compute_task, load_task_inputs
from core.paths import shared_data_dir
from core.store import Store

GOLD = "paper"


@contextmanager
def store_with_gold() -> Iterator[tuple[Store, Path]]:
    """A temporary database with the tasks and the paper's 652-task gold xlsx (as `GOLD`), and the shared
    data folder the runs are imported from. Not timed."""
    data = shared_data_dir()
    with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "bench.duckdb") as store:
        import_tasks(store, original=True)
        import_gold(store, data / "human-gold" / "Golden Human Trajectories.xlsx", GOLD)
        yield store, data


def pair_by_pair(store: Store, run: str) -> tuple[float, int]:
    """The baseline: the default metrics of every task of `run`, asking the offline judge one pair at a time
    as each metric needs it (no batch, no de-duplication across tasks), in memory (no writes, which favours
    the baseline). Returns its seconds and how many times it asked."""
    judge = make_judge("offline", store, use_embeddings=False)
    tasks = load_task_inputs(store, run, GOLD)
    asked = 0

    def one(pair):
        nonlocal asked
        asked += 1
        return judge.judge_many([pair])[0]

    started = time.perf_counter()
    for task in tasks:
        compute_task(task, one, PRESETS["default"])
    return time.perf_counter() - started, asked
