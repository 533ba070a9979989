"""Run hostile cases: one `trajreview import ...` subprocess per case on a copy of a tasks database.

Each run is classified as the issue's table counts it: clean (imported without a problem, or refused
with a one-line error), problem recorded, traceback, crash (killed by a signal, e.g. a segfault), hang
(past the time limit, then killed). Peak RSS comes from `wait4` of the child.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from hostile.cases import MARKER, Case

TIME_LIMIT_S = 60.0
OUTCOMES = ("clean", "problem recorded", "traceback", "crash", "hang")


@dataclass
class Result:
    case: Case
    returncode: int | None
    stdout: str
    stderr: str
    elapsed_s: float
    peak_rss_mb: float
    counts_before: dict[str, int] = field(default_factory=dict)
    counts_after: dict[str, int] = field(default_factory=dict)
    problems: list[tuple[str, str, str]] = field(default_factory=list)  # (kind, source_path, message)
    marker: bool = False

    @property
    def outcome(self) -> str:
        if self.returncode is None:
            return "hang"
        if "Traceback (most recent call last)" in self.stderr:
            return "traceback"
        if self.returncode < 0 or self.returncode not in (0, 2):
            return "crash"
        if self.returncode == 0 and self.problems:
            return "problem recorded"
        return "clean"

    @property
    def error_lines(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.strip()]

    def failures(self) -> list[str]:
        """What this run breaks of the case's expectation (empty: as expected)."""
        case, out = self.case, []
        if self.marker:
            out.append("a pickle wrote the MARKER file")
        if self.outcome in ("traceback", "crash", "hang"):
            out.append(f"{self.outcome} (exit {self.returncode}): {self.stderr[-600:]}")
            return out
        if case.expect == "refused":
            if self.returncode != 2:
                out.append(f"expected a refusal (exit 2), got exit {self.returncode}")
            lines = self.error_lines
            if len(lines) != 1 or not lines[0].startswith("error: "):
                out.append(f"expected one `error:` line, got {lines[:5]}")
            elif case.names and case.names not in lines[0]:
                out.append(f"the error does not name {case.names!r}: {lines[0]}")
            elif case.says and case.says not in lines[0]:
                out.append(f"the error does not say {case.says!r}: {lines[0]}")
            if self.counts_after != self.counts_before:
                out.append("the database changed on a refusal")
        else:
            if self.returncode != 0:
                out.append(f"expected an import (exit 0), got exit {self.returncode}: {self.stderr[-400:]}")
            if case.expect == "problem" and not any(
                case.names in f"{src} {msg}" and case.says in msg for _, src, msg in self.problems
            ):
                out.append(f"no problem recorded naming {case.names!r} ({case.says!r}): {self.problems[:5]}")
        return out


def _python(repo: Path) -> str:
    venv = repo / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def _env(repo: Path) -> dict[str, str]:
    from core.paths import shared_data_path

    return {
        **os.environ, "PYTHONPATH": str(repo), "TRAJREVIEW_SHARED_DATA": str(shared_data_path()),
        "COLUMNS": "200", "PYTHONFAULTHANDLER": "",
    }  # fmt: skip


# The console script's entry point (`trajreview` runs `core.cli.start:main`), also in a checkout (`--repo`)
# older than its `python -m core.cli.start` guard, or than the module itself.
ENTRY = """
try:
    from core.cli.start import main
except ImportError:
    from core.cli.main import main
main()
"""


def cli(repo: Path, db: Path, args: list[str], cwd: Path, timeout: float = TIME_LIMIT_S):
    """(returncode or None on timeout, stdout, stderr, seconds, peak RSS MB) of one CLI run."""
    command = [_python(repo), "-c", ENTRY, "--db", str(db), *args]
    out_path, err_path = cwd / ".stdout", cwd / ".stderr"
    started = time.perf_counter()
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        proc = subprocess.Popen(
            command, cwd=cwd, env=_env(repo), stdout=out, stderr=err, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
        code, rss_kb = None, 0
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                code = os.waitstatus_to_exitcode(status)
                rss_kb = usage.ru_maxrss
                break
            if time.perf_counter() - started > timeout:
                os.killpg(proc.pid, signal.SIGKILL)
                _, status, usage = os.wait4(proc.pid, 0)
                rss_kb = usage.ru_maxrss
                break
            time.sleep(0.02)
        proc.returncode = code if code is not None else -9
    elapsed = time.perf_counter() - started
    stdout = out_path.read_text(errors="replace")
    stderr = err_path.read_text(errors="replace")
    return code, stdout, stderr, elapsed, rss_kb / 1024


def make_template(repo: Path, dest: Path) -> Path:
    """A database with the task dataset loaded, made by the CLI of `repo` (so its own schema)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    for args in (["init"], ["import", "tasks", "--original"]):  # what ensure_tasks would load
        code, _, stderr, _, _ = cli(repo, dest, args, dest.parent, timeout=300)
        if code != 0:
            raise RuntimeError(f"cannot build the template database: {stderr}")
    return dest


def row_counts(db: Path) -> dict[str, int]:
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        tables = [t for (t,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()]
        return {t: con.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in tables}
    finally:
        con.close()


def problems_of(db: Path) -> list[tuple[str, str, str]]:
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        return [
            tuple("" if v is None else str(v) for v in row)
            for row in con.execute("SELECT kind, source_path, message FROM import_problems").fetchall()
        ]
    finally:
        con.close()


def run_case(case: Case, workdir: Path, template: Path, repo: Path, timeout: float = TIME_LIMIT_S) -> Result:
    workdir.mkdir(parents=True, exist_ok=True)
    db = workdir / "case.duckdb"
    shutil.copy(template, db)
    before = row_counts(db)
    args = case.build(workdir)
    code, stdout, stderr, elapsed, rss = cli(repo, db, ["import", *args], workdir, timeout)
    result = Result(case, code, stdout, stderr, elapsed, rss, counts_before=before)
    result.counts_after = row_counts(db)
    result.problems = problems_of(db)
    result.marker = any(p.name == MARKER for p in workdir.rglob(MARKER))
    for big in workdir.rglob("*"):  # large inputs go as soon as they are used
        if big.is_file() and not big.is_symlink() and big.stat().st_blocks * 512 > 8 << 20:
            big.unlink()
    return result


def table(results: list[Result]) -> str:
    """The issue's table: per importer and in total, how many cases ended how."""
    importers = sorted({r.case.importer for r in results})
    header = ["importer", "tried", *OUTCOMES, "refused (of clean)", "not as expected"]
    rows = []
    for importer in [*importers, "total"]:
        group = [r for r in results if importer in ("total", r.case.importer)]
        counts = [sum(1 for r in group if r.outcome == o) for o in OUTCOMES]
        refused = sum(1 for r in group if r.outcome == "clean" and r.returncode == 2)
        unexpected = sum(1 for r in group if r.failures())
        rows.append([importer, str(len(group)), *map(str, counts), str(refused), str(unexpected)])
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = ["| " + " | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)) + " |"]
    lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    lines += ["| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |" for row in rows]
    return "\n".join(lines)


def run_in_process(case: Case, workdir: Path, template: Path, capsys) -> Result:
    """The same run inside this process (pytest): `core.cli.main.main` with the case's arguments.

    Much faster than a subprocess per case (libraries and the engine load once). A traceback is any
    exception other than SystemExit; pytest-timeout bounds the time of each case.
    """
    from core.cli.main import main

    workdir.mkdir(parents=True, exist_ok=True)
    db = workdir / "case.duckdb"
    shutil.copy(template, db)
    before = row_counts(db)
    args = case.build(workdir)
    argv = sys.argv
    sys.argv = ["trajreview", "--db", str(db), "import", *args]
    started = time.perf_counter()
    code: int | None
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except Exception:  # noqa: BLE001 - reported as the traceback it would print
        import traceback

        code = 1
        print(traceback.format_exc(), file=sys.stderr)
    finally:
        sys.argv = argv
    captured = capsys.readouterr()
    result = Result(case, code, captured.out, captured.err, time.perf_counter() - started, 0.0, before)
    result.counts_after = row_counts(db)
    result.problems = problems_of(db)
    result.marker = any(p.name == MARKER for p in workdir.rglob(MARKER))
    return result
