"""The demo database: illustrative data from ../shared/data, built once by `make demo`."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from core.datasets import import_tasks
from core.paths import REPO_ROOT
from core.store import Store

DEMO_DB = REPO_ROOT / "data" / "demo.duckdb"

# Each step takes the open store and returns a summary line. Later areas append their imports.
DemoStep = Callable[[Store], str]


def _tasks(store: Store) -> str:
    counts = import_tasks(store, original=True)
    return "tasks: " + ", ".join(f"{name} {n}" for name, n in counts.items())


def demo_steps() -> list[DemoStep]:
    return [_tasks]


def build_demo(path: Path = DEMO_DB, on_progress: Callable[[int, int], None] | None = None) -> list[str]:
    """Build into a temporary file and move it into place, so a failed build leaves nothing behind."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".building")
    tmp.unlink(missing_ok=True)
    steps = demo_steps()
    summary = []
    try:
        with Store(tmp) as store:
            for done, step in enumerate(steps):
                if on_progress:
                    on_progress(done, len(steps))
                summary.append(step(store))
            if on_progress:
                on_progress(len(steps), len(steps))
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return summary
