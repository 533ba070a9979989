"""Benchmark: scoring a WebArena-Verified run of 2, 200 and 812 tasks, ours vs the official CLI.

Volume: a run directory in the official layout built under a temp dir: for each of the 812 tasks,
`agent_response.json` = the task's own expected answer (first alternative) and `network.har` = the real
demo HAR (`demo-run/107/network.har`, 805 KB, hard-linked where possible: the bytes read are real). The
200- and 2-task runs are the first tasks of it (2 tasks: the demo run's own tasks 107 and 108). The
config maps every site to the HAR's origin. Every HAR being the same file favours neither side: we keep
no cache keyed on a file's content (real runs have distinct HARs).

Both sides run as a user runs them, one command in a fresh process, start-up included:
    ours      `trajreview --db COPY import wav-run RUN --run bench --config CONFIG` on a copy of a
              database that already holds the tasks (a database in daily use): read, parse each trace
              once, store network events and agent responses, score with the official engine, store.
    baseline  `webarena-verified eval-tasks --output-dir COPY --config CONFIG` (the official CLI).
The two alternate, repetition by repetition, so both see the same machine load. Every task's status and
score must equal the official CLI's own `eval_result.json` (0 differences).

    bound     `python -m bench.scoring_only RUN CONFIG`: the same run scored and nothing stored (no rows, no
              redaction, no database), started as our command starts, two workers, each HAR decoded into
              the entries the engine takes. The floor under any import that hands the engine the file's
              entries on this machine: `official / bound` (the "bound" ratio) is the most such an import
              could print at that size, whatever it does about rows and storage.
    floor     `python -c "import webarena_verified.api.webarena_verified"` (`ENGINE_MODULE`, the module
              our workers' preload imports too): a fresh process importing the official engine and nothing
              else, as the official package imports it (pint's unit registry parsed from its definitions,
              not read from the cache our `core.scoring.official_engine` keeps), timed in the same
              alternation. Any tool that imports the engine as it ships pays it, so `official / floor`
              (the "ceiling" column) is the best ratio such a tool could print at that size; ours reads
              the registry from a cache and may start below it.

Run: .venv/bin/python -m bench scoring   (BENCH_SCORING_SIZES=2,200,812, BENCH_SCORING_REPEAT=3)
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

from core.files.parallel import ENGINE_MODULE
from core.ingest.tasks import verified_dataset_path
from core.paths import shared_data_dir

# Targets of issue 24: at least these ratios (official seconds / ours); at 2 tasks, faster than it.
TARGETS = {2: 1.0, 200: 10.0, 812: 20.0}
SITES = ("__GITLAB__", "__SHOPPING__", "__REDDIT__", "__MAP__", "__WIKIPEDIA__")


def build_run(root: Path) -> tuple[Path, Path]:
    """The 812-task run directory and a config mapping every site to the HAR's origin."""
    from core.scoring.cannot_pass import expected_answer

    har = shared_data_dir() / "webarena-verified" / "demo-run" / "107" / "network.har"
    entries = orjson.loads(har.read_bytes())["log"]["entries"]
    origins = Counter("{0.scheme}://{0.netloc}".format(urlsplit(e["request"]["url"])) for e in entries)
    origin = origins.most_common(1)[0][0]
    run = root / "run"
    for task in orjson.loads(verified_dataset_path().read_bytes()):
        task_dir = run / str(task["task_id"])
        task_dir.mkdir(parents=True)
        (task_dir / "agent_response.json").write_text(expected_answer(task["eval"]) or "")
        _link(har, task_dir / "network.har")
    environments = {site: {"urls": [origin]} for site in SITES}
    environments["__SHOPPING_ADMIN__"] = {"urls": [f"{origin}/admin"]}
    config = root / "config.json"
    config.write_text(json.dumps({"environments": environments}))
    return run, config


def _link(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


def subset(run: Path, size: int, root: Path) -> Path:
    """The first `size` tasks of `run` (for 2: the demo run's tasks 107 and 108), files hard-linked."""
    ids = [107, 108] if size == 2 else sorted(int(p.name) for p in run.iterdir())[:size]
    out = root / f"run{size}"
    for task_id in ids:
        (out / str(task_id)).mkdir(parents=True)
        for file in (run / str(task_id)).iterdir():
            _link(file, out / str(task_id) / file.name)
    return out


def tasks_database(root: Path) -> Path:
    """A database holding the 812 tasks, as one in daily use does (built once, copied per run)."""
    from core.ingest.tasks import ensure_tasks
    from core.store import Store

    db = root / "tasks.duckdb"
    with Store(db) as store:
        ensure_tasks(store)
    return db


def run_ours(run: Path, config: Path, base_db: Path, work: Path) -> tuple[float, dict[int, tuple]]:
    """`trajreview import wav-run` in a fresh process; (seconds, task -> (status, score))."""
    from core.store import Store

    db = work / "ours.duckdb"
    shutil.copyfile(base_db, db)
    cli = Path(sys.executable).with_name("trajreview")
    started = time.perf_counter()
    subprocess.run(
        [str(cli), "--db", str(db), "import", "wav-run", str(run), "--run", "bench", "--config", str(config)],
        check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    elapsed = time.perf_counter() - started
    with Store(db, read_only=True) as store:
        rows = store.query("SELECT task_id, status, score FROM evaluations WHERE run = 'bench'")
    db.unlink()
    return elapsed, {task_id: (status, score) for task_id, status, score in rows}


def run_official(run: Path, config: Path, work: Path) -> tuple[float, dict[int, tuple]]:
    copy = work / "official"
    shutil.copytree(run, copy, copy_function=os.link)
    cli = Path(sys.executable).with_name("webarena-verified")
    started = time.perf_counter()
    subprocess.run(
        [str(cli), "eval-tasks", "--output-dir", str(copy), "--config", str(config)],
        check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    elapsed = time.perf_counter() - started
    results = {}
    for path in copy.glob("*/eval_result.json"):
        result = json.loads(path.read_text())
        results[int(path.parent.name)] = (
            result["status"],
            None if result["status"] == "error" else result["score"],
        )
    shutil.rmtree(copy)
    return elapsed, results


def run_bound(run: Path, config: Path) -> tuple[float, dict[int, tuple]]:
    """`bench.scoring_only` in a fresh process; (seconds, task -> (status, score))."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "bench.scoring_only", str(run), str(config)],
        check=True, capture_output=True, cwd=Path(__file__).parent.parent,
    )  # fmt: skip
    elapsed = time.perf_counter() - started
    return elapsed, {int(task): tuple(result) for task, result in json.loads(done.stdout).items()}


def run_floor() -> float:
    """Seconds for a fresh process that only imports the official engine."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", f"import {ENGINE_MODULE}"], check=True)
    return time.perf_counter() - started


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    sizes = [int(s) for s in os.environ.get("BENCH_SCORING_SIZES", "2,200,812").split(",")]
    repeat = int(os.environ.get("BENCH_SCORING_REPEAT", "3"))
    rows = []
    floor_times: list[float] = []
    with tempfile.TemporaryDirectory(prefix="bench_scoring_") as tmp:
        root = Path(tmp)
        full, config = build_run(root)
        base_db = tasks_database(root)
        for size in sizes:
            run = full if size >= 812 else subset(full, size, root)
            ours_times, official_times, bound_times, differing, statuses = [], [], [], set(), Counter()
            for _ in range(repeat):  # alternate, so all sides see the same load
                floor_times.append(run_floor())
                elapsed, ours = run_ours(run, config, base_db, root)
                ours_times.append(elapsed)
                elapsed, official = run_official(run, config, root)
                official_times.append(elapsed)
                elapsed, bound = run_bound(run, config)
                bound_times.append(elapsed)
                differing |= {t for t in set(ours) | set(official) if ours.get(t) != official.get(t)}
                differing |= {t for t in set(bound) | set(official) if bound.get(t) != official.get(t)}
                statuses = Counter(status for status, _ in ours.values())
            rows.append((size, ours_times, official_times, bound_times, sorted(differing), statuses))
    load = os.getloadavg()[0]
    print(
        f"scoring runs of 2, 200 and 812 tasks; {repeat} runs each side, alternating; load average {load:.1f}"
    )
    header = (
        "tasks",
        "ours p50 s",
        "ours p95 s",
        "official p50 s",
        "official p95 s",
        "ratio",
        "target",
        "bound p50 s",
        "bound ratio",
        "ceiling",
        "differ",
    )
    print("  ".join(f"{h:>14}" for h in header))
    floor = statistics.median(floor_times)
    for size, ours_times, official_times, bound_times, differing, _ in rows:
        ours, official = statistics.median(ours_times), statistics.median(official_times)
        bound = statistics.median(bound_times)
        target = f">= {TARGETS.get(size, 1.0):.0f}x" if size > 2 else "> 1x"
        cells = (size, f"{ours:.2f}", f"{percentile(ours_times, 0.95):.2f}", f"{official:.2f}",
                 f"{percentile(official_times, 0.95):.2f}", f"{official / ours:.1f}x", target, f"{bound:.2f}",
                 f"{official / bound:.1f}x", f"{official / floor:.1f}x", len(differing))  # fmt: skip
        print("  ".join(f"{c:>14}" for c in cells))
    print(
        f"floor (a fresh process importing the official engine only): p50 {floor:.2f} s, p95"
        f" {percentile(floor_times, 0.95):.2f} s over {len(floor_times)} runs; ceiling = official p50 / floor"
    )
    print(
        "bound = a run scored and nothing stored (bench.scoring_only): official p50 / bound p50 is the most an"
        " import that hands the engine the file's entries could print here"
    )
    for size, ours_times, official_times, bound_times, differing, statuses in rows:
        print(f"{size} tasks: statuses {dict(sorted(statuses.items()))}; runs ours {[round(t, 2) for t in ours_times]},"
              f" official {[round(t, 2) for t in official_times]}, bound {[round(t, 2) for t in bound_times]}")  # fmt: skip
        if differing:
            print(
                f"  tasks whose status or score (ours or bound) differs from the official CLI: {differing[:20]}"
            )


if __name__ == "__main__":
    main()
