"""Benchmark: import + score one task whose HAR is ~100 MB (the real demo HAR's entries replicated).

Each side runs in a fresh subprocess so peak RSS is its own. Libraries and the scoring engine are warmed
up first in both (start-up is not what we measure); the tasks table is loaded before the clock starts.

    ours      parse (streaming) + network_events insert + official score, via `import_wav_run`
    baseline  the official `NetworkTrace.from_har` on the same file (parse only), and the official
              `WebArenaVerified.evaluate_task` given the HAR path (parse + score)

Run: .venv/bin/python -m bench.bench_large_har [size_mb]
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import orjson

TARGET_SECONDS = 2.0
TARGET_RSS_RATIO = 3.0  # peak RSS / HAR size
TASK_ID = 108


def _make_run(root: Path, size_mb: float) -> Path:
    from core.paths import shared_data_dir

    demo = shared_data_dir() / "webarena-verified" / "demo-run" / str(TASK_ID)
    har = orjson.loads((demo / "network.har").read_bytes())
    entries = har["log"]["entries"]
    one_copy = len(orjson.dumps(har, option=orjson.OPT_INDENT_2))  # the file written below, one copy
    har["log"]["entries"] = entries * max(1, round(size_mb * 1e6 / one_copy))
    task_dir = root / "run" / str(TASK_ID)
    task_dir.mkdir(parents=True)
    (task_dir / "network.har").write_bytes(orjson.dumps(har, option=orjson.OPT_INDENT_2))
    (task_dir / "agent_response.json").write_bytes((demo / "agent_response.json").read_bytes())
    return root / "run"


_OURS = r"""
import json, resource, shutil, sys, time
from pathlib import Path
from core.ingest.tasks import ensure_tasks
from core.ingest.wav_run import import_wav_run
from core.paths import shared_data_dir
from core.store import Store

run_dir, db, config = Path(sys.argv[1]), Path(sys.argv[2]), shared_data_dir() / "webarena-verified" / "config.demo.json"
with Store(db) as store:
    ensure_tasks(store)  # already done by the setup process: a real database holds its tasks
    # warm-up: libraries, Arrow, and the engine (one per process, cached) on the real 805 KB demo task
    import_wav_run(store, shared_data_dir() / "webarena-verified" / "demo-run", "warm", config=config, workers=1)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    t0 = time.perf_counter()
    summary = import_wav_run(store, run_dir, "big", config=config, workers=1)
    seconds = time.perf_counter() - t0
    status = store.query("SELECT status FROM evaluations WHERE run = 'big'")[0][0]
print(json.dumps({"seconds": seconds, "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                  "rss_before": rss_before, "events": summary.n_events, "status": status}))
"""

_SETUP = r"""
import json, sys
from core.ingest.tasks import ensure_tasks
from core.store import Store
with Store(sys.argv[1]) as store:
    ensure_tasks(store)
print(json.dumps({}))
"""

_BASELINE = r"""
import json, logging, resource, sys, time
from pathlib import Path
from webarena_verified.types.tracing import NetworkTrace
har, mode = Path(sys.argv[1]), sys.argv[2]
rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
if mode == "parse":
    t0 = time.perf_counter()
    trace = NetworkTrace.from_har(har)
    seconds, status, n = time.perf_counter() - t0, None, len(trace.events)
else:
    from webarena_verified.api.webarena_verified import WebArenaVerified
    from webarena_verified.types.config import WebArenaVerifiedConfig
    from core.paths import shared_data_dir
    logging.getLogger("WebArena-Verified").setLevel(logging.CRITICAL)
    wav = shared_data_dir() / "webarena-verified"
    wa = WebArenaVerified(config=WebArenaVerifiedConfig.from_file(wav / "config.demo.json"))
    response = (har.parent / "agent_response.json").read_text()
    demo = wav / "demo-run" / "108"
    wa.evaluate_task(task_id=108, agent_response=response, network_trace=demo / "network.har")  # warm-up
    t0 = time.perf_counter()
    result = wa.evaluate_task(task_id=108, agent_response=response, network_trace=har)
    seconds, status, n = time.perf_counter() - t0, str(result.status), None
print(json.dumps({"seconds": seconds, "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                  "rss_before": rss_before, "status": status, "events": n}))
"""


def _run(code: str, *args: str) -> dict:
    from core.paths import REPO_ROOT

    out = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=REPO_ROOT, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    size_mb = float(sys.argv[1]) if len(sys.argv) > 1 else 100.0
    with tempfile.TemporaryDirectory(prefix="bench-large-har-") as tmp:
        run_dir = _make_run(Path(tmp), size_mb)
        har = run_dir / str(TASK_ID) / "network.har"
        size = har.stat().st_size
        db = Path(tmp) / "bench.duckdb"
        _run(_SETUP, str(db))  # tasks loaded in their own process, as in a database in daily use
        ours = _run(_OURS, str(run_dir), str(db))
        parse = _run(_BASELINE, str(har), "parse")
        official = _run(_BASELINE, str(har), "score")
    mb = 1 << 20
    print(f"large HAR: {size / 1e6:.1f} MB, {ours['events']} entries; task {TASK_ID} -> ours {ours['status']}, "
          f"official {official['status']}")  # fmt: skip
    rows = [
        ("metric", "ours", "baseline", "ratio", "target"),
        (
            "parse+store+score s (vs official from_har parse only)",
            f"{ours['seconds']:.2f}", f"{parse['seconds']:.2f}", f"{ours['seconds'] / parse['seconds']:.2f}",
            f"<= {TARGET_SECONDS:.1f}",
        ),
        (
            "parse+store+score s (vs official evaluate_task on the file)",
            f"{ours['seconds']:.2f}", f"{official['seconds']:.2f}", f"{ours['seconds'] / official['seconds']:.2f}",
            f"<= {TARGET_SECONDS:.1f}",
        ),
        (
            "peak RSS MB (vs official from_har)",
            f"{ours['rss'] / mb:.0f}", f"{parse['rss'] / mb:.0f}", f"{ours['rss'] / parse['rss']:.2f}",
            f"<= {TARGET_RSS_RATIO * size / mb:.0f} (3x file)",
        ),
        (
            "peak RSS / file size",
            f"{ours['rss'] / size:.2f}", f"{parse['rss'] / size:.2f}", f"{ours['rss'] / parse['rss']:.2f}",
            f"<= {TARGET_RSS_RATIO:.1f}",
        ),
        (
            "RSS growth during the run / file size",
            f"{(ours['rss'] - ours['rss_before']) / size:.2f}", f"{(parse['rss'] - parse['rss_before']) / size:.2f}",
            f"{(ours['rss'] - ours['rss_before']) / (parse['rss'] - parse['rss_before']):.2f}",
            f"<= {TARGET_RSS_RATIO:.1f}",
        ),
        (
            "RSS before the clock MB (warm: engine, dataset, DuckDB)",
            f"{ours['rss_before'] / mb:.0f}", f"{parse['rss_before'] / mb:.0f}", "", "",
        ),
    ]  # fmt: skip
    widths = [max(len(str(r[i])) for r in rows) for i in range(5)]
    for row in rows:
        print("  ".join(str(v).ljust(w) for v, w in zip(row, widths, strict=True)))


if __name__ == "__main__":
    main()
