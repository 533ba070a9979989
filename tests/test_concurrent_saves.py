"""Writes that never lose anything, with real processes: two reviewers' processes save 100 gold edits
each while `trajreview import opagent` imports a whole real run into the same file."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from core.gold.editing import history, version_content
from core.ingest.gold import import_gold
from core.ingest.opagent import find_task_files
from core.paths import REPO_ROOT
from core.store import ShortLivedStore, Store

N = 60  # saves per saver: 2 x 60 overlap a whole-run import many times over (>= 10 asserted)


def test_two_savers_and_a_whole_run_import_lose_nothing(tasks_db: Path, shared_data: Path, tmp_path: Path):
    db = tmp_path / "busy.duckdb"
    shutil.copy(tasks_db, db)
    with Store(db) as store:
        import_gold(store, shared_data / "human-gold" / "Golden Human Trajectories.xlsx", "paper-gold")
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    env.pop("TRAJREVIEW_DB", None)
    run_dir = shared_data / "oagent-run"

    # The savers start first and are saving before the import begins, so the two really overlap
    # (a saver's start-up alone can outlast a quick import on a loaded machine).
    def saver(author: str, task: int) -> subprocess.Popen:
        args = ["-m", "tests.gold_saver", str(db), "paper-gold", str(task), author, str(N), "0.06"]
        # Unbuffered bytes: the first line is read before communicate(), which reads the pipe's file
        # descriptor directly and would miss whatever a buffered reader had already taken.
        return subprocess.Popen([sys.executable, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                bufsize=0, env=env, cwd=REPO_ROOT)  # fmt: skip

    savers = {(author, task): saver(author, task) for author, task in (("ann", 101), ("bob", 808))}
    first_lines = {key: p.stdout.readline() for key, p in savers.items()}  # each is saving now
    started = time.time()
    importer = subprocess.Popen(
        [sys.executable, "-m", "core.cli.start", "--db", str(db), "import", "opagent", str(run_dir), "--run", "busy"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO_ROOT,
    )  # fmt: skip
    finished: list[float] = []
    waiter = threading.Thread(target=lambda: (importer.wait(timeout=600), finished.append(time.time())))
    waiter.start()
    outputs = {}
    for key, p in savers.items():
        out, err = p.communicate(timeout=600)
        outputs[key] = ((first_lines[key] + out).decode(), err.decode())
    _, imp_err = importer.communicate(timeout=600)
    waiter.join()

    assert importer.returncode == 0, imp_err
    assert "Traceback" not in imp_err
    during: list[dict] = []
    for (author, task), (out, err) in outputs.items():
        assert savers[(author, task)].returncode == 0 and "Traceback" not in err, err
        saves = [json.loads(line) for line in out.splitlines()]
        assert [s["version"] for s in saves] == list(range(2, N + 2))  # every save, in order
        during.extend(s for s in saves if started < s["start"] < finished[0])
    # The saves really ran while the import did (else this test would prove nothing).
    assert len(during) >= 10, f"only {len(during)} saves overlapped the import"
    with Store(db, read_only=True) as store:
        for author, task in outputs:
            versions = history(store, "paper-gold", task)
            assert [v["version"] for v in versions] == list(range(N + 1, 0, -1))
            assert [v["reason"] for v in reversed(versions[:-1])] == [f"edit {i}" for i in range(N)]
            for i in (0, N // 2, N - 1):  # the content of a save is the one that process wrote
                assert (
                    version_content(store, "paper-gold", task, i + 2)[0][0].text
                    == f"Click the '{author} {i}' button"
                )
        # The import landed whole: one trajectory per task file of the run.
        n = store.query("SELECT count(DISTINCT task_id) FROM trajectories WHERE run = 'busy'")[0][0]
        assert n == len(find_task_files(run_dir)) > 0
        assert store.query("SELECT n_tasks FROM runs WHERE name = 'busy'")[0][0] == n


def _other_process_can_write(db: Path) -> bool:
    """Whether another process can open the file read-write right now (without waiting)."""
    code = "import sys; from core.store import Store; Store(sys.argv[1], lock_timeout_s=0).close()"
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.run([sys.executable, "-c", code, str(db)], env=env, capture_output=True).returncode == 0


@pytest.mark.parametrize("short", [True, False])
def test_an_import_parses_with_the_file_closed(
    tasks_db: Path, shared_data: Path, tmp_path: Path, monkeypatch, short
):
    """While the gold file is parsed, another process can write (ShortLivedStore); with the store held
    open for the whole import, as before, it cannot. Both land the same rows."""
    from core.ingest import gold as gold_importer

    db = tmp_path / "parse.duckdb"
    shutil.copy(tasks_db, db)
    seen: list[bool] = []
    blocks = gold_importer.gold_blocks

    def watching(rows, path):  # called between reading the file and the final transaction
        seen.append(_other_process_can_write(db))
        return blocks(rows, path)

    monkeypatch.setattr(gold_importer, "gold_blocks", watching)
    xlsx = shared_data / "human-gold" / "Golden Human Trajectories.xlsx"
    if short:
        store = ShortLivedStore(db)
        gold_importer.import_gold(store, xlsx, "paper-gold")
        assert store.holds  # the final transaction (and nothing during parsing) held the file
    else:
        with Store(db) as held:
            gold_importer.import_gold(held, xlsx, "paper-gold")
    assert seen == [short]
    with Store(db, read_only=True) as s:
        assert s.query("SELECT count(*) FROM gold_steps")[0][0] == len(gold_importer.read_gold_rows(xlsx))
