"""`trajreview demo`'s database: the runs, gold and metrics of core.ingest.demo, then every run diagnosed
(core.diagnose) so every page of the demo shows failure causes. The command line ranks above both, so this
is where the two meet (the ingest package may not import the diagnosis, which ranks above it)."""

from __future__ import annotations

from pathlib import Path

from core.diagnose.run import diagnose_run
from core.ingest.demo import DEMO_DB, build_demo
from core.paths import DemoSource
from core.progress import ProgressCallback
from core.store import Store


def diagnose_every_run(store: Store, root: Path) -> str:
    """The demo's last step: suggested causes of every failed task, by the rules alone (the demo builds
    without any LLM endpoint)."""
    parts = []
    for (run,) in store.query("SELECT name FROM runs ORDER BY name"):
        result = diagnose_run(store, run)
        parts.append(f"{run} {result.by_source.get('rule', 0)}/{result.n_tasks}")
    return "failure causes decided by rules (failed tasks): " + ", ".join(parts)


def build_diagnosed_demo(
    path: Path = DEMO_DB, on_progress: ProgressCallback | None = None, source: DemoSource | None = None
) -> list[str]:
    """What `trajreview demo` and `make demo` build: core.ingest.demo.build_demo ending with
    `diagnose_every_run`, in the same temporary file (a failed diagnosis leaves nothing behind either)."""
    return build_demo(path, on_progress=on_progress, source=source, finish=(diagnose_every_run,))
