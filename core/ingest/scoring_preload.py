"""What a scoring worker needs, imported once in the workers' fork server (`SCORING_MODULES`).

The official engine (its unit registry from the cache: `core.scoring.official_engine`), then the worker
side of a run import (`core.ingest.wav_tasks`), with the cyclic GC off: the imports create about a
million objects that all live on, and the GC would rescan them some ninety times (70-190 ms of the
preload) to free nothing. Then they are frozen (`gc.freeze`), as CPython advises before forking: no
collection in the server or in a worker forked from it scans them again.

Imported only by the fork server: it freezes everything the importing process holds.
"""

from __future__ import annotations

import gc
import importlib

# The engine first: nothing may import it before its unit registry can come from the cache.
PRELOADED = ("core.scoring.official_engine", "core.ingest.wav_tasks")

gc.disable()
try:
    for name in PRELOADED:
        importlib.import_module(name)
finally:
    gc.freeze()
    gc.enable()
