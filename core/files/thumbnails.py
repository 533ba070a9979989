"""Screenshots scaled down once and kept on disk beside the database (`<db>.thumbnails/`, derived like the
search index, not part of the contract), so the first view of a task after a server start reads small
JPEGs instead of decoding full-size screenshots again (scaling one to the step view's 800 px took 30 ms
p50 for the AgentLab sample's PNGs, 6 ms for OpAgent's JPEGs, on this 2-core machine).

An entry is named by a hash of the screenshot's resolved path, its identity (size, modification time,
inode), the width it was scaled to and this scheme's version: a replaced screenshot gets a new entry, and
nothing in an entry's name or content comes from the run's files but the scaled pixels. A folder that
cannot be written (a read-only instance on a read-only disk) only means nothing is kept.
"""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

VERSION = 1
MAX_BYTES = 5 << 20  # a kept thumbnail larger than this was not written by us: it is made again


def folder_for(db: Path) -> Path:
    return db.with_name(db.name + ".thumbnails")


def _entry(folder: Path, source: Path, max_width: int) -> Path | None:
    try:
        info = source.lstat()
        resolved = source.resolve()
    except OSError:
        return None
    key = f"{VERSION}\0{resolved}\0{info.st_size}\0{info.st_mtime_ns}\0{info.st_ino}\0{max_width}"
    name = hashlib.blake2b(key.encode("utf-8", "surrogateescape"), digest_size=16).hexdigest()
    return folder / name[:2] / f"{name}.jpg"


def _read(entry: Path) -> bytes | None:
    try:
        info = entry.lstat()
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_BYTES:
            return None
        return entry.read_bytes()
    except OSError:
        return None


def _keep(entry: Path, data: bytes) -> None:
    """Written whole or not at all (a temporary file renamed into place): a reader never sees half."""
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=entry.parent, suffix=".part")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.replace(tmp, entry)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError:
        pass


def kept_or_made(
    folder: Path | None, source: str, max_width: int, make: Callable[[], bytes | None]
) -> bytes | None:
    """The kept thumbnail of `source` at `max_width`, else `make()` (kept for next time when it gives
    bytes). Without a folder, always `make()`."""
    entry = _entry(folder, Path(source), max_width) if folder is not None else None
    if entry is not None and (kept := _read(entry)) is not None:
        return kept
    made = make()
    if entry is not None and made is not None:
        _keep(entry, made)
    return made
