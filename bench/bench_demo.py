"""Benchmark: building the demo database a clone on its own builds (`make demo`, and the tests' demo_db).

Ours: `build_diagnosed_demo(source="shipped")` (what `trajreview demo` builds), from the demo set shipped in data/demo (slices of the OpAgent and
babelcloud runs, the WebArena-Verified demo run, our gold; metrics with the offline judge).
Baseline: `build_diagnosed_demo(source="shared")`, what `make demo` built before the set was shipped and still
builds where ../shared/data sits beside the repository (the whole runs, the AgentLab sample, the paper's
gold). Three builds each, p50 and p95 (of three: the slowest).
Target: the shipped build in ≤ 30 s, the wait a newcomer's first `make demo` adds once.

Run: .venv/bin/python -m bench demo
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from core.cli.demo import build_diagnosed_demo
from core.paths import SHIPPED_DATA, shared_data_dir
from core.store import Store

TARGET_S = 30.0
BUILDS = 3


def _builds(source: str, tmp: Path) -> tuple[list[float], dict[str, int]]:
    timings = []
    for i in range(BUILDS):
        path = tmp / f"{source}{i}.duckdb"
        started = time.perf_counter()
        build_diagnosed_demo(path, source=source)
        timings.append(time.perf_counter() - started)
    with Store(path, read_only=True) as store:
        counts = dict(store.query("SELECT run, count(*) FROM evaluations GROUP BY run ORDER BY run"))
    return timings, counts


def _mb(root: Path) -> float:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) / (1 << 20)


def main() -> None:
    shared = shared_data_dir()
    with tempfile.TemporaryDirectory() as tmp:
        ours, ours_counts = _builds("shipped", Path(tmp))
        base, base_counts = _builds("shared", Path(tmp))
    print(
        f"data read: ours {_mb(SHIPPED_DATA):.1f} MB (data/demo), baseline {_mb(shared):.1f} MB (../shared/data)"
    )
    print(f"tasks per run: ours {ours_counts}; baseline {base_counts}")
    p50, b50 = statistics.median(ours), statistics.median(base)
    p95, b95 = max(ours), max(base)
    print(f"{'':<28}{'ours':>10}{'baseline':>10}{'ratio':>8}{'target':>10}")
    print(f"{'build p50 (s)':<28}{p50:>10.1f}{b50:>10.1f}{p50 / b50:>8.2f}{'≤ ' + str(TARGET_S):>10}")
    print(f"{'build p95 (s)':<28}{p95:>10.1f}{b95:>10.1f}{p95 / b95:>8.2f}{'':>10}")
    print(f"target met: {p95 <= TARGET_S}")


if __name__ == "__main__":
    main()
