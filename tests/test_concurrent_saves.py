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

from core.gold_editing import history, version_content
from core.importers.gold import import_gold
from core.importers.opagent import find_task_files
from core.paths import REPO_ROOT
from core.store import Store

N = 100


def test_two_savers_and_a_whole_run_import_lose_nothing(tasks_db: Path, shared_data: Path, tmp_path: Path):
    db = tmp_path / "busy.duckdb"
    shutil.copy(tasks_db, db)
    with Store(db) as store:
        import_gold(store, shared_data / "human-gold" / "Golden Human Trajectories.xlsx", "paper-gold")
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    env.pop("TRAJREVIEW_DB", None)
    run_dir = shared_data / "oagent-run"
    started = time.time()
    importer = subprocess.Popen(
        [sys.executable, "-m", "core.cli.main", "--db", str(db), "import", "opagent", str(run_dir), "--run", "busy"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO_ROOT,
    )  # fmt: skip
    savers = {
        (author, task): subprocess.Popen(
            [sys.executable, "-m", "tests.gold_saver", str(db), "paper-gold", str(task), author, str(N)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=REPO_ROOT,
        )  # fmt: skip
        for author, task in (("ann", 101), ("bob", 808))
    }
    finished: list[float] = []
    waiter = threading.Thread(target=lambda: (importer.wait(timeout=600), finished.append(time.time())))
    waiter.start()
    outputs = {key: p.communicate(timeout=600) for key, p in savers.items()}
    imp_out, imp_err = importer.communicate(timeout=600)
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
