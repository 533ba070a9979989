"""A reviewer's saves in a process of their own (the multi-process test and bench/bench_save.py run it):
`python -m tests.gold_saver DB GOLD_SET TASK AUTHOR N [PAUSE_S]` saves N edits of one task, each in its
own short open of the database as the app does, and prints one JSON line per save (version, start, end)."""

from __future__ import annotations

import json
import random
import sys
import time

from core.gold.editing import history, save_gold
from core.store import Store


def save_once(db: str, gold_set: str, task: int, author: str, i: int) -> int:
    with Store(db, lock_timeout_s=60) as store:
        current = history(store, gold_set, task)
        base = current[0]["version"] if current else None
        steps = [[f"Click the '{author} {i}' button", f"Type '{i}' into the 'Search' textbox"]]
        return save_gold(store, gold_set, task, steps, author, f"edit {i}", base)


def main(argv: list[str]) -> int:
    db, gold_set, task, author, n = argv[0], argv[1], int(argv[2]), argv[3], int(argv[4])
    pause = float(argv[5]) if len(argv) > 5 else 0.02
    for i in range(n):
        start = time.time()
        version = save_once(db, gold_set, task, author, i)
        print(json.dumps({"i": i, "version": version, "start": start, "end": time.time()}), flush=True)
        time.sleep(random.uniform(0, pause))  # a reviewer does not save back to back
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
