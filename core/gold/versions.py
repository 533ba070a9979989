"""A task's current gold as typed records (the metrics and the Alignment tab read it).

Gold is versioned per (gold set, task) and never overwritten; the one writer is `core.gold.editing.save_gold`."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from core.store import Store


@dataclass
class GoldStep:
    idx: int
    text: str
    verb: str | None = None
    element_label: str | None = None
    value: str | None = None
    flags: list[str] = field(default_factory=list)
    source_row: int | None = None


@dataclass
class GoldVersion:
    gold_set: str
    task_id: int
    version: int
    alternatives: list[list[GoldStep]]
    author: str | None
    created_at: datetime
    note: str | None


def current_gold(store: Store, gold_set: str, task_id: int) -> GoldVersion | None:
    """The task's gold at its highest version, alternatives in order; None when the task has none."""
    rows = store.query_dicts(
        "SELECT version, alternative, idx, text, verb, element_label, value, flags, source_row, author,"
        " created_at, note FROM gold_steps WHERE gold_set = ? AND task_id = ? AND version = ("
        "  SELECT max(version) FROM gold_steps WHERE gold_set = ? AND task_id = ?)"
        " ORDER BY alternative, idx",
        [gold_set, task_id, gold_set, task_id],
    )
    if not rows:
        return None
    alternatives: dict[int, list[GoldStep]] = {}
    for r in rows:
        alternatives.setdefault(r["alternative"], []).append(
            GoldStep(
                r["idx"],
                r["text"],
                r["verb"],
                r["element_label"],
                r["value"],
                list(r["flags"] or []),
                r["source_row"],
            )  # fmt: skip
        )
    first = rows[0]
    return GoldVersion(
        gold_set, task_id, first["version"], [alternatives[a] for a in sorted(alternatives)],
        first["author"], first["created_at"], first["note"],
    )  # fmt: skip
