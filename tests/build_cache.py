"""The expensive databases of the test suite (the demo, the whole runs, the scored WAV runs), built once and
kept between runs of the suite.

An entry is keyed by everything that decides its content: the code that builds it (every file under `core/`,
the build recipe's own source), the packages whose output lands in it (duckdb's file format, the official
engine, Python) and the bytes of every input file; an entry that holds only the official engine's output
(its verdicts on fixed inputs) is keyed without our code, which cannot change it. A second `make test` on an unchanged tree copies the
entry instead of building; any change to one of those builds it anew. Entries live in `.cache/test-builds/`
beside the repository (`make clean-cache` empties it; `TRAJREVIEW_TEST_CACHE=0` builds every time, as a
fresh clone does). Builders take a lock per entry, so two pytest-xdist workers wanting one database build
it once; a build that fails leaves no entry.

A test never receives the entry itself: `cached_build` copies it (the database and the search index beside
it) into the caller's folder, so no test can change what another run reads.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.metadata
import inspect
import os
import platform
import shutil
from collections.abc import Callable, Iterable
from contextlib import contextmanager
from functools import cache
from pathlib import Path

from core.paths import REPO_ROOT

CACHE_ENV = "TRAJREVIEW_TEST_CACHE"
CACHE_ROOT = REPO_ROOT / ".cache" / "test-builds"
COMPLETE = "complete"  # written last inside an entry: an entry without it is never read
_KEEP_PER_NAME = 2  # older entries of one name are removed when a new one lands
_CODE = ("core", "prompts")
_PACKAGES = ("duckdb", "webarena-verified", "pyarrow", "tantivy")


def enabled() -> bool:
    return os.environ.get(CACHE_ENV, "1") != "0"


def _hash_tree(digest, root: Path, suffixes: tuple[str, ...] | None = None) -> None:
    """Every file under `root` (or `root` itself): its path relative to `root` and its bytes, in order."""
    files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
    for path in files:
        if suffixes and path.suffix not in suffixes:
            continue
        if "__pycache__" in path.parts:
            continue
        digest.update(str(path.relative_to(root) if path != root else path.name).encode())
        digest.update(b"\0")
        digest.update(_file_digest(path))


_DIGESTS: dict[tuple[str, int, int, int], bytes] = {}


def _file_digest(path: Path) -> bytes:
    """A file's bytes hashed once per process while it stays the same file (its mtime, size and inode): the
    whole-run inputs are hundreds of megabytes, asked for by several fixtures."""
    info = path.stat()
    key = (str(path), info.st_mtime_ns, info.st_size, info.st_ino)
    if key not in _DIGESTS:
        with path.open("rb") as f:
            _DIGESTS[key] = hashlib.file_digest(f, "blake2b").digest()
    return _DIGESTS[key]


@cache
def _packages_version() -> str:
    """The packages and Python whose output lands in a build."""
    versions = [f"{package}={importlib.metadata.version(package)}" for package in _PACKAGES]
    return "\n".join([*versions, platform.python_version()])


@cache
def code_version() -> str:
    """The code and packages that decide what a build writes."""
    digest = hashlib.blake2b(digest_size=16)
    for folder in _CODE:
        _hash_tree(digest, REPO_ROOT / folder, (".py", ".sql", ".json", ".md", ".txt"))
    digest.update(_packages_version().encode())
    return digest.hexdigest()


def entry_key(recipe: Callable, inputs: Iterable[Path], code: bool = True) -> str:
    """The entry's key: the recipe's source, every input's name and bytes, the packages and Python, and
    (unless `code` is False: the entry holds only the official engine's output) our code."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update((code_version() if code else _packages_version()).encode())
    digest.update(inspect.getsource(recipe).encode())
    for path in inputs:
        digest.update(str(path.name).encode())
        _hash_tree(digest, Path(path))
    return digest.hexdigest()


@contextmanager
def _locked(path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _prune(name: str, keep: Path) -> None:
    entries = sorted(
        (p for p in CACHE_ROOT.glob(f"{name}-*") if p.is_dir() and p != keep),
        key=lambda p: p.stat().st_mtime,
        reverse=True,
    )
    for old in entries[_KEEP_PER_NAME - 1 :]:
        shutil.rmtree(old, ignore_errors=True)


def cached_build(
    name: str,
    build: Callable[[Path], object],
    dest: Path,
    inputs: Iterable[Path] = (),
    filename: str = "",
    code: bool = True,
) -> Path:
    """`dest/<filename>` (default `<name>.duckdb`), with whatever the build left beside it (its search
    index, a run folder it wrote), built by `build(path)` or copied from the cache entry of the same key.
    `inputs` are the files and folders the build reads besides the code. The build runs inside the entry's
    own folder: a database that records a folder beside it (the demo's constructed WAV run) keeps
    pointing at a folder that stays. `code=False` for an entry our code cannot change (see `entry_key`)."""
    dest.mkdir(parents=True, exist_ok=True)
    target = dest / (filename or f"{name}.duckdb")
    if not enabled():
        build(target)
        return target
    entry = CACHE_ROOT / f"{name}-{entry_key(build, inputs, code)}"
    with _locked(CACHE_ROOT / f"{name}.lock"):
        if not (entry / COMPLETE).exists():
            shutil.rmtree(entry, ignore_errors=True)
            entry.mkdir(parents=True)
            try:
                build(entry / target.name)
            except BaseException:
                shutil.rmtree(entry, ignore_errors=True)
                raise
            (entry / COMPLETE).write_text("")
            _prune(name, entry)
        os.utime(entry)
    for item in entry.iterdir():
        if item.name == COMPLETE:
            continue
        copy = dest / item.name
        if item.is_dir():
            shutil.copytree(item, copy)
        else:
            shutil.copy2(item, copy)
    return target


def built_db(tmp_path_factory, name: str, build: Callable[[Path], object], inputs: Iterable[Path] = (),
             filename: str = "", code: bool = True) -> Path:  # fmt: skip
    """`build(path)`'s database in a new folder of this pytest session (`tmp_path_factory`), copied from
    the cache where the code, the recipe and `inputs` are unchanged."""
    return cached_build(name, build, tmp_path_factory.mktemp(name), inputs, filename, code)
