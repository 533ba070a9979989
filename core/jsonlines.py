"""Reading JSON Lines files: one parsed object per non-blank line, errors naming file and line."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from core.errors import InputError


def iter_jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, parsed object) of each non-blank line; one-line InputError naming file and line."""
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed below; lines are decoded by orjson
    except OSError as exc:
        raise InputError(path, f"cannot be read ({exc.strerror or exc})") from None
    with handle:
        for number, raw in enumerate(handle, start=1):
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
