"""Benchmark: peak RSS and time of the worst hostile inputs, against the limits (≤ 60 s, ≤ 2 GB RSS).

Each case is one `trajreview import ...` in a fresh subprocess on a copy of a tasks database; its peak
RSS comes from `wait4` (the child's own rusage, like RUSAGE_CHILDREN but per case). The baseline beside
each case is the same importer on a real-sized valid input of the same kind, in the same run, so the
ratio says what the hostile input costs over a normal import. Every case must end within the limits
with exit code 0 (imported, problems recorded) or 2 (a one-line refusal); none may crash or hang.

Run: .venv/bin/python -m bench.bench_hostile [runs [case-name substring]]
"""

from __future__ import annotations

import gzip
import io
import os
import pickle
import shutil
import signal
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

import orjson

from core.paths import REPO_ROOT, shared_data_dir
from tests.hostile.cases import ZeroStream  # a tar member of any size, never held

LIMIT_S = 60.0
LIMIT_RSS_MB = 2048.0
MB = 1 << 20


def _cli(
    db: Path, args: list[str], cwd: Path, timeout: float = 2 * LIMIT_S
) -> tuple[int | None, float, float, str]:
    """(exit code or None when killed at the timeout, seconds, peak RSS MB, last stderr line)."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    err = cwd / ".stderr"
    started = time.perf_counter()
    with open(err, "wb") as handle:
        proc = subprocess.Popen(
            [sys.executable, "-m", "core.cli.main", "--db", str(db), *args], cwd=cwd, env=env,
            stdout=subprocess.DEVNULL, stderr=handle, stdin=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        code = None
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                code = os.waitstatus_to_exitcode(status)
                break
            if time.perf_counter() - started > timeout:
                os.killpg(proc.pid, signal.SIGKILL)
                _, _, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.02)
        proc.returncode = -9 if code is None else code
    lines = [line for line in err.read_text(errors="replace").splitlines() if line.strip()]
    return code, time.perf_counter() - started, usage.ru_maxrss / 1024, (lines[-1] if lines else "")[:120]


# -- inputs --------------------------------------------------------------------------------------------
def _demo_task(dest: Path, har: bytes | None = None) -> Path:
    src = shared_data_dir() / "webarena-verified" / "demo-run" / "107"
    task = dest / "107"
    task.mkdir(parents=True)
    shutil.copy(src / "agent_response.json", task / "agent_response.json")
    if har is None:
        shutil.copy(src / "network.har", task / "network.har")
    else:
        (task / "network.har").write_bytes(har)
    return dest


def _wav(path: Path, score: bool = True) -> list[str]:
    return [
        "import",
        "wav-run",
        str(path),
        "--run",
        "b",
        "--workers",
        "1",
        *(() if score else ("--no-score",)),
    ]


def har_at_limit(root: Path, dynamic_only: bool = False) -> list[str]:
    """A 250 MB HAR (the demo HAR's entries replicated): the largest trace the reader accepts, scored.

    `dynamic_only`: only its non-static entries (pages, API calls), which the engine is handed and keeps
    in memory, where a real trace is mostly static assets (309 of the demo's 359 entries)."""
    from core.files.network_events import is_static_asset

    src = shared_data_dir() / "webarena-verified" / "demo-run" / "107" / "network.har"
    har = orjson.loads(src.read_bytes())
    if dynamic_only:
        har["log"]["entries"] = [e for e in har["log"]["entries"] if not is_static_asset(e["request"]["url"])]
    one = len(orjson.dumps(har))
    har["log"]["entries"] = har["log"]["entries"] * (250 * MB // one)
    return _wav(_demo_task(root / "run", orjson.dumps(har)))


def har_at_limit_dynamic(root: Path) -> list[str]:
    return har_at_limit(root, dynamic_only=True)


def trace_network_at_limit(root: Path) -> list[str]:
    """A 250 MB Playwright `trace.network` (resource-snapshot lines of the demo HAR's entries), scored:
    the Playwright reader reads the file whole, unlike the streaming HAR reader."""
    src = shared_data_dir() / "webarena-verified" / "demo-run" / "107" / "network.har"
    lines = [
        orjson.dumps({"type": "resource-snapshot", "snapshot": e})
        for e in orjson.loads(src.read_bytes())["log"]["entries"]
    ]
    block = b"\n".join(lines) + b"\n"
    run = _demo_task(root / "run")
    (run / "107" / "network.har").unlink()
    with open(run / "107" / "trace.network", "wb") as handle:
        for _ in range(250 * MB // len(block)):
            handle.write(block)
    return _wav(run)


def har_3gib_in_targz(root: Path) -> list[str]:
    """A 3 GiB HAR member in a tar.gz of a few MB (the issue's 12.5 GB RSS case), scored."""
    path = root / "sub.tar.gz"
    src = shared_data_dir() / "webarena-verified" / "demo-run" / "107"
    with tarfile.open(path, "w:gz", compresslevel=1) as archive:
        for name, data in (("sub/summary.json", b"{}"),
                           ("sub/107/agent_response.json", (src / "agent_response.json").read_bytes())):  # fmt: skip
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
        info = tarfile.TarInfo("sub/107/network.har")
        info.size = 3 << 30
        archive.addfile(info, ZeroStream(info.size))
    return _wav(path)


def response_200mb(root: Path) -> list[str]:
    """A 200 MB agent_response.json (the issue's 6.6 GB RSS case), scored."""
    run = _demo_task(root / "run")
    with open(run / "107" / "agent_response.json", "wb") as handle:
        handle.write(b'{"task_type": "RETRIEVE", "status": "SUCCESS", "retrieved_data": ["')
        for _ in range(200):
            handle.write(b"x" * MB)
        handle.write(b'"]}')
    return _wav(run)


def _episode(root: Path) -> Path:
    dest = root / "run" / "webarena.191"
    shutil.copytree(shared_data_dir() / "browsergym-run" / "webarena.191", dest)
    return dest


def _step(fields: dict) -> bytes:
    state = pickle.dumps(fields, protocol=2)[2:-1]
    return gzip.compress(b"\x80\x02cbrowsergym.experiments.loop\nStepInfo\n)\x81" + state + b"b.")


def pickle_memo_3000x1mib(root: Path) -> list[str]:
    """A 15 KB step pickle whose 1 MiB string is referenced 3,000 times (the issue's segfault)."""
    ep = _episode(root)
    chat = ["A" * MB] * 3000
    (ep / "step_1.pkl.gz").write_bytes(
        _step({"action": "noop()", "obs": {}, "agent_info": {"chat_messages": chat}})
    )
    return ["import", "agentlab", str(root / "run"), "--run", "b", "--workers", "1"]


def pickle_nested_memo(root: Path) -> list[str]:
    """A step pickle of 30 nested [x, x] levels: 2^30 references to one 1 KiB string."""
    ep = _episode(root)
    value: object = "B" * 1024
    for _ in range(30):
        value = [value, value]
    (ep / "step_1.pkl.gz").write_bytes(
        _step({"action": "noop()", "obs": {}, "agent_info": {"chat_messages": value}})
    )
    return ["import", "agentlab", str(root / "run"), "--run", "b", "--workers", "1"]


def _gzip_repeated(opcode: bytes, times: int, head: bytes, tail: bytes) -> bytes:
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=9) as handle:
        handle.write(head)
        for _ in range(times // MB):
            handle.write(opcode * MB)
        handle.write(opcode * (times % MB) + tail)
    return out.getvalue()


def pickle_60m_dicts(root: Path) -> list[str]:
    """A step pickle of 60 million EMPTY_DICT opcodes, 58 KB gzipped (the issue's 5.6 GB case)."""
    ep = _episode(root)
    (ep / "step_1.pkl.gz").write_bytes(_gzip_repeated(b"}", 60_000_000, b"\x80\x04(", b"l."))
    return ["import", "agentlab", str(root / "run"), "--run", "b", "--workers", "1"]


def pickle_memo_index(root: Path) -> list[str]:
    """A 9-byte step pickle whose memo index 2^30 asks the C unpickler for a 16 GB table."""
    ep = _episode(root)
    (ep / "step_1.pkl.gz").write_bytes(gzip.compress(b"\x80\x04}r" + (1 << 30).to_bytes(4, "little") + b"."))
    return ["import", "agentlab", str(root / "run"), "--run", "b", "--workers", "1"]


def pickle_sets_below_count(root: Path) -> list[str]:
    """2.9 million empty sets (216 bytes each), just under the object count: what the count lets through."""
    ep = _episode(root)
    (ep / "step_1.pkl.gz").write_bytes(_gzip_repeated(b"\x8f", 2_900_000, b"\x80\x04(", b"l."))
    return ["import", "agentlab", str(root / "run"), "--run", "b", "--workers", "1"]


def _render_dir(root: Path) -> Path:
    dest = root / "renders"
    dest.mkdir()
    src = shared_data_dir() / "webarena-render" / "babelcloud__webarena" / "gbox" / "trajectories"
    shutil.copy(src / "results_full" / "render_164.html", dest / "render_164.html")
    return dest


def render_header_18mb(root: Path) -> list[str]:
    """A render whose header is 18 MB of continuation lines (139 s before the parser was linear)."""
    dest = _render_dir(root)
    header = "task_id: 5\nintent: x\n" + "y\n" * 9_000_000
    (dest / "render_5.html").write_text(f"<html><body><pre>{header}</pre></body></html>")
    return ["import", "webarena-render", str(dest), "--run", "b"]


def render_at_limit(root: Path) -> list[str]:
    """A 60 MB render (the largest real one, 1.9 MB, its steps repeated): just under the render limit."""
    src = shared_data_dir() / "webarena-render" / "HuiyuanYan__webarena" / "results" / "render_9.html"
    html = src.read_text(encoding="utf-8", errors="replace")
    cut = html.index("</pre>") + len("</pre>")  # after the header: the steps
    head, steps = html[:cut], html[cut:]
    dest = _render_dir(root)
    (dest / "render_9.html").write_text(head + steps * (60 * MB // len(steps)), encoding="utf-8")
    return ["import", "webarena-render", str(dest), "--run", "b"]


def gold_csv_at_limit(root: Path) -> list[str]:
    """A 60 MB gold CSV (812 tasks, many alternatives of real-length steps): just under the gold limit."""
    path = root / "gold.csv"
    row = "click [1234] where [1234] is link 'Sales' and then type [5678] [yoga pants] [1] to search it"
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("Task No.,Step No.,Text\n")
        per_task = 60 * MB // 812 // (len(row) + 10)  # one block of steps per task
        for task in range(812):
            handle.writelines(f"{task},{step},{row}\n" for step in range(1, per_task + 1))
    return ["import", "gold", str(path), "--name", "g"]


def render_fifo_and_1gb(root: Path) -> list[str]:
    """A FIFO in place of a render and a 1 GB (sparse) render next to a real one."""
    dest = _render_dir(root)
    os.mkfifo(dest / "render_5.html")
    with open(dest / "render_6.html", "wb") as handle:
        handle.truncate(1 << 30)
    return ["import", "webarena-render", str(dest), "--run", "b"]


def xlsx_billion_laughs(root: Path) -> list[str]:
    """An xlsx whose sheet XML expands entities nine levels deep (10^9 copies)."""
    import openpyxl

    path = root / "gold.xlsx"
    book = openpyxl.Workbook()
    book.active.append(["Task No.", "Step No.", "Text"])
    book.save(path)
    entities = b"".join(
        b'<!ENTITY lol%d "%s">' % (i, (b"&lol%d;" % (i - 1) if i > 1 else b"lol") * 10) for i in range(1, 10)
    )
    sheet = (b'<?xml version="1.0"?><!DOCTYPE lolz [' + entities + b']><worksheet xmlns="http://schemas.'
             b'openxmlformats.org/spreadsheetml/2006/main"><sheetData><row r="1"><c r="A1" t="inlineStr">'
             b"<is><t>&lol9;</t></is></c></row></sheetData></worksheet>")  # fmt: skip
    tmp = root / "g.tmp"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(tmp, "w") as dst:
        for item in src.infolist():
            dst.writestr(item, sheet if item.filename == "xl/worksheets/sheet1.xml" else src.read(item))
    tmp.replace(path)
    return ["import", "gold", str(path), "--name", "g"]


def jsonl_at_limit(root: Path) -> list[str]:
    """A 120 MB trajreview JSONL file (just under its limit): 812 tasks x ~150 KB of steps."""
    path = root / "run.jsonl"
    step = {"url": "http://localhost:7770/", "thought": "t" * 200, "executed_action": "click [1234]",
            "observation": {"axtree": "[1234] link 'x'\n" * 1500}}  # fmt: skip
    with open(path, "wb") as handle:
        handle.write(b'{"agent": "a", "model": "m", "paradigm": "step_by_step"}\n')
        line = {"task_id": 0, "steps": [step] * 6}
        for task_id in range(812):
            line["task_id"] = task_id
            handle.write(orjson.dumps(line) + b"\n")
    return ["import", "jsonl", str(path), "--run", "b"]


# -- baselines: the same importer on a real-sized valid input ------------------------------------------
def base_wav(root: Path) -> list[str]:
    return _wav(_demo_task(root / "run"))


def base_agentlab(root: Path) -> list[str]:
    _episode(root)
    return ["import", "agentlab", str(root / "run"), "--run", "b", "--workers", "1"]


def base_render(root: Path) -> list[str]:
    return ["import", "webarena-render", str(_render_dir(root)), "--run", "b"]


def base_gold(root: Path) -> list[str]:
    path = root / "gold.xlsx"
    shutil.copy(shared_data_dir() / "human-gold" / "Golden Human Trajectories.xlsx", path)
    return ["import", "gold", str(path), "--name", "g"]


def base_jsonl(root: Path) -> list[str]:
    path = root / "run.jsonl"
    path.write_bytes(
        b'{"paradigm": "step_by_step"}\n{"task_id": 5, "steps": [{"executed_action": "click [1]"}]}\n'
    )
    return ["import", "jsonl", str(path), "--run", "b"]


CASES: list[tuple[str, Callable[[Path], list[str]], Callable[[Path], list[str]]]] = [
    ("HAR 250 MB (at the limit), scored", har_at_limit, base_wav),
    ("HAR 250 MB, no static asset, scored", har_at_limit_dynamic, base_wav),
    ("trace.network 250 MB, scored", trace_network_at_limit, base_wav),
    ("HAR 3 GiB in a tar.gz, scored", har_3gib_in_targz, base_wav),
    ("agent_response.json 200 MB", response_200mb, base_wav),
    ("pickle: 1 MiB str x 3000 refs", pickle_memo_3000x1mib, base_agentlab),
    ("pickle: 2^30 nested refs", pickle_nested_memo, base_agentlab),
    ("pickle: 60 million empty dicts", pickle_60m_dicts, base_agentlab),
    ("pickle: memo index 2^30", pickle_memo_index, base_agentlab),
    ("pickle: 2.9 million empty sets", pickle_sets_below_count, base_agentlab),
    ("render header 18 MB", render_header_18mb, base_render),
    ("render 60 MB (at the limit)", render_at_limit, base_render),
    ("render FIFO + 1 GB sparse", render_fifo_and_1gb, base_render),
    ("xlsx billion laughs", xlsx_billion_laughs, base_gold),
    ("gold CSV 60 MB (at the limit)", gold_csv_at_limit, base_gold),
    ("JSONL 120 MB (at the limit)", jsonl_at_limit, base_jsonl),
]


def _measure(build: Callable[[Path], list[str]], seed: Path, tmp: Path, runs: int) -> dict:
    work = tmp / "case"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    args = build(work)
    times, rss, codes, line = [], [], [], ""
    for _ in range(runs):
        db = work / "b.duckdb"
        shutil.copy(seed, db)
        code, seconds, peak, line = _cli(db, args, work)
        times.append(seconds)
        rss.append(peak)
        codes.append(code)
        db.unlink()
    shutil.rmtree(work, ignore_errors=True)
    times.sort()
    return {
        "p50": statistics.median(times), "p95": times[min(len(times) - 1, round(0.95 * (len(times) - 1)))],
        "rss": max(rss), "codes": codes, "line": line,
    }  # fmt: skip


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    only = sys.argv[2] if len(sys.argv) > 2 else ""  # a substring of the case names to run
    with tempfile.TemporaryDirectory(prefix="bench-hostile-") as tmp_name:
        tmp = Path(tmp_name)
        seed = tmp / "tasks.duckdb"
        code, _, _, line = _cli(seed, ["init"], tmp)
        code2, _, _, line2 = _cli(seed, ["import", "tasks", "--original"], tmp)
        if code or code2:
            raise SystemExit(f"cannot build the tasks database: {line or line2}")
        header = f"{'case':<36}{'exit':>6}{'p50 s':>8}{'p95 s':>8}{'RSS MB':>8}{'base s':>8}{'base MB':>8}"
        header += f"{'ratio s':>8}{'ratio MB':>9}  within limits"
        print(header)
        worst_s = worst_mb = 0.0
        failures = []
        for name, build, baseline in [c for c in CASES if only in c[0]]:
            ours = _measure(build, seed, tmp, runs)
            base = _measure(baseline, seed, tmp, runs)
            ok = (
                all(c in (0, 2) for c in ours["codes"])
                and ours["p95"] <= LIMIT_S
                and ours["rss"] <= LIMIT_RSS_MB
            )
            worst_s, worst_mb = max(worst_s, ours["p95"]), max(worst_mb, ours["rss"])
            codes = "/".join(sorted({"hang" if c is None else str(c) for c in ours["codes"]}))
            print(
                f"{name:<36}{codes:>6}{ours['p50']:>8.1f}{ours['p95']:>8.1f}{ours['rss']:>8.0f}"
                f"{base['p50']:>8.1f}{base['rss']:>8.0f}{ours['p50'] / base['p50']:>8.2f}"
                f"{ours['rss'] / base['rss']:>9.2f}  {'yes' if ok else 'NO'}",
                flush=True,
            )
            if ours["line"]:  # the refusal or last message, to see what happened
                print(f"{'':<4}{ours['line']}")
            if not ok:
                failures.append(name)
        print(
            f"\nworst case: {worst_s:.1f} s (limit {LIMIT_S:.0f}), {worst_mb:.0f} MB peak RSS (limit {LIMIT_RSS_MB:.0f})"
        )
        print("all cases within limits" if not failures else f"OUTSIDE THE LIMITS: {', '.join(failures)}")


if __name__ == "__main__":
    main()
