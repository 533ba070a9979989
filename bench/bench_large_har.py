"""Benchmark: peak memory and time of importing one task whose HAR is large, ours vs the official CLI.

Two inputs, built under a temp dir from the real demo HAR of task 108:
    100 MB HAR   the demo entries replicated to ~100 MB (size_mb argument)
    150 MB URL   the demo entries plus one entry whose URL is 150 MB long (a query string of one letter)

Each side is one fresh process, as a user runs it, timed from spawn to exit; peak RSS is the process's
own high-water mark (`/usr/bin/time`):
    ours      `trajreview --db DB import wav-run RUN --run big --config CONFIG --workers 1` (read, parse,
              store network events, score with the engine, store: everything in the one process)
    baseline  `webarena-verified eval-tasks --output-dir COPY --config CONFIG` (the official CLI)
The same commands on the 805 KB demo task give each side's start-up footprint (engine, dataset,
DuckDB), printed so the growth due to the file can be read off. Targets (issue 24): peak RSS at most 3x
the file for the 100 MB HAR, at most 2 GB for the 150 MB URL.

Run: .venv/bin/python -m bench large_har [size_mb]
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

TARGET_RSS_RATIO = 3.0  # peak RSS / HAR size, 100 MB HAR
TARGET_URL_RSS = 2 << 30  # peak RSS, 150 MB URL
TASK_ID = 108
MB = 1 << 20


def _demo_task() -> Path:
    from core.paths import shared_data_dir

    return shared_data_dir() / "webarena-verified" / "demo-run" / str(TASK_ID)


def _write_run(root: Path, name: str, har: dict) -> Path:
    task_dir = root / name / str(TASK_ID)
    task_dir.mkdir(parents=True)
    (task_dir / "network.har").write_bytes(orjson.dumps(har, option=orjson.OPT_INDENT_2))
    shutil.copyfile(_demo_task() / "agent_response.json", task_dir / "agent_response.json")
    return task_dir.parent


def make_runs(root: Path, size_mb: float) -> dict[str, Path]:
    har = orjson.loads((_demo_task() / "network.har").read_bytes())
    entries = har["log"]["entries"]
    one_copy = len(orjson.dumps(har, option=orjson.OPT_INDENT_2))
    big = {"log": {**har["log"], "entries": entries * max(1, round(size_mb * 1e6 / one_copy))}}
    origin = entries[0]["request"]["url"].split("/")[2]
    long_entry = orjson.loads(orjson.dumps(entries[0]))
    long_entry["request"]["url"] = f"http://{origin}/search?q=" + "a" * 150_000_000
    long_url = {"log": {**har["log"], "entries": [*entries, long_entry]}}
    small = {"log": har["log"]}
    return {
        "demo task (805 KB)": _write_run(root, "small", small),
        f"{size_mb:.0f} MB HAR": _write_run(root, "big", big),
        "150 MB URL": _write_run(root, "url", long_url),
    }


def _measure(cmd: list[str]) -> tuple[float, int]:
    """(seconds, peak RSS bytes) of one command in a fresh process.

    Started through /usr/bin/time, whose own small process forks it: a child forked from this (large)
    benchmark process would inherit this process's high-water mark in `ru_maxrss`.
    """
    started = time.perf_counter()
    out = subprocess.run(["/usr/bin/time", "-f", "MAXRSS %M", *cmd], capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if out.returncode != 0:
        raise RuntimeError(f"{cmd[0]} failed: {out.stderr[-500:]}")
    kilobytes = next(line for line in out.stderr.splitlines() if line.startswith("MAXRSS "))
    return elapsed, int(kilobytes.split()[1]) * 1024


def run_ours(run: Path, config: Path, base_db: Path, root: Path) -> tuple[float, int, str]:
    from core.store import Store

    db = root / "ours.duckdb"
    shutil.copyfile(base_db, db)
    cli = Path(sys.executable).with_name("trajreview")
    args = [
        "--db",
        str(db),
        "import",
        "wav-run",
        str(run),
        "--run",
        "big",
        "--config",
        str(config),
        "--workers",
        "1",
    ]
    seconds, rss = _measure([str(cli), *args])
    with Store(db, read_only=True) as store:
        status = store.query("SELECT status FROM evaluations WHERE run = 'big'")[0][0]
    db.unlink()
    return seconds, rss, status


def run_official(run: Path, config: Path, root: Path) -> tuple[float, int, str]:
    copy = root / "official"
    shutil.copytree(run, copy, copy_function=os.link)
    cli = Path(sys.executable).with_name("webarena-verified")
    seconds, rss = _measure([str(cli), "eval-tasks", "--output-dir", str(copy), "--config", str(config)])
    status = orjson.loads((copy / str(TASK_ID) / "eval_result.json").read_bytes())["status"]
    shutil.rmtree(copy)
    return seconds, rss, status


def main() -> None:
    from core.ingest.tasks import ensure_tasks
    from core.paths import shared_data_dir
    from core.store import Store

    size_mb = float(sys.argv[1]) if len(sys.argv) > 1 else 100.0
    config = shared_data_dir() / "webarena-verified" / "config.demo.json"
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-large-har-") as tmp:
        root = Path(tmp)
        runs = make_runs(root, size_mb)
        base_db = root / "tasks.duckdb"
        with Store(base_db) as store:  # a database in daily use already holds the tasks
            ensure_tasks(store)
        for name, run in runs.items():
            size = (run / str(TASK_ID) / "network.har").stat().st_size
            ours = run_ours(run, config, base_db, root)
            official = run_official(run, config, root)
            rows.append((name, size, ours, official))
    print(
        f"one task ({TASK_ID}) with a large HAR, each side one fresh process; load average {os.getloadavg()[0]:.1f}"
    )
    print(f"{'input':<20}{'file MB':>9}{'ours s':>8}{'official s':>11}{'ours peak MB':>13}{'official peak MB':>17}"
          f"{'ours/file':>10}{'official/file':>14}  status ours / official")  # fmt: skip
    start_up = rows[0][2][1]
    for name, size, (o_s, o_rss, o_status), (b_s, b_rss, b_status) in rows:
        print(f"{name:<20}{size / MB:>9.1f}{o_s:>8.2f}{b_s:>11.2f}{o_rss / MB:>13.0f}{b_rss / MB:>17.0f}"
              f"{o_rss / size:>10.2f}{b_rss / size:>14.2f}  {o_status} / {b_status}")  # fmt: skip
    _, size, (_, rss, _), (_, official_rss, _) = rows[1]
    _, _, (_, url_rss, _), (_, official_url_rss, _) = rows[2]
    print(f"{'measure':<44}{'ours':>9}{'baseline':>10}{'ratio':>8}{'target':>14}")
    print(f"{'peak RSS / file, ' + rows[1][0]:<44}{rss / size:>9.2f}{official_rss / size:>10.2f}"
          f"{rss / official_rss:>8.2f}{f'<= {TARGET_RSS_RATIO:.0f}x':>14}")  # fmt: skip
    print(f"{'RSS growth over the demo task / file':<44}{(rss - start_up) / size:>9.2f}"
          f"{(official_rss - rows[0][3][1]) / size:>10.2f}{'':>8}{'':>14}")  # fmt: skip
    print(f"{'peak RSS MB, 150 MB URL':<44}{url_rss / MB:>9.0f}{official_url_rss / MB:>10.0f}"
          f"{url_rss / official_url_rss:>8.2f}{f'<= {TARGET_URL_RSS / MB:.0f} MB':>14}")  # fmt: skip


if __name__ == "__main__":
    main()
