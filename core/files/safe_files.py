"""One rule for every file an importer reads: a regular file, inside the folder given, within its limit.

Imported folders and archives are hostile input. A symbolic link could pull a file from anywhere on the
machine into the database (a key file stored as an agent response); a FIFO blocks `open()` forever; a
device or a multi-gigabyte file eats the machine. So every importer goes through this module:

- `check` looks at the path without following it (`lstat`): only a regular file passes, and, when a
  root is given, only one whose resolved path lies inside that root; its size is compared with the
  limit of its kind *before* a byte is read.
- `read_bytes` / `open_text` open with O_NOFOLLOW | O_NONBLOCK (a FIFO swapped in after the check never
  blocks), check the opened descriptor again (`fstat`) and never read more than the limit.

The limits (`LIMITS`) sit far above the largest file of each kind in the real data and far below what
the machine can hold; docs/limits.md gives the measured maxima beside them.
"""

from __future__ import annotations

import io
import os
import stat
from pathlib import Path
from typing import Final

from core.errors import InputError

MB: Final = 1 << 20

# Largest file accepted per kind of file. Measured maxima of ../shared/data in docs/limits.md.
LIMITS: Final[dict[str, int]] = {
    "network trace": 256 * MB,  # real HARs ≤ 0.9 MB; streaming keeps RSS ≤ ~3x the file
    "agent response": 4 * MB,  # real agent_response.json ≤ 0.3 KB
    "run config": 4 * MB,  # run_config.json / config.json: a few KB
    "render": 64 * MB,  # real render_<id>.html ≤ 1.9 MB
    "log": 64 * MB,  # real task logs ≤ 0.2 MB, merge logs a few MB
    "error file": 64 * MB,  # error.txt ≤ 37 KB
    "OpAgent task file": 64 * MB,  # real final_results/<id>.json ≤ 0.2 MB
    "step pickle": 64 * MB,  # real step_<n>.pkl.gz ≤ 0.35 MB (1.6 MB unpacked)
    "episode file": 16 * MB,  # summary_info.json, package_versions.txt, experiment.log head
    "jsonl": 128
    * MB,  # a trajreview JSONL file: every trajectory is held until the one transaction (250 MB: 1.7 GB RSS)
    "gold": 64 * MB,  # the paper's gold xlsx: 0.1 MB (0.7 MB unpacked); every row is held in memory
    "submission": 4096
    * MB,  # a submission .tar.gz on disk (812 real tasks: ~1 GB unpacked)  # the paper's gold xlsx: 0.1 MB
}

# Task ids are stored as INTEGER (32-bit signed); WebArena's are 0..811. A larger id in a file name,
# a log line or a cell is an input error caught where it is read, not a DuckDB error at insert time.
MAX_TASK_ID: Final = 2**31 - 1


class UnsafeFile(InputError):
    """A link, a FIFO, a device, or a path leading outside the folder given."""


class FileTooLarge(InputError):
    """A file larger than the limit of its kind (checked before reading)."""


def task_id_ok(value: int) -> bool:
    """True when `value` fits the store's INTEGER task id column (and is not negative)."""
    return 0 <= value <= MAX_TASK_ID


def _limit(kind: str) -> int:
    return LIMITS[kind]


def check(path: str | Path, kind: str, *, root: str | Path | None = None) -> os.stat_result:
    """The path's `lstat` if it is a regular file (not a link), inside `root`, within the kind's limit.

    Raises UnsafeFile, FileTooLarge or InputError (missing, unreadable) naming the file.
    """
    path = Path(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        raise InputError(path, "no such file") from None
    except OSError as exc:
        raise InputError(path, f"cannot read ({exc.strerror or exc})") from None
    if stat.S_ISLNK(st.st_mode):
        raise UnsafeFile(path, "a symbolic link; only regular files inside the folder given are read")
    if not stat.S_ISREG(st.st_mode):
        raise UnsafeFile(path, f"not a regular file ({_file_type(st.st_mode)}); not read")
    # A regular file (not a link) named directly in `root` resolves to a name in `root`'s own resolved
    # folder: only a path through sub-folders (any of them a link) needs resolving.
    if root is not None and path.parent != Path(root):
        inside(path, root)
    limit = _limit(kind)
    if st.st_size > limit:
        raise FileTooLarge(
            path, f"{st.st_size} bytes, more than the {limit // MB} MB limit for a {kind} (docs/limits.md)"
        )
    return st


def check_named(path: str | Path, kind: str) -> os.stat_result:
    """`check` for the one path a user names: a link of theirs is followed, the error names their path."""
    path = Path(path)
    try:
        target = path.resolve()
    except (OSError, RuntimeError) as exc:
        raise InputError(path, f"cannot be resolved ({exc})") from None
    try:
        return check(target, kind)
    except InputError as exc:
        if target == path.absolute():
            raise
        raise type(exc)(path, f"{exc.reason} (it links to {target})") from None


def inside(path: str | Path, root: str | Path) -> None:
    """UnsafeFile unless `path`, every link resolved, lies inside `root` (a linked parent folder too)."""
    try:
        resolved = Path(path).resolve()
        base = Path(root).resolve()
    except (OSError, RuntimeError) as exc:  # a link loop
        raise UnsafeFile(path, f"cannot be resolved ({exc})") from None
    if resolved != base and not resolved.is_relative_to(base):
        raise UnsafeFile(path, "leads outside the folder given (through a symbolic link); not read")


def is_regular(path: str | Path) -> bool:
    """True for a regular file that is not a link (a FIFO, device or link is never one)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except (OSError, ValueError):
        return False


def _file_type(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a file"


def _open_fd(path: Path, kind: str, root: str | Path | None) -> int:
    check(path, kind, root=root)
    try:
        # O_NONBLOCK: a FIFO put in place between check and open must not block the import.
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise UnsafeFile(path, f"cannot be opened as a regular file ({exc.strerror or exc})") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_size > _limit(kind):
        os.close(fd)
        raise UnsafeFile(path, "changed while being read (no longer a regular file within its limit)")
    os.set_blocking(fd, True)
    return fd


def read_bytes(path: str | Path, kind: str, *, root: str | Path | None = None) -> bytes:
    """The whole file, checked by `check` first; never more than the kind's limit is read."""
    path = Path(path)
    limit = _limit(kind)
    fd = _open_fd(path, kind, root)
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:  # grew after the check
        raise FileTooLarge(path, f"more than the {limit // MB} MB limit for a {kind} (docs/limits.md)")
    return data


def open_binary(path: str | Path, kind: str, *, root: str | Path | None = None) -> io.BufferedReader:
    """An open binary handle on a checked file (for streaming readers)."""
    return os.fdopen(_open_fd(Path(path), kind, root), "rb")


def open_named(path: str | Path, kind: str) -> io.BufferedReader:
    """An open binary handle on the one file a user names (see `check_named`)."""
    check_named(path, kind)
    return open_binary(Path(path).resolve(), kind)


def open_text(path: str | Path, kind: str, *, root: str | Path | None = None) -> io.TextIOWrapper:
    """A UTF-8 text handle (undecodable bytes replaced) on a checked file, for line-by-line readers."""
    return io.TextIOWrapper(open_binary(path, kind, root=root), encoding="utf-8", errors="replace")
