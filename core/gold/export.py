"""Export a gold set's current gold as xlsx, CSV or JSONL, in the columns `trajreview import gold` reads.

Columns `Task No.`, `Step No.`, `Text`, plus `Alternative` (1-based) so that a task's alternatives stay
apart even when they would be adjacent blocks. `Step No.` is the step's number, or its flag when the step
is flagged (the paper's `Pink`), which the importer reads back as that flag. Importing the file gives the
same content — every task's alternatives, step texts and flags — as version 1 of a new gold set.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import orjson

from core.errors import InputError
from core.ingest.gold import ALTERNATIVE_COLUMN, COLUMNS
from core.store import Store, require_gold_set

FORMATS = ("xlsx", "csv", "jsonl")
HEADER = (*COLUMNS, ALTERNATIVE_COLUMN)


def export_rows(store: Store, gold_set: str) -> list[tuple[int, Any, str, int]]:
    """(task, step number or flag, text, alternative) of every task's current version, in order."""
    require_gold_set(store, gold_set)
    rows = store.query(
        """SELECT task_id, alternative, idx, text, flags FROM gold_steps g
           WHERE gold_set = $g AND version = (SELECT max(version) FROM gold_steps h
                                              WHERE h.gold_set = g.gold_set AND h.task_id = g.task_id)
           ORDER BY task_id, alternative, idx""",
        {"g": gold_set},
    )
    # A step carries one flag through the Step No. column (the paper's convention); more flags are joined.
    return [
        (task, ", ".join(flags) if flags else idx + 1, text, alt + 1) for task, alt, idx, text, flags in rows
    ]


def export_gold(store: Store, gold_set: str, path: str | Path, fmt: str | None = None) -> int:
    """Write the gold set to `path` (format from `fmt` or the suffix); returns the number of steps."""
    path = Path(path)
    fmt = (fmt or path.suffix.lstrip(".")).lower()
    if fmt not in FORMATS:
        raise InputError(path, f"unsupported export format {fmt!r} (use {', '.join(FORMATS)})")
    rows = export_rows(store, gold_set)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".partial")  # a failed export never leaves half a file under the name
    if fmt == "xlsx":
        import openpyxl

        book = openpyxl.Workbook()
        sheet = book.active
        sheet.title = gold_set[:31] or "gold"
        sheet.append(list(HEADER))
        for row in rows:
            sheet.append(list(row))
        # openpyxl would store a text starting with "=" as a formula; keep every text a literal string.
        for (cell,) in sheet.iter_rows(min_row=2, min_col=3, max_col=3):
            cell.data_type = "s"
        book.save(tmp)
    elif fmt == "csv":
        with open(tmp, "w", encoding="utf-8", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(HEADER)
            writer.writerows(rows)
    else:
        with open(tmp, "wb") as handle:
            for row in rows:
                handle.write(orjson.dumps(dict(zip(HEADER, row, strict=True))) + b"\n")
    tmp.replace(path)
    return len(rows)
