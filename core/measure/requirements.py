"""Requirements for Partial Success: the pieces a task's final answer must contain.

Derived per task from the WebArena-Verified expected `retrieved_data` of retrieve tasks and from the
original WebArena `must_include`; an imported file overrides both. All three are stored in the
`requirements` table with their `source`; precedence is applied when they are read.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import orjson

from core.errors import InputError
from core.measure.requirement_spellings import join_spellings
from core.store import Store, insert_rows

SOURCES_BY_PRECEDENCE = ("import", "verified_retrieved_data", "original_must_include")


def _as_text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return value if isinstance(value, str) else orjson.dumps(value).decode()


def requirement_items(retrieved: Any) -> list[str]:
    """One text per required item. A nested list is one item with alternative spellings ('A || B');
    a dict (several fields of one record) gives one requirement per field value."""
    if retrieved is None:
        return []
    items = retrieved if isinstance(retrieved, list) else [retrieved]
    texts: list[str] = []
    for item in items:
        if isinstance(item, list):
            spellings = [_as_text(s).strip() for s in item if _as_text(s).strip()]
            if spellings:
                texts.append(join_spellings(spellings))
        elif isinstance(item, dict):
            texts.extend(_as_text(v).strip() for v in item.values() if v is not None and _as_text(v).strip())
        elif item is not None and _as_text(item).strip():
            texts.append(_as_text(item).strip())
    return texts


def _verified_rows(store: Store) -> list[dict[str, Any]]:
    rows = []
    for task_id, evals in store.query("SELECT task_id, eval FROM tasks WHERE task_type = 'retrieve'"):
        for config in orjson.loads(evals):
            if config.get("evaluator") != "AgentResponseEvaluator":
                continue
            for idx, text in enumerate(
                requirement_items((config.get("expected") or {}).get("retrieved_data"))
            ):
                rows.append(
                    {"task_id": task_id, "source": "verified_retrieved_data", "idx": idx, "text": text}
                )
    return rows


def _original_rows(store: Store) -> list[dict[str, Any]]:
    rows = []
    for task_id, must in store.query(
        "SELECT task_id, must_include FROM original_tasks WHERE must_include IS NOT NULL"
    ):
        for idx, text in enumerate(t.strip() for t in must if t and t.strip()):
            rows.append({"task_id": task_id, "source": "original_must_include", "idx": idx, "text": text})
    return rows


def derive_requirements(store: Store) -> dict[str, int]:
    """(Re)derive the requirements of every loaded task; imported overrides are left untouched."""
    verified, original = _verified_rows(store), _original_rows(store)
    with store.transaction() as cur:
        cur.execute(
            "DELETE FROM requirements WHERE source IN ('verified_retrieved_data', 'original_must_include')"
        )
        insert_rows(cur, "requirements", verified + original)
    return {"verified_retrieved_data": len(verified), "original_must_include": len(original)}


def ensure_requirements(store: Store) -> None:
    """Derive once: a database with tasks but no derived requirements gets them."""
    derived = store.query("SELECT count(*) FROM requirements WHERE source <> 'import'")[0][0]
    if derived == 0:
        derive_requirements(store)


def requirements_by_task(store: Store) -> dict[int, tuple[str, list[str]]]:
    """task_id -> (source, texts in order), taking the highest-precedence source of each task."""
    rows = store.query("SELECT task_id, source, idx, text FROM requirements ORDER BY task_id, source, idx")
    grouped: dict[int, dict[str, list[str]]] = {}
    for task_id, source, _idx, text in rows:
        grouped.setdefault(task_id, {}).setdefault(source, []).append(text)
    chosen = {}
    for task_id, by_source in grouped.items():
        for source in SOURCES_BY_PRECEDENCE:
            if source in by_source:
                chosen[task_id] = (source, by_source[source])
                break
    return chosen


# -- override file ------------------------------------------------------------------------------
def _task_id(path: Path, where: str, value: Any) -> int:
    try:
        task_id = int(str(value).strip())
    except (TypeError, ValueError):
        raise InputError(path, f"{where}: task_id {value!r} is not an integer") from None
    if not 0 <= task_id <= 100_000:
        raise InputError(path, f"{where}: task_id {task_id} is out of range")
    return task_id


def read_requirements_file(path: Path) -> dict[int, list[str]]:
    """CSV with columns task_id,requirement (one row per requirement, in order), or JSON: either
    {"<task_id>": [..]} or [{"task_id": .., "requirements": [..]}]. Validated whole before use."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InputError(path, "no such file") from None
    except OSError as exc:
        raise InputError(path, f"cannot read: {exc.strerror}") from None
    found: dict[int, list[str]] = {}
    if path.suffix.lower() == ".json":
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise InputError(path, f"not valid JSON ({exc})") from None
        entries = (
            list(data.items())
            if isinstance(data, dict)
            else [
                (e.get("task_id"), e.get("requirements")) if isinstance(e, dict) else (None, None)
                for e in data
            ]
            if isinstance(data, list)
            else None
        )
        if entries is None:
            raise InputError(path, "expected a JSON object {task_id: [requirements]} or a list of objects")
        for position, (key, items) in enumerate(entries):
            where = f"entry {position + 1}"
            task_id = _task_id(path, where, key)
            if not isinstance(items, list) or not all(isinstance(i, str | int | float) for i in items):
                raise InputError(path, f"{where} (task {task_id}): requirements must be a list of strings")
            found.setdefault(task_id, []).extend(_as_text(i).strip() for i in items if _as_text(i).strip())
    else:
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise InputError(path, "not UTF-8 text") from None
        reader = csv.DictReader(text.splitlines())
        columns = {c.strip().lower() for c in (reader.fieldnames or [])}
        if not {"task_id", "requirement"} <= columns:
            raise InputError(path, f"expected CSV columns task_id,requirement; found {sorted(columns)}")
        for line, row in enumerate(reader, start=2):
            row = {k.strip().lower(): (v or "") for k, v in row.items() if k}
            task_id = _task_id(path, f"line {line}", row["task_id"])
            requirement = row["requirement"].strip()
            if not requirement:
                raise InputError(path, f"line {line}: empty requirement")
            found.setdefault(task_id, []).append(requirement)
    if not found:
        raise InputError(path, "no requirements in the file")
    return found


def import_requirements(store: Store, path: Path) -> dict[str, int]:
    """Override the requirements of the tasks in the file (other tasks keep theirs)."""
    found = read_requirements_file(path)
    rows = [
        {"task_id": task_id, "source": "import", "idx": idx, "text": text}
        for task_id, texts in found.items()
        for idx, text in enumerate(texts)
    ]
    with store.transaction() as cur:
        cur.execute(
            "DELETE FROM requirements WHERE source = 'import' AND task_id IN (SELECT unnest(?))",
            [sorted(found)],
        )
        insert_rows(cur, "requirements", rows)
    return {"tasks": len(found), "requirements": len(rows)}
