"""Reading JSON Lines files: one parsed object per non-blank line, errors naming file and line."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from core.errors import InputError
from core.files import safe_files

# One line (one task's trajectory, or a gold step) is never read beyond this: a file without newlines
# would otherwise be read whole, then parsed into several times its size.
MAX_LINE_BYTES = 64 << 20


def iter_jsonl(path: Path, kind: str = "jsonl") -> Iterator[tuple[int, Any]]:
    """(line number, parsed object) of each non-blank line; one-line InputError naming file and line.

    The file the user named must be a regular file (a link of theirs is followed once; a FIFO or a
    device is refused, never opened blocking)."""
    if not path.exists():
        raise InputError(path, "no such file")
    handle = safe_files.open_named(path, kind)
    with handle:
        number = 0
        while raw := handle.readline(MAX_LINE_BYTES + 1):
            number += 1
            if len(raw) > MAX_LINE_BYTES:
                raise InputError(path, f"line {number}: longer than {MAX_LINE_BYTES >> 20} MB")
            if not raw.strip():
                continue
            try:
                yield number, orjson.loads(raw)
            except orjson.JSONDecodeError as exc:
                try:
                    raw.decode("utf-8")
                except UnicodeDecodeError:
                    raise InputError(path, f"line {number}: not UTF-8 text") from None
                raise InputError(path, f"line {number}: not valid JSON ({exc})") from None
