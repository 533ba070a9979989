"""Reading and editing human gold trajectories: versioned per (gold set, task), never overwritten."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from core.errors import InputError
from core.measure.action_grammar.webarena import gold_value, parse_gold_step
from core.store import Store, insert_rows, utcnow
from core.values import normalise_text


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


def gold_versions(store: Store, gold_set: str, task_id: int) -> list[dict]:
    """Every version of a task's gold: version, author, created_at, note, steps (history view)."""
    return store.query_dicts(
        "SELECT version, any_value(author) AS author, min(created_at) AS created_at, any_value(note) AS note,"
        " count(*) AS steps, count(DISTINCT alternative) AS alternatives FROM gold_steps"
        " WHERE gold_set = ? AND task_id = ? GROUP BY version ORDER BY version",
        [gold_set, task_id],
    )


def save_gold_version(
    store: Store,
    gold_set: str,
    task_id: int,
    alternatives: list[list[str]],
    author: str,
    note: str | None = None,
) -> int:
    """Write the task's gold as a new version (highest + 1) and return it; older versions stay.

    Unconditional (scripts, tests): reviewers save through `core.gold.editing.save_gold`, which refuses
    a save based on a version that is no longer the current one.

    Step texts are whitespace-normalised and parsed like imported ones; empty texts and empty
    alternatives are dropped. Flags of imported rows are not carried over: an edit is human-written.
    """
    cleaned = [[normalise_text(t) for t in alt if t and normalise_text(t)] for alt in alternatives]
    cleaned = [alt for alt in cleaned if alt]
    if not cleaned:
        raise InputError(f"{gold_set}/{task_id}", "a gold version needs at least one non-empty step")
    if not author or not author.strip():
        raise InputError(f"{gold_set}/{task_id}", "a gold edit needs an author")
    with store.transaction() as cur:
        if not cur.execute("SELECT 1 FROM gold_sets WHERE name = ?", [gold_set]).fetchall():
            raise InputError(gold_set, "no such gold set")
        (latest,) = cur.execute(
            "SELECT coalesce(max(version), 0) FROM gold_steps WHERE gold_set = ? AND task_id = ?",
            [gold_set, task_id],
        ).fetchall()[0]
        version = latest + 1
        now = utcnow()
        rows = []
        for alternative, texts in enumerate(cleaned):
            for idx, text in enumerate(texts):
                parsed = parse_gold_step(text)
                rows.append(
                    {
                        "gold_set": gold_set, "version": version, "task_id": task_id,
                        "alternative": alternative, "idx": idx, "text": text, "verb": parsed.verb,
                        "element_label": parsed.element_label, "value": gold_value(parsed),
                        "source_row": None, "flags": [], "author": author.strip(), "created_at": now,
                        "note": note,
                    }
                )  # fmt: skip
        insert_rows(cur, "gold_steps", rows)
    return version
