"""Import human gold trajectories: the paper's xlsx, or CSV / JSONL with the same columns.

Columns `Task No.`, `Step No.`, `Text`; one human action per row. Quirks handled (see the gold
data README): an empty `Task No.` continues the task above; `Step No.` = `Pink` marks rows pasted
from an agent's output (imported, flagged `pink`); a task that appears in several separate blocks
gets one alternative per block, in file order (step numbers restart inside a task, so the block
boundary, not the number, separates alternatives); whitespace is normalised (non-breaking spaces,
doubled and trailing spaces), the text is otherwise kept verbatim.

Import writes version 1 of every task's gold; edits add versions through the one writer, core/gold/editing.py, never overwrite.
"""

from __future__ import annotations

import csv
import hashlib
import math
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.errors import InputError
from core.files import safe_files
from core.files.jsonlines import iter_jsonl
from core.files.safe_files import task_id_ok
from core.measure.action_grammar.webarena import gold_value, parse_gold_step
from core.progress import ProgressCallback
from core.store import Store, insert_rows, utcnow
from core.values import normalise_text

COLUMNS = ("Task No.", "Step No.", "Text")
# Optional fourth column written by `trajreview export gold`: the 1-based alternative of the row, so a
# task's alternatives stay apart even as adjacent blocks. Without it, blocks separate alternatives.
ALTERNATIVE_COLUMN = "Alternative"
MAX_BYTES = 64 * 1024 * 1024  # an xlsx unpacked (the paper's: 0.7 MB); the file itself: core.files.safe_files


@dataclass
class GoldRow:
    source_row: int  # 1-based row in the file, header = 1 (for JSONL: the line number)
    task_id: int | None  # None: continues the task above
    step_no: Any
    text: str
    alternative: int | None = None  # from the Alternative column, when the file has one


@dataclass
class GoldImportSummary:
    gold_set: str
    n_tasks: int
    n_alternatives: int
    n_steps: int
    n_flagged: int
    n_tasks_with_alternatives: int
    n_skipped_empty: int
    unchanged_edits: int = 0


def _task_number(value: Any, path: Path, row: int) -> int | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        raise InputError(path, f"row {row}: Task No. {_shown(value)} is not a task number") from None
    # inf and nan are floats too; an id beyond the INTEGER column is no WebArena task either.
    if not math.isfinite(number) or number != int(number) or not task_id_ok(int(number)):
        raise InputError(path, f"row {row}: Task No. {_shown(value)} is not a task number")
    return int(number)


def _alternative_number(value: Any, path: Path, row: int) -> int | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    number = _task_number(value, path, row) if not isinstance(value, int) else value
    if not number or number < 1:
        raise InputError(path, f"row {row}: Alternative {value!r} is not a number from 1")
    return number


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:79] + "…"


def _check_header(header: list[Any], path: Path) -> None:
    names = [str(h).strip() if h is not None else "" for h in header]
    extra = names[4:] if names[3:4] == [ALTERNATIVE_COLUMN] else names[3:]
    if tuple(names[:3]) != COLUMNS or any(extra):
        raise InputError(
            path,
            f"expected the columns {', '.join(COLUMNS)}; found {', '.join(n for n in names if n) or 'none'}",
        )


def _xlsx_rows(path: Path) -> Iterator[tuple[int, list[Any]]]:
    """Cell values of the first sheet. A formula cell is refused: its value is whatever the formula
    computes (or nothing, when no application cached a result), never a human-written step."""
    import openpyxl
    from defusedxml import DefusedXmlException

    try:
        with zipfile.ZipFile(path) as archive:
            unpacked = sum(info.file_size for info in archive.infolist())
    except (zipfile.BadZipFile, OSError) as exc:
        raise InputError(path, f"not a readable xlsx file ({type(exc).__name__})") from None
    if unpacked > MAX_BYTES:
        raise InputError(path, f"unpacks to more than {MAX_BYTES >> 20} MB; not a gold file")
    # openpyxl parses with defusedxml when it is installed (a dependency): entity expansion ("billion
    # laughs") and external entities raise instead of expanding or reading files.
    try:
        book = openpyxl.load_workbook(path, read_only=True, data_only=False)
    except Exception as exc:  # openpyxl raises many types for a broken or non-xlsx file
        raise InputError(path, f"not a readable xlsx file ({_xml_reason(exc)})") from None
    try:
        sheet = book.worksheets[0]
        rows = enumerate(sheet.iter_rows(), start=1)
        while True:
            try:  # the sheet's XML is parsed lazily, row by row: its errors come from here
                number, row = next(rows)
            except StopIteration:
                break
            except (DefusedXmlException, SyntaxError, ValueError, KeyError, TypeError, OverflowError) as exc:
                raise InputError(path, f"not a readable xlsx sheet ({_xml_reason(exc)})") from None
            for cell in row:
                if cell.data_type == "f":
                    raise InputError(
                        path, f"row {number}: cell {cell.coordinate} is a formula; save the sheet as values"
                    )
            yield number, [cell.value for cell in row]
    except IndexError:
        raise InputError(path, "not a readable xlsx file (no worksheet)") from None
    finally:
        book.close()


def _xml_reason(exc: BaseException) -> str:
    from defusedxml import DefusedXmlException

    cause: BaseException | None = exc
    while cause is not None:  # openpyxl wraps what the parser raised in a ValueError
        if isinstance(cause, DefusedXmlException):
            return f"refused XML: {type(cause).__name__}, entity definitions are not read"
        cause = cause.__cause__ or cause.__context__
    return type(exc).__name__


def _csv_rows(path: Path) -> Iterator[tuple[int, list[Any]]]:
    number = 0
    try:
        with open(path, encoding="utf-8-sig", newline="") as handle:
            for number, row in enumerate(csv.reader(handle), start=1):
                yield number, list(row)
    except UnicodeDecodeError:
        raise InputError(path, "not UTF-8 text") from None
    except csv.Error as exc:  # e.g. a field over csv's 128 KB limit (real steps: ≤ 737 characters)
        raise InputError(path, f"row {number + 1}: not readable as CSV ({exc})") from None


def _jsonl_rows(path: Path) -> Iterator[tuple[int, list[Any]]]:
    yield 0, [*COLUMNS, ALTERNATIVE_COLUMN]  # JSONL names the columns in every object
    for number, obj in iter_jsonl(path, "gold"):
        if not isinstance(obj, dict) or not set(COLUMNS) <= obj.keys():
            raise InputError(path, f"line {number}: expected an object with keys {', '.join(COLUMNS)}")
        yield number, [obj[c] for c in COLUMNS] + [obj.get(ALTERNATIVE_COLUMN)]


def read_gold_rows(path: str | Path) -> list[GoldRow]:
    """Rows of a gold file (xlsx, csv or jsonl), header checked; fully blank rows dropped."""
    path = Path(path)
    if not path.exists():
        raise InputError(path, "no such file")
    # The file the user named (through a link of theirs if need be) must be a regular file: a FIFO
    # would block, a device never ends.
    safe_files.check_named(path, "gold")
    suffix = path.suffix.lower()
    readers: dict[str, Callable[[Path], Iterator[tuple[int, list[Any]]]]] = {
        ".xlsx": _xlsx_rows, ".csv": _csv_rows, ".jsonl": _jsonl_rows,
    }  # fmt: skip
    if suffix not in readers:
        raise InputError(path, "unsupported gold file type (expected .xlsx, .csv or .jsonl)")
    rows: list[GoldRow] = []
    header_seen = False
    for number, values in readers[suffix](path):
        if not header_seen:
            _check_header(values, path)
            header_seen = True
            continue
        values = (values + [None, None, None, None])[:4]
        if all(v is None or (isinstance(v, str) and not v.strip()) for v in values):
            continue
        task, step, text, alternative = values
        rows.append(
            GoldRow(number, _task_number(task, path, number), step, "" if text is None else str(text),
                    _alternative_number(alternative, path, number))
        )  # fmt: skip
    if not header_seen:
        raise InputError(path, "empty file (no header row)")
    return rows


def _flags(step_no: Any) -> list[str]:
    """`Pink` (and any other non-numeric Step No.) becomes a lower-case flag."""
    if step_no is None or isinstance(step_no, int | float):
        return []
    text = str(step_no).strip()
    if not text:
        return []
    try:
        float(text)
        return []
    except ValueError:  # an exported step with several flags lists them comma-separated
        return [f.strip().lower() for f in text.split(",") if f.strip()]


def gold_blocks(rows: list[GoldRow], path: Path) -> dict[int, list[list[GoldRow]]]:
    """Rows grouped per task into alternatives: one alternative per block of consecutive rows."""
    tasks: dict[int, list[list[GoldRow]]] = {}
    current = None
    if any(row.alternative is not None for row in rows):  # an exported file names each row's alternative
        numbered: dict[int, dict[int, list[GoldRow]]] = {}
        for row in rows:
            task = row.task_id if row.task_id is not None else current
            if task is None or row.alternative is None:
                raise InputError(
                    path, f"row {row.source_row}: needs a Task No. (or one above) and an Alternative"
                )
            numbered.setdefault(task, {}).setdefault(row.alternative, []).append(row)
            current = task
        return {task: [alts[a] for a in sorted(alts)] for task, alts in numbered.items()}
    for row in rows:
        task = row.task_id if row.task_id is not None else current
        if task is None:
            raise InputError(path, f"row {row.source_row}: no Task No. and no task above to continue")
        if task != current:
            tasks.setdefault(task, []).append([])
            current = task
        tasks[task][-1].append(row)
    return tasks


def gold_step_rows(
    gold_set: str, blocks: dict[int, list[list[GoldRow]]], author: str | None, created_at: Any
) -> tuple[list[dict[str, Any]], int]:
    """gold_steps rows (version 1) and the number of rows skipped for an empty text."""
    out: list[dict[str, Any]] = []
    skipped = 0
    for task_id in sorted(blocks):
        for alternative, block in enumerate(blocks[task_id]):
            idx = 0
            for row in block:
                text = normalise_text(row.text)
                if not text:
                    skipped += 1
                    continue
                parsed = parse_gold_step(text)
                out.append(
                    {
                        "gold_set": gold_set, "version": 1, "task_id": task_id, "alternative": alternative,
                        "idx": idx, "text": text, "verb": parsed.verb, "element_label": parsed.element_label,
                        "value": gold_value(parsed), "source_row": row.source_row, "flags": _flags(row.step_no),
                        "author": author, "created_at": created_at, "note": "imported",
                    }
                )  # fmt: skip
                idx += 1
    return out, skipped


def import_gold(
    store: Store,
    path: str | Path,
    name: str,
    *,
    author: str | None = None,
    replace: bool = False,
    on_progress: ProgressCallback | None = None,
) -> GoldImportSummary:
    """Import a gold file as gold set `name` (version 1 of every task).

    Re-importing the same file rewrites version 1 identically and keeps later edits. A different
    file under an existing name is refused unless `replace`, which drops the whole set, edits included.
    """
    path = Path(path)
    if not name.strip():
        raise InputError(path, "the gold set needs a name")
    if on_progress:
        on_progress(0, 3)
    rows = read_gold_rows(path)
    if not rows:
        raise InputError(path, "no gold rows")
    checksum = hashlib.sha256(path.read_bytes()).hexdigest()
    blocks = gold_blocks(rows, path)
    if on_progress:
        on_progress(1, 3)
    with store.transaction() as cur:
        existing = cur.execute(
            "SELECT source_checksum, created_at FROM gold_sets WHERE name = ?", [name]
        ).fetchall()
        existing = existing[0] if existing else None
        if existing and existing[0] != checksum and not replace:
            raise InputError(
                path,
                f"gold set {name!r} already exists from a different file; choose another --name or replace it",
            )
        same_file = existing is not None and existing[0] == checksum
        created_at = existing[1] if same_file else utcnow()
        step_rows, skipped = gold_step_rows(name, blocks, author, created_at)
        if same_file:
            cur.execute("DELETE FROM gold_steps WHERE gold_set = ? AND version = 1", [name])
        else:
            cur.execute("DELETE FROM gold_steps WHERE gold_set = ?", [name])
        cur.execute("DELETE FROM gold_sets WHERE name = ?", [name])
        n_alternatives = sum(len(b) for b in blocks.values())
        cur.execute(
            "INSERT INTO gold_sets (name, source_path, source_checksum, author, description, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            [name, str(path), checksum, author,
             f"{path.name}: {len(blocks)} tasks, {n_alternatives} alternatives, {len(step_rows)} steps",
             created_at],
        )  # fmt: skip
        insert_rows(cur, "gold_steps", step_rows)
        edits = cur.execute(
            "SELECT count(DISTINCT task_id) FROM gold_steps WHERE gold_set = ? AND version > 1", [name]
        ).fetchall()[0][0]
    if on_progress:
        on_progress(3, 3)
    return GoldImportSummary(
        gold_set=name,
        n_tasks=len(blocks),
        n_alternatives=n_alternatives,
        n_steps=len(step_rows),
        n_flagged=sum(1 for r in step_rows if r["flags"]),
        n_tasks_with_alternatives=sum(1 for b in blocks.values() if len(b) > 1),
        n_skipped_empty=skipped,
        unchanged_edits=edits,
    )
