"""What a scoring worker needs, imported once in the workers' fork server (`SCORING_MODULES`).

The official engine (`load_engine()`: its unit registry from the cache, `core.scoring.official_engine`),
then the worker side of a run import (`core.ingest.wav_tasks`), with the cyclic GC off: the imports create about a
million objects that all live on, and the GC would rescan them some ninety times (70-190 ms of the
preload) to free nothing. Then they are frozen (`gc.freeze`), as CPython advises before forking: no
collection in the server or in a worker forked from it scans them again.

Imported only by the fork server: it freezes everything the importing process holds.
"""

from __future__ import annotations

import gc
import importlib

# Imported after the engine: nothing may import the engine before its unit registry can come from the cache.
WORKER_MODULE = "core.ingest.wav_tasks"


def preload() -> None:
    """The engine, then the worker side, with the GC off; everything frozen after."""
    gc.disable()
    try:
        from core.scoring.official_engine import load_engine

        load_engine()
        importlib.import_module(WORKER_MODULE)
    finally:
        gc.freeze()
        gc.enable()


preload()  # the fork server imports this module by name (SCORING_MODULES)
