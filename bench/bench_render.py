"""Benchmark: importing the whole 812-task babelcloud WebArena render run (812 renders + 812 logs, ~51 MB).

Ours: `import_webarena_render` into a fresh database with the task datasets already loaded: parse
every render (markup neutralised, every step part), read the 812 logs, write one transaction.
Baseline: a plain selectolax parse of the same files reading only the `parsed_action` divs, as the
spec measured (≈0.5 s); it misses the 41 renders whose pasted markup swallows the rest of the file.
Target: the whole import in ≤ 5 s.

Run: .venv/bin/python -m bench.bench_render
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

from selectolax.lexbor import LexborHTMLParser

from core.ingest.tasks import import_tasks
from core.ingest.webarena_render import import_webarena_render
from core.paths import shared_data_dir
from core.store import Store

TARGET_S = 5.0


def _baseline(files: list[Path]) -> tuple[float, int]:
    started = time.perf_counter()
    ending_in_stop = 0
    for path in files:
        tree = LexborHTMLParser(path.read_bytes().decode("utf-8"))
        actions = tree.css("div.parsed_action")
        if actions and actions[-1].text().strip().startswith("stop ["):
            ending_in_stop += 1
    return time.perf_counter() - started, ending_in_stop


def main() -> None:
    folder = shared_data_dir() / "webarena-render" / "babelcloud__webarena" / "gbox" / "trajectories"
    files = sorted(folder.rglob("render_*.html"))
    with tempfile.TemporaryDirectory() as tmp:
        seed = Path(tmp) / "tasks.duckdb"
        with Store(seed) as store:
            import_tasks(store, original=True)
        timings = []
        for attempt in range(2):  # the second run replaces the first: the re-import path
            db = Path(tmp) / f"run{attempt}.duckdb"
            shutil.copy(seed, db)
            with Store(db) as store:
                started = time.perf_counter()
                summary = import_webarena_render(store, folder, "babelcloud")
                timings.append(time.perf_counter() - started)
                stops = store.query(
                    "SELECT count(*) FROM trajectories WHERE run = 'babelcloud' AND termination <> 'interrupted'"
                )[0][0]
        ours = min(timings)
    baseline, baseline_stops = _baseline(files)
    print(
        f"{len(files)} render files, {summary.n_steps} steps, logs {summary.n_pass} PASS / {summary.n_fail} FAIL"
    )
    print(f"renders ending in a stop: ours {stops}, baseline {baseline_stops}")
    print(f"{'':<28}{'ours':>10}{'baseline':>10}{'ratio':>8}{'target':>10}")
    print(
        f"{'total time (s)':<28}{ours:>10.2f}{baseline:>10.2f}{ours / baseline:>8.1f}{'≤ ' + str(TARGET_S):>10}"
    )
    print(
        f"{'tasks/s':<28}{len(files) / ours:>10.0f}{len(files) / baseline:>10.0f}{baseline / ours:>8.2f}{'':>10}"
    )
    print(f"target met: {ours <= TARGET_S}")


if __name__ == "__main__":
    main()
