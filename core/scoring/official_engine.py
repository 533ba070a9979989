"""The official engine, imported with pint's unit registry read from a definitions cache.

The engine builds a `pint.UnitRegistry()` when it is imported (its distance type), parsing pint's unit
definitions: about a fifth of the engine's one-second import. `load_engine()` imports the engine with
`pint.UnitRegistry` standing, for that import only, for a factory that builds the same registry from the
parsed definitions pint pickles into `unit_cache_dir()` (tens of milliseconds once warm). Importing this
module does nothing more than import pint: the fork server's preload (`core.ingest.scoring_preload`)
calls `load_engine()` first, and in-process users (`core.scoring.engine`) call it before their first
engine import.

The cache holds pickles, so it lives in this user's own cache directory (mode 0700, owned by this user,
else unused), one folder per pint version. pint writes its cache files in place, so a new cache is
built in a temporary folder beside it and renamed into place whole; of two processes building at once,
one rename wins and the other's folder is discarded. Whatever goes wrong with the cache (unreadable,
corrupt, not ours) the registry is built as the engine builds it, without one.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pint
import platformdirs

from core.files.parallel import ENGINE_MODULE

CACHE_ENV = "TRAJREVIEW_CACHE_DIR"  # overrides the user cache directory (tests)
_REAL_REGISTRY = pint.UnitRegistry


def unit_cache_dir() -> Path:
    """Where pint's parsed definitions are cached for this pint version."""
    root = os.environ.get(CACHE_ENV) or platformdirs.user_cache_dir("trajreview", appauthor=False)
    return Path(root) / f"pint-{pint.__version__}"


def cached_unit_registry(*args: Any, **kwargs: Any) -> pint.UnitRegistry:
    """A `pint.UnitRegistry()` equal to the plain one, built from the cache (made first if absent); a call
    with arguments (not the engine's) gets exactly what it asked for."""
    if args or kwargs:
        return _REAL_REGISTRY(*args, **kwargs)
    folder = unit_cache_dir()
    try:
        if not _usable(folder):
            return _build_cache(folder)
    except Exception:  # no cache can be made here (a read-only home): as the engine builds it
        return _REAL_REGISTRY()
    try:
        return _REAL_REGISTRY(cache_folder=folder)
    except Exception:  # a corrupt cache: as the engine builds it, and the next process makes a new one
        _discard(folder)
        return _REAL_REGISTRY()


def _usable(folder: Path) -> bool:
    try:
        stat = folder.stat()
    except OSError:
        return False
    return stat.st_uid == os.getuid() and not stat.st_mode & 0o077 and any(folder.glob("*.pickle"))


def _build_cache(folder: Path) -> pint.UnitRegistry:
    """Parse the definitions into a new folder, then rename it into place (a loser of a race discards its
    own); the registry built on the way is the one returned."""
    folder.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    if folder.exists():  # a folder we may not use (someone else's, or open to others): leave it be
        return _REAL_REGISTRY()
    building = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))  # mode 0700
    try:
        registry = _REAL_REGISTRY(cache_folder=building)
    except Exception:
        shutil.rmtree(building, ignore_errors=True)
        raise
    try:
        os.rename(building, folder)
    except OSError:  # another process renamed its folder first: theirs stays
        shutil.rmtree(building, ignore_errors=True)
    return registry


def _discard(folder: Path) -> None:
    with contextlib.suppress(OSError):
        aside = Path(tempfile.mkdtemp(prefix=f".{folder.name}-old-", dir=folder.parent))
        os.rename(folder, aside / folder.name)  # atomic: a reader sees the whole folder or none
        shutil.rmtree(aside, ignore_errors=True)


@contextlib.contextmanager
def _registry_from_cache() -> Iterator[None]:
    pint.UnitRegistry = cached_unit_registry  # type: ignore[misc, assignment]
    try:
        yield
    finally:
        pint.UnitRegistry = _REAL_REGISTRY  # type: ignore[misc]


def load_engine() -> None:
    """Import the official engine in this process (once), its unit registry from the cache."""
    if ENGINE_MODULE in sys.modules:
        return
    with _registry_from_cache():
        importlib.import_module(ENGINE_MODULE)
