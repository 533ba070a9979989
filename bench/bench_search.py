"""Benchmark: search across 50 runs of ~800 tasks (issue 25: <= 300 ms p95 per query).

Database: bench/volume.py's replication of the real runs (the demo's runs from ../shared/data, then the
812-task babelcloud render run copied 50 times under new names: ~1.1 M steps of real agent text), its
full-text index built from it with `reindex` (timed). Query mix, drawn from the data with a fixed seed:
frequent words, rare words (in one task of the source run), phrases of 3-4 words from real thoughts, URL
fragments from real pages, each alone and with a filter (run, site, outcome).

Ours: `core.queries.search.search` (the tantivy index for the runs' bulk text, DuckDB scans for intents,
evaluator sentences, labels, notes and cause summaries), limit 50, the database opened once.
Baseline: plain DuckDB scans of the same texts (ILIKE on each word to find candidates, then the same
whole-word pattern, a count and the first 50 by run/task/step), no index, no extra table.
Also: the import of the whole OpAgent run and of the WebArena-Verified demo run with and without the
incremental index write (its slowdown).

Run: .venv/bin/python -m bench.bench_search [N_RUNS]
"""

from __future__ import annotations

import os
import random
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench.volume import SOURCE_RUN, build_volume_db
from core.queries.search import parse_query, search
from core.search import index as search_index
from core.store import Store

TARGET_MS = 300.0
REPEATS = 3
_TOKEN = re.compile(r"[^\W_]+")


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _queries(store: Store, runs: list[str]) -> list[tuple[str, dict]]:
    rng = random.Random(25)
    thoughts = [t for (t,) in store.query(
        "SELECT thought FROM steps WHERE run = ? AND length(thought) > 120 ORDER BY task_id, idx", [SOURCE_RUN])]  # fmt: skip
    df: dict[str, int] = {}
    for t in thoughts:
        for w in {w.lower() for w in _TOKEN.findall(t)}:
            df[w] = df.get(w, 0) + 1
    frequent = ["click", "search", "page"]
    rare = rng.sample(sorted(w for w, n in df.items() if n == 1 and len(w) >= 8 and w.isalpha()), 4)
    phrases = []
    for t in rng.sample(thoughts, 40):
        words = t.split()
        start = rng.randrange(max(1, len(words) - 4))
        phrase = " ".join(words[start : start + rng.choice((3, 4))])
        if len(parse_query(f'"{phrase}"')[0]) >= 3:
            phrases.append(f'"{phrase}"')
    urls = [u for (u,) in store.query(
        "SELECT DISTINCT url FROM steps WHERE run = ? AND url LIKE 'http%/%/%' ORDER BY url", [SOURCE_RUN])]  # fmt: skip
    fragments = ["/" + "/".join(u.split("?")[0].rstrip("/").split("/")[-2:]) for u in rng.sample(urls, 3)]
    base = frequent + rare + phrases[:4] + fragments
    filters = [{"run": rng.choice(runs)}, {"site": "shopping"}, {"outcome": "failure"}]
    return [(q, {}) for q in base] + [(q, filters[i % len(filters)]) for i, q in enumerate(base)]


_TEXTS = """
    SELECT run, task_id, idx AS step, concat_ws(' ', thought, stated_action, executed_action, readable, answer,
           value, error, outcome, url) AS text FROM steps
    UNION ALL SELECT run, task_id, NULL, concat_ws(' ', final_answer, termination_detail) FROM trajectories
    UNION ALL SELECT run, task_id, NULL, url FROM network_events WHERE NOT is_static_asset
    UNION ALL SELECT t.run, t.task_id, NULL, k.intent FROM (SELECT DISTINCT run, task_id FROM trajectories) t
              JOIN tasks k USING (task_id)
    UNION ALL SELECT run, task_id, NULL, explanation FROM evaluations
    UNION ALL SELECT run, task_id, NULL, summary FROM failure_causes
    UNION ALL SELECT run, task_id, step_idx, concat_ws(' ', label, note) FROM annotations
"""


def baseline(store: Store, query: str, run=None, site=None, outcome=None) -> tuple[int, list]:
    """Plain DuckDB scans: no index."""
    parts = parse_query(query)
    words = [w for p in parts for w in p]
    pattern = [r"(?i)(^|[^0-9a-z])" + r"[^0-9a-z]+".join(map(re.escape, p)) + r"([^0-9a-z]|$)" for p in parts]
    where = " AND ".join(["x.text ILIKE ?"] * len(words) + ["regexp_matches(x.text, ?)"] * len(parts))
    rows = store.query(
        f"SELECT x.run, x.task_id, x.step, count(*) OVER () FROM ({_TEXTS}) x"
        " LEFT JOIN tasks k USING (task_id) LEFT JOIN evaluations e USING (run, task_id)"
        f" WHERE {where} AND (? IS NULL OR x.run = ?) AND (? IS NULL OR list_contains(k.sites, ?))"
        " AND (? IS NULL OR e.status = ?) ORDER BY x.run, x.task_id, x.step LIMIT 50",
        [*(f"%{w}%" for w in words), *pattern, run, run, site, site, outcome, outcome],
    )
    return (rows[0][3] if rows else 0), rows


def _timed(fn, *args, **kwargs) -> tuple[float, object]:
    started = time.perf_counter()
    out = fn(*args, **kwargs)
    return (time.perf_counter() - started) * 1000, out


def _cpu_timed(fn, *args, **kwargs) -> tuple[float, float]:
    """(wall ms, CPU ms of this process, every thread): on a shared machine the wall time inflates with
    the load, the CPU time much less."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn(*args, **kwargs)
    return (time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000


def _import_slowdown(label: str, do_import) -> None:
    """p50 of REPEATS imports into a fresh tasks database, with and without the index write."""
    from core.ingest.tasks import import_tasks

    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "tasks.duckdb"
        with Store(base) as store:
            import_tasks(store)
        times: dict[str, list[float]] = {"with index": [], "without": []}
        real = search_index.index_written
        for i in range(REPEATS):
            for mode in times:
                db = Path(tmp) / f"{mode.replace(' ', '-')}-{i}.duckdb"
                shutil.copy(base, db)
                search_index.index_written = real if mode == "with index" else (lambda *a, **k: None)
                try:
                    with Store(db) as store:
                        ms, _ = _cpu_timed(do_import, store)
                finally:
                    search_index.index_written = real
                times[mode].append(ms / 1000)
        on, off = statistics.median(times["with index"]), statistics.median(times["without"])
        print(f"import {label}: with the index write {on:.2f} s, without {off:.2f} s (p50 of {REPEATS}): "
              f"{on - off:+.2f} s ({(on / off - 1) * 100:+.0f} %)  load {os.getloadavg()[0]:.1f}")  # fmt: skip


def main() -> None:
    from core.paths import shared_data_dir

    n_runs = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    shared = shared_data_dir()
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        vol = build_volume_db(Path(tmp) / "volume.duckdb", n_runs)
        print(
            f"volume database: {n_runs} copies of {SOURCE_RUN} built in {time.perf_counter() - started:.0f} s"
        )
        with Store(vol.path, read_only=True) as store:
            (n_steps,) = store.query("SELECT count(*) FROM steps")[0]
            ms, n = _timed(search_index.reindex, store)
            size = sum(f.stat().st_size for f in search_index.index_dir(vol.path).rglob("*") if f.is_file())
            print(f"index built: {n} runs, {n_steps:,} steps in {ms / 1000:.0f} s, {size / 1e6:.0f} MB beside the"
                  f" database  load {os.getloadavg()[0]:.1f}")  # fmt: skip
            queries = _queries(store, vol.runs)
            for q, f in queries:
                search(store, q, limit=50, **f)  # warm: the index's files and DuckDB's buffers
            ours, ours_cpu = [], []
            for _ in range(REPEATS):
                for q, f in queries:
                    ms, cpu = _cpu_timed(search, store, q, limit=50, **f)
                    ours.append(ms)
                    ours_cpu.append(cpu)
            load_ours = os.getloadavg()[0]
            base, base_cpu = [], []
            for q, f in queries:  # once each: a scan of every text takes seconds
                ms, cpu = _cpu_timed(baseline, store, q, **f)
                base.append(ms)
                base_cpu.append(cpu)
            load_base = os.getloadavg()[0]
            check = [(q, f) for q, f in queries if '"' in q][:3]
            for q, f in check:  # the baseline finds what ours finds (same word rule)
                assert baseline(store, q, **f)[0] >= 1 and search(store, q, limit=50, **f).total >= 1, q
        print(f"query mix: {len(queries)} queries ({len(queries) // 2} alone, {len(queries) // 2} with a filter), "
              f"ours {REPEATS}x each, baseline 1x each")  # fmt: skip
        for name, values, cpu, load in (
            ("ours (tantivy + DuckDB scans of small texts)", ours, ours_cpu, load_ours),
            ("baseline (plain DuckDB scans)", base, base_cpu, load_base),
        ):
            print(f"  {name}: wall p50 {_p(values, 0.5):.0f} ms, p95 {_p(values, 0.95):.0f} ms, max {max(values):.0f} ms;"
                  f" CPU p50 {_p(cpu, 0.5):.0f} ms, p95 {_p(cpu, 0.95):.0f} ms  load {load:.1f}")  # fmt: skip
        print(f"  CPU ratio baseline/ours: p50 {_p(base_cpu, 0.5) / _p(ours_cpu, 0.5):.1f}x")
        ratio50 = statistics.median(base) / statistics.median(ours)
        ratio95 = _p(base, 0.95) / _p(ours, 0.95)
        verdict = "meets" if _p(ours, 0.95) <= TARGET_MS else "MISSES"
        print(f"  ratio baseline/ours: p50 {ratio50:.1f}x, p95 {ratio95:.1f}x; target p95 <= {TARGET_MS:.0f} ms at"
              f" {n_runs} runs: ours {verdict} it ({_p(ours, 0.95):.0f} ms), baseline"
              f" {'meets' if _p(base, 0.95) <= TARGET_MS else 'misses'} it ({_p(base, 0.95):.0f} ms)")  # fmt: skip

    from core.ingest.opagent import import_opagent
    from core.ingest.wav_run import import_wav_run

    _import_slowdown("opagent (whole run, 809 tasks)",
                     lambda store: import_opagent(store, shared / "oagent-run", "opagent"))  # fmt: skip
    wav = shared / "webarena-verified"
    _import_slowdown("wav-run (demo run, 2 tasks, 718 events)",
                     lambda store: import_wav_run(store, wav / "demo-run", "wav-demo",
                                                  config=wav / "config.demo.json", workers=1))  # fmt: skip


if __name__ == "__main__":
    main()
