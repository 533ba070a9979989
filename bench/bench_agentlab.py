"""Benchmark: importing ~530 MB of BrowserGym/AgentLab episodes (the full run's size).

Volume: the 13 real sample episodes of ../shared/data/browsergym-run, replicated under a temp dir with
new episode names until they weigh ~530 MB (hard links where possible: the bytes read are real).

Ours: `import_agentlab` (restricted unpickler, process pool over episodes, one transaction), run in a
fresh process so its peak RSS (and its workers') is its own.
Baseline: what AgentLab's own viewer does, plain `pickle.load(gzip.open(step))` of every step file
with `browsergym-experiments` installed, in a separate venv (default: <tmp>/bgbench; override with
BENCH_BASELINE_PYTHON). Without that venv the fallback baseline is plain `pickle.load` of plain-data
re-pickled copies of the same step files, labelled as such.

Run: .venv/bin/python -m bench.bench_agentlab
"""

from __future__ import annotations

import gzip
import json
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from core.paths import shared_data_dir

TARGET_BYTES = 530 * 1024 * 1024
TARGET_SECONDS = 15.0
TARGET_RSS_MB = 1024

_OURS = r"""
import json, resource, sys, time
from core.ingest.agentlab import import_agentlab
from core.store import Store
t = time.perf_counter()
with Store(sys.argv[2]) as store:
    s = import_agentlab(store, sys.argv[1], "bench")
elapsed = time.perf_counter() - t
print(json.dumps({"elapsed": elapsed, "steps": s.n_steps, "episodes": s.n_episodes,
    "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "child_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
    "cpu": sum(r.ru_utime + r.ru_stime for r in map(resource.getrusage,
               (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)))}))
"""

# AgentLab's viewer: pickle.load of each StepInfo with the real classes importable.
_BASELINE = r"""
import gzip, json, pickle, resource, sys, time
from pathlib import Path
files = sorted(Path(sys.argv[1]).glob("*/step_*.pkl.gz"))
t = time.perf_counter(); loaded = failed = 0
for f in files:
    try:
        with gzip.open(f, "rb") as fh:
            pickle.load(fh)
        loaded += 1
    except Exception:
        failed += 1
elapsed = time.perf_counter() - t
usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"elapsed": elapsed, "loaded": loaded, "failed": failed,
    "rss_mb": usage.ru_maxrss / 1024, "cpu": usage.ru_utime + usage.ru_stime}))
"""


def _link_or_copy(src: Path, dst: Path) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)


def replicate(sample: Path, dest: Path, target_bytes: int = TARGET_BYTES) -> int:
    """Copies of every sample episode under new names (`r007_webarena.188`) until target_bytes."""
    episodes = sorted(p for p in sample.iterdir() if p.is_dir())
    size = sum(f.stat().st_size for e in episodes for f in e.iterdir())
    total, k = 0, 0
    while total + size / 2 < target_bytes:  # the nearest whole number of copies
        for episode in episodes:
            copy = dest / f"r{k:03d}_{episode.name}"
            copy.mkdir()
            for f in episode.iterdir():
                _link_or_copy(f, copy / f.name)
        total += size
        k += 1
    return total


def _step_bytes(root: Path) -> int:
    return sum(f.stat().st_size for f in root.glob("*/step_*.pkl.gz"))


def _baseline_python() -> Path | None:
    python = Path(
        os.environ.get("BENCH_BASELINE_PYTHON", Path(tempfile.gettempdir()) / "bgbench" / "bin" / "python")
    )
    if not python.exists():
        return None
    probe = subprocess.run([str(python), "-c", "import browsergym.experiments.loop"], capture_output=True)
    return python if probe.returncode == 0 else None


def _plain_copies(root: Path, dest: Path) -> None:
    """Fallback baseline input: each step re-pickled as plain data (trusted, made by us)."""
    from core.files import safe_pickle

    for f in root.glob("*/step_*.pkl.gz"):
        (dest / f.parent.name).mkdir(exist_ok=True)
        try:
            plain = safe_pickle.to_plain(safe_pickle.load_path(f))
        except safe_pickle.SafePickleError:
            shutil.copyfile(f, dest / f.parent.name / f.name)  # stays unreadable, like the original
            continue
        with gzip.open(dest / f.parent.name / f.name, "wb", compresslevel=6) as fh:
            pickle.dump(plain, fh, protocol=4)


def _run(cmd: list[str]) -> dict:
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    sample = shared_data_dir() / "browsergym-run"
    with tempfile.TemporaryDirectory(prefix="bench-agentlab-") as tmp:
        root = Path(tmp) / "run"
        root.mkdir()
        total = replicate(sample, root)
        step_mb = _step_bytes(root) / 2**20
        ours = _run([sys.executable, "-c", _OURS, str(root), str(Path(tmp) / "bench.duckdb")])

        python = _baseline_python()
        if python is not None:
            label = "plain pickle.load, browsergym-experiments installed"
            base = _run([str(python), "-c", _BASELINE, str(root)])
        else:
            label = "FALLBACK: plain pickle.load of plain-data re-pickled copies (browsergym not installed)"
            plain = Path(tmp) / "plain"
            plain.mkdir()
            _plain_copies(root, plain)
            base = _run([sys.executable, "-c", _BASELINE, str(plain)])

    mb = total / 2**20
    rss = max(ours["rss_mb"], ours["child_rss_mb"])
    rows = [
        ("wall time (s)", f"{ours['elapsed']:.2f}", f"{base['elapsed']:.2f}",
         f"{ours['elapsed'] / base['elapsed']:.2f}", f"<= {TARGET_SECONDS:.0f} s, <= baseline"),
        ("MB/s (all files)", f"{mb / ours['elapsed']:.1f}", f"{mb / base['elapsed']:.1f}",
         f"{base['elapsed'] / ours['elapsed']:.2f}", f">= {mb / TARGET_SECONDS:.1f}"),
        ("MB/s (step pickles)", f"{step_mb / ours['elapsed']:.1f}", f"{step_mb / base['elapsed']:.1f}",
         f"{base['elapsed'] / ours['elapsed']:.2f}", ""),
        ("CPU time (s, all processes)", f"{ours['cpu']:.2f}", f"{base['cpu']:.2f}",
         f"{ours['cpu'] / base['cpu']:.2f}", "(load-independent check)"),
        ("steps/s", f"{ours['steps'] / ours['elapsed']:.0f}", "", "", ""),
        ("peak RSS (MB, max process)", f"{rss:.0f}", f"{base['rss_mb']:.0f}",
         f"{rss / base['rss_mb']:.2f}", f"<= {TARGET_RSS_MB}"),
    ]  # fmt: skip
    print(f"agentlab import: {mb:.0f} MB in {ours['episodes']} episodes ({step_mb:.0f} MB of step pickles), "
          f"{ours['steps']} steps, {os.cpu_count()} cores")  # fmt: skip
    print(f"baseline: {label} ({base['loaded']} step files loaded, {base['failed']} unreadable)")
    width = [28, 10, 10, 7, 24]
    header = ("metric", "ours", "baseline", "ratio", "target")
    print("  ".join(h.ljust(w) for h, w in zip(header, width, strict=True)))
    for row in rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(row, width, strict=True)))


if __name__ == "__main__":
    main()
