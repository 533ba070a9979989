"""Benchmark: scoring a full 812-task WebArena-Verified run, ours vs the official CLI.

Volume: a run directory in the official layout built under a temp dir: for each of the 812 tasks,
`agent_response.json` = the task's own expected answer (first alternative) and `network.har` = the real
demo HAR (`demo-run/107/network.har`, 805 KB, hard-linked where possible: the bytes read are real).
The config maps every site to the HAR's origin.

Ours, end to end: `core.ingest.wav_run.import_wav_run` into a database that already holds the
tasks, exactly what `trajreview import wav-run` does: 2 worker processes each read, parse (once) and
score their tasks with one `WebArenaVerified`, then the parent stores network events, agent responses
and evaluations in one transaction.
Baseline: `webarena-verified eval-tasks --output-dir <copy> --config <config>` in a subprocess.
Both produce a status per task; the number of tasks whose status differs must be 0.

Run: .venv/bin/python -m bench.bench_scoring   (BENCH_SCORING_OURS_REPEAT / _OFFICIAL_REPEAT: 3 / 2)
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
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

import orjson

from core.ingest.tasks import verified_dataset_path
from core.paths import shared_data_dir

TARGET_RATIO = 10.0
STRETCH_RATIO = 20.0
SITES = ("__GITLAB__", "__SHOPPING__", "__REDDIT__", "__MAP__", "__WIKIPEDIA__")


def build_run(root: Path) -> tuple[Path, Path]:
    """The 812-task run directory and a config mapping every site to the HAR's origin."""
    from core.scoring.engine import expected_answer

    har = shared_data_dir() / "webarena-verified" / "demo-run" / "107" / "network.har"
    entries = orjson.loads(har.read_bytes())["log"]["entries"]
    origins = Counter("{0.scheme}://{0.netloc}".format(urlsplit(e["request"]["url"])) for e in entries)
    origin = origins.most_common(1)[0][0]
    run = root / "run"
    for task in orjson.loads(verified_dataset_path().read_bytes()):
        task_dir = run / str(task["task_id"])
        task_dir.mkdir(parents=True)
        (task_dir / "agent_response.json").write_text(expected_answer(task["eval"]) or "")
        try:
            os.link(har, task_dir / "network.har")
        except OSError:
            shutil.copyfile(har, task_dir / "network.har")
    environments = {site: {"urls": [origin]} for site in SITES}
    environments["__SHOPPING_ADMIN__"] = {"urls": [f"{origin}/admin"]}
    config = root / "config.json"
    config.write_text(json.dumps({"environments": environments}))
    return run, config


def run_ours(run: Path, config: Path, db: Path) -> tuple[float, dict[int, str]]:
    """`trajreview import wav-run` as a user runs it: read, parse once, store events, score, store."""
    from core.ingest.tasks import ensure_tasks
    from core.ingest.wav_run import import_wav_run
    from core.store import Store

    with Store(db) as store:
        ensure_tasks(store)  # a database in daily use already holds the tasks: not on the clock
        started = time.perf_counter()
        import_wav_run(store, run, "bench", config=config, workers=2)
        elapsed = time.perf_counter() - started
        statuses = dict(store.query("SELECT task_id, status FROM evaluations WHERE run = 'bench'"))
    return elapsed, statuses


def run_official(run: Path, config: Path, copy: Path) -> tuple[float, dict[int, str]]:
    shutil.copytree(run, copy, copy_function=os.link)
    cli = Path(sys.executable).with_name("webarena-verified")
    started = time.perf_counter()
    subprocess.run(
        [str(cli), "eval-tasks", "--output-dir", str(copy), "--config", str(config)],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    elapsed = time.perf_counter() - started
    statuses = {
        int(p.parent.name): json.loads(p.read_text())["status"] for p in copy.glob("*/eval_result.json")
    }
    return elapsed, statuses


def main() -> None:
    ours_repeat = int(os.environ.get("BENCH_SCORING_OURS_REPEAT", "3"))
    official_repeat = int(os.environ.get("BENCH_SCORING_OFFICIAL_REPEAT", "2"))
    with tempfile.TemporaryDirectory(prefix="bench_scoring_") as tmp:
        root = Path(tmp)
        run, config = build_run(root)
        ours_times, ours_status = [], {}
        for i in range(ours_repeat):
            elapsed, ours_status = run_ours(run, config, root / f"ours{i}.duckdb")
            ours_times.append(elapsed)
        official_times, official_status = [], {}
        for i in range(official_repeat):
            elapsed, official_status = run_official(run, config, root / f"official{i}")
            official_times.append(elapsed)
            shutil.rmtree(root / f"official{i}")
    ours, baseline = statistics.median(ours_times), statistics.median(official_times)
    differing = sorted(
        t for t in set(ours_status) | set(official_status) if ours_status.get(t) != official_status.get(t)
    )
    counts = Counter(ours_status.values())
    print(f"scoring {len(ours_status)} tasks (statuses: {dict(sorted(counts.items()))})")
    print(f"{'measure':<34}{'ours':>10}{'baseline':>11}{'ratio':>9}{'target':>14}")
    print(
        f"{'wall clock, median (s)':<34}{ours:>10.2f}{baseline:>11.2f}{baseline / ours:>8.1f}x"
        f"{f'>= {TARGET_RATIO:.0f}x ({STRETCH_RATIO:.0f}x)':>14}"
    )
    print(f"{'tasks whose status differs':<34}{len(differing):>10}{'':>11}{'':>9}{'0':>14}")
    print(f"runs: ours {[round(t, 2) for t in ours_times]}, official {[round(t, 2) for t in official_times]}")
    if differing:
        print(f"differing task ids: {differing[:20]}")


if __name__ == "__main__":
    main()
