"""A reviewer who saves every 200 ms, in a process of their own (tests/test_lock_hold.py runs it beside
a long command): `python -m tests.lock_probe DB GOLD_SET STOP_FILE` saves a gold edit of task 1 in its
own short open of the database (as the app does), then waits for the next 200 ms tick, until STOP_FILE
exists. One JSON line per save: when it wanted to write (`start`), how long another process kept it from
the file (`wait`: until the try to open the file that succeeded began; `Store` retries every 0.2 s at
most) and how long the whole save took (`save`, opening a file included)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import duckdb

from core.gold.editing import history, save_gold
from core.store import Store

EVERY_S = 0.2
TASK = 1
ATTEMPTS: list[float] = []  # when each try to open the file began; the last one got it
_connect = duckdb.connect


def _counted_connect(*args, **kwargs):
    ATTEMPTS.append(time.time())
    return _connect(*args, **kwargs)


def main(argv: list[str]) -> int:
    db, gold_set, stop = argv[0], argv[1], Path(argv[2])
    duckdb.connect = _counted_connect  # Store tries duckdb.connect until the other process lets go
    i = 0
    while not stop.exists():
        start = time.time()
        with Store(db, lock_timeout_s=120) as store:
            current = history(store, gold_set, TASK)
            base = current[0]["version"] if current else None
            save_gold(store, gold_set, TASK, [[f"Click the 'probe {i}' button"]], "probe", f"probe {i}", base)
        end = time.time()
        print(json.dumps({"start": start, "wait": ATTEMPTS[-1] - start, "save": end - start}), flush=True)
        i += 1
        time.sleep(max(0.0, start + EVERY_S - time.time()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
