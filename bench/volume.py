"""Benchmark databases at volume, built from the real data by replication under new names.

`build_volume_db(path, n_runs)` imports the real runs once (the demo database's steps: tasks, the
812-task babelcloud render run with offline metrics against the paper's gold, the AgentLab sample, the
WebArena-Verified demo run with its network trace), then copies the babelcloud run `n_runs` times under
new run names (every row of every run table, so triage, metrics, evaluations and the run's summary are
all there). Into the
first copy it puts the two heavy cases the dashboard targets name:
- a 70-step task: the real 10-step AgentLab episode of task 162 (screenshots, AXTree, chat) repeated
  seven times with new step numbers, with metrics and alignment recomputed for it;
- a 35,000-event trace: the real 359-event HAR of WebArena-Verified task 107 repeated with new sequence
  numbers and shifted times, with its evaluator results.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from core.cli.demo import build_diagnosed_demo
from core.ingest.writer import RUN_TABLES
from core.measure.run_summaries import refresh_run_summary
from core.paths import REPO_ROOT
from core.search.index import remove_index
from core.store import Store

SOURCE_RUN = "webarena-render-babelcloud"
LONG_SOURCE = ("agentlab-sample", 162)  # 10 real steps with screenshots and observations
TRACE_SOURCE = ("wav-demo", 107)  # 359 real events
LONG_STEPS = 70
TRACE_EVENTS = 35_000
_CACHE = Path(os.environ.get("TRAJREVIEW_BENCH_CACHE", Path(__file__).parent / "out"))


@dataclass(frozen=True)
class VolumeDb:
    path: Path
    runs: list[str]
    long_task: tuple[str, int]  # (run, task) with LONG_STEPS steps
    trace_task: tuple[str, int]  # (run, task) with TRACE_EVENTS events


def run_name(i: int) -> str:
    return f"bench-run-{i:02d}"


def base_db() -> Path:
    """The demo database, built once and reused by every benchmark until the code that builds it changes
    (keyed by a hash of core/: a base built by older importers or migrations is never measured)."""
    digest = hashlib.sha256()
    for source in sorted((REPO_ROOT / "core").rglob("*")):
        if source.suffix in (".py", ".sql"):
            digest.update(source.read_bytes())
    base = _CACHE / f"volume-base-{digest.hexdigest()[:12]}.duckdb"
    if not base.exists():
        _CACHE.mkdir(parents=True, exist_ok=True)
        for old in _CACHE.glob("volume-base*.duckdb"):
            old.unlink()
            remove_index(old)  # its full-text index beside it
        build_diagnosed_demo(base, source="shared")
    return base


def _copy_run(cur, source: str, target: str) -> None:
    cur.execute("INSERT INTO runs SELECT * REPLACE (? AS name) FROM runs WHERE name = ?", [target, source])
    for table in RUN_TABLES:
        cur.execute(
            f"INSERT INTO {table} SELECT * REPLACE (? AS run) FROM {table} WHERE run = ?", [target, source]
        )


def _long_task(cur, run: str) -> int:
    src_run, task = LONG_SOURCE
    (episode,) = cur.execute(
        "SELECT episode FROM trajectories WHERE run = ? AND task_id = ? AND is_answer", [src_run, task]
    ).fetchall()[0]
    n = cur.execute(
        "SELECT count(*) FROM steps WHERE run = ? AND task_id = ? AND episode = ?", [src_run, task, episode]
    ).fetchall()[0][0]
    for table in (
        "trajectories",
        "steps",
        "observations",
        "metrics",
        "alignments",
        "alignment_steps",
        "evaluations",
    ):
        cur.execute(f"DELETE FROM {table} WHERE run = ? AND task_id = ?", [run, task])
    cur.execute(
        "INSERT INTO trajectories SELECT * REPLACE (? AS run, ? AS n_steps) FROM trajectories"
        " WHERE run = ? AND task_id = ? AND episode = ?",
        [run, LONG_STEPS, src_run, task, episode],
    )
    cur.execute(
        "INSERT INTO evaluations SELECT * REPLACE (? AS run) FROM evaluations WHERE run = ? AND task_id = ?",
        [run, src_run, task],
    )
    for table in ("steps", "observations"):
        cur.execute(
            f"INSERT INTO {table} SELECT s.* REPLACE (? AS run, s.idx + k.copy * ? AS idx)"
            f" FROM {table} s, range(?) k(copy)"
            " WHERE s.run = ? AND s.task_id = ? AND s.episode = ? AND s.idx + k.copy * ? < ?",
            [run, n, (LONG_STEPS + n - 1) // n, src_run, task, episode, n, LONG_STEPS],
        )
    return task


def _big_trace(cur, run: str) -> int:
    src_run, task = TRACE_SOURCE
    (n,) = cur.execute(
        "SELECT count(*) FROM network_events WHERE run = ? AND task_id = ?", [src_run, task]
    ).fetchall()[0]
    copies = (TRACE_EVENTS + n - 1) // n
    cur.execute("DELETE FROM network_events WHERE run = ? AND task_id = ?", [run, task])
    cur.execute(
        "INSERT INTO network_events SELECT e.* REPLACE (? AS run, e.seq + k.copy * ? AS seq,"
        " e.started_at + k.copy * INTERVAL 2 SECOND AS started_at)"
        " FROM network_events e, range(?) k(copy) WHERE e.run = ? AND e.task_id = ? AND e.seq + k.copy * ? < ?",
        [run, n, copies, src_run, task, n, TRACE_EVENTS],
    )
    for table in ("evaluations", "evaluator_results", "agent_responses"):
        cur.execute(f"DELETE FROM {table} WHERE run = ? AND task_id = ?", [run, task])
        cur.execute(
            f"INSERT INTO {table} SELECT * REPLACE (? AS run) FROM {table} WHERE run = ? AND task_id = ?",
            [run, src_run, task],
        )
    return task


def build_volume_db(path: str | Path, n_runs: int) -> VolumeDb:
    """A database of `n_runs` copies of the 812-task babelcloud run (plus the demo's own runs)."""
    path = Path(path)
    shutil.copy(base_db(), path)
    names = [run_name(i) for i in range(n_runs)]
    with Store(path) as store:
        with store.transaction() as cur:
            for name in names:
                _copy_run(cur, SOURCE_RUN, name)
            long_task = _long_task(cur, names[0])
            trace_task = _big_trace(cur, names[0])
            refresh_run_summary(cur, names[0])  # copied with the run, then given two more tasks
        from core.measure.metrics_run import run_task_metrics

        run_task_metrics(store, names[0], long_task, "paper-gold")
    return VolumeDb(path, names, (names[0], long_task), (names[0], trace_task))
