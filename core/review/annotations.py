"""Reviewer writes: labels and notes on a run, task, step or network event, marks on judged pairs,
decisions on a task's suggested failure cause, and the label vocabulary.

Everything is append-only: a write is a new row with its author and time, a correction is a newer row
for the same target, and the read models (core/queries/annotations.py) take the latest row of each
target while the history stays. Nothing here updates or deletes.

A row is the target's whole current state: a label and a note saved together; a row with neither
clears the target (the history keeps what was there).
"""

from __future__ import annotations

from dataclasses import dataclass

from core.errors import InputError, NotFound
from core.measure.llm.diagnosis import CAUSES
from core.store import Store, insert_rows, utcnow

# What a row annotates; each target needs the key columns listed.
TARGET_KEYS: dict[str, tuple[str, ...]] = {
    "run": ("run",),
    "task": ("run", "task_id"),
    "step": ("run", "task_id", "episode", "step_idx"),
    "event": ("run", "task_id", "event_seq"),
    "diagnosis": ("run", "task_id"),
    "judgment": (
        "run", "task_id", "episode", "gold_set", "gold_version", "alternative", "gold_idx", "step_idx",
        "judge_config",
    ),
}  # fmt: skip
LABEL_TARGETS = ("run", "task", "step", "event")
MARKS = ("right", "wrong")  # the reviewer's mark on a judged pair: was the judge's verdict right?
DECISIONS = ("accepted", "rejected")  # the reviewer's decision on a task's suggested cause (target diagnosis)
MAX_LABEL = 60
MAX_NOTE = 4000


def _author(author: str | None) -> str:
    name = (author or "").strip()
    if not name:
        raise InputError("author", "every write needs the reviewer's name")
    return name[:200]


def active_labels(store: Store) -> set[str]:
    """Labels a reviewer may pick now (the latest row of each label is not retired)."""
    rows = store.query(
        "SELECT label FROM (SELECT label, retired, row_number() OVER (PARTITION BY label ORDER BY id DESC) AS r"
        " FROM label_vocabulary) WHERE r = 1 AND NOT retired"
    )
    return {label for (label,) in rows}


def annotate(
    store: Store,
    target: str,
    author: str,
    *,
    run: str | None = None,
    task_id: int | None = None,
    episode: str | None = None,
    step_idx: int | None = None,
    event_seq: int | None = None,
    label: str | None = None,
    note: str | None = None,
) -> int:
    """Append one label/note row for a run, task, step or network event; returns its id."""
    if target not in LABEL_TARGETS:
        raise InputError("target", f"{target!r} is not one of {', '.join(LABEL_TARGETS)}")
    row = {"run": run, "task_id": task_id, "episode": episode, "step_idx": step_idx, "event_seq": event_seq}
    missing = [k for k in TARGET_KEYS[target] if row[k] is None]
    if missing:
        raise InputError("target", f"a {target} annotation needs {', '.join(missing)}")
    # Only the target's own key is stored, so "latest per target" never mixes targets.
    row = {k: (v if k in TARGET_KEYS[target] else None) for k, v in row.items()}
    label = (label or "").strip() or None
    note = (note or "").strip() or None
    if (
        label is not None
        and label not in active_labels(store)
        and label != _current_label(store, target, row)
    ):
        # A retired label stays on the targets that carry it (a note can still be edited beside it).
        raise InputError("label", f"{label!r} is not in the label vocabulary (add it there first)")
    if note is not None and len(note) > MAX_NOTE:
        raise InputError("note", f"longer than {MAX_NOTE} characters")
    return _insert(store, {**row, "target": target, "label": label, "note": note, "author": _author(author)})


def _current_label(store: Store, target: str, row: dict) -> str | None:
    keys = TARGET_KEYS[target]
    found = store.query(
        f"SELECT label FROM annotations WHERE target = ? AND {' AND '.join(f'{k} = ?' for k in keys)}"
        " ORDER BY id DESC LIMIT 1",
        [target, *(row[k] for k in keys)],
    )
    return found[0][0] if found else None


@dataclass(frozen=True)
class PairMark:
    """The reviewer's mark on one judged gold/agent pair, with the judge's answer as it was shown."""

    run: str
    task_id: int
    episode: str
    gold_set: str
    gold_version: int
    alternative: int
    gold_idx: int
    step_idx: int
    judge_config: str
    judge_verdict: bool | None  # None: the judge could not answer this pair
    judge_stage: str | None
    judge_score: float | None
    mark: str | None  # right | wrong | None (clears an earlier mark)


def mark_pairs(store: Store, marks: list[PairMark], author: str) -> int:
    """Append the marks in one transaction; returns how many rows were written."""
    name = _author(author)
    for m in marks:
        if m.mark is not None and m.mark not in MARKS:
            raise InputError("mark", f"{m.mark!r} is not one of {', '.join(MARKS)}")
    now = utcnow()
    rows = [
        {
            "run": m.run, "task_id": m.task_id, "episode": m.episode, "step_idx": m.step_idx,
            "gold_set": m.gold_set, "gold_version": m.gold_version, "alternative": m.alternative,
            "gold_idx": m.gold_idx, "judge_config": m.judge_config, "judge_verdict": m.judge_verdict,
            "judge_stage": m.judge_stage, "judge_score": m.judge_score, "target": "judgment",
            "label": m.mark, "author": name, "created_at": now,
        }
        for m in marks
    ]  # fmt: skip
    if not rows:
        return 0
    with store.transaction() as cur:
        return insert_rows(cur, "annotations", rows)


def decide_cause(
    store: Store, run: str, task_id: int, cause: str, decision: str, author: str, *, label: str | None = None
) -> int:
    """The reviewer's decision on a suggested cause of a failed task, in one transaction: a `diagnosis`
    row (label `accepted` or `rejected`, note the cause code) and, when accepted, the task's label
    `label` — the vocabulary label the cause becomes (`core.diagnose.taxonomy.CAUSE_LABEL`, passed by the
    caller: review and diagnose share a rank), keeping the task's note. Returns the diagnosis row's id."""
    if decision not in DECISIONS:
        raise InputError("decision", f"{decision!r} is not one of {', '.join(DECISIONS)}")
    if cause not in CAUSES or cause == "undecided":  # names no cause to accept or reject
        raise InputError("cause", f"{cause!r} is not a failure cause")
    name = _author(author)
    label = (label or "").strip() or None
    if decision == "accepted" and label is None:
        raise InputError("label", "accepting a cause needs the reviewer label it becomes")
    if label is not None and label not in active_labels(store):
        raise InputError("label", f"{label!r} is not in the label vocabulary (add it there first)")
    found = store.query(
        "SELECT 1 FROM failure_causes WHERE run = ? AND task_id = ? AND cause = ?", [run, task_id, cause]
    )
    if not found:
        raise NotFound("suggested cause", cause, where=f"for task {task_id} of run {run!r}")
    now = utcnow()
    with store.transaction() as cur:
        decided = cur.execute(
            "INSERT INTO annotations (run, task_id, target, label, note, author, created_at)"
            " VALUES (?, ?, 'diagnosis', ?, ?, ?, ?) RETURNING id",
            [run, task_id, decision, cause, name, now],
        ).fetchone()
        if decision == "accepted":
            note = cur.execute(
                "SELECT note FROM annotations WHERE target = 'task' AND run = ? AND task_id = ?"
                " ORDER BY id DESC LIMIT 1",
                [run, task_id],
            ).fetchone()
            cur.execute(
                "INSERT INTO annotations (run, task_id, target, label, note, author, created_at)"
                " VALUES (?, ?, 'task', ?, ?, ?, ?)",
                [run, task_id, label, note[0] if note else None, name, now],
            )
    return int(decided[0])


def _insert(store: Store, row: dict) -> int:
    with store.transaction() as cur:
        cols = [*row, "created_at"]
        placeholders = ", ".join("?" for _ in cols)
        found = cur.execute(
            f"INSERT INTO annotations ({', '.join(cols)}) VALUES ({placeholders}) RETURNING id",
            [*row.values(), utcnow()],
        ).fetchone()
    return int(found[0])


def add_label(store: Store, label: str, author: str, description: str | None = None) -> str:
    """Add a label to the vocabulary (or bring a retired one back, or change its description)."""
    return _vocabulary_row(store, label, author, description, retired=False)


def retire_label(store: Store, label: str, author: str) -> str:
    """Take a label off the pick list; annotations that carry it keep it and still count."""
    if label not in active_labels(store):
        raise InputError("label", f"{label!r} is not an active label")
    return _vocabulary_row(store, label, author, None, retired=True)


def _vocabulary_row(store: Store, label: str, author: str, description: str | None, *, retired: bool) -> str:
    label = " ".join((label or "").split())
    if not label:
        raise InputError("label", "a label needs a name")
    if "," in label:  # Triage joins a task's labels with commas
        raise InputError("label", "a label cannot contain a comma")
    if len(label) > MAX_LABEL:
        raise InputError("label", f"longer than {MAX_LABEL} characters (put the detail in the description)")
    name = _author(author)
    with store.transaction() as cur:
        if description is None:  # keep the description the label had
            found = cur.execute(
                "SELECT description FROM label_vocabulary WHERE label = ? ORDER BY id DESC LIMIT 1", [label]
            ).fetchone()
            description = found[0] if found else None
        cur.execute(
            "INSERT INTO label_vocabulary (label, description, retired, author, created_at) VALUES (?, ?, ?, ?, ?)",
            [label, (description or "").strip() or None, retired, name, utcnow()],
        )
    return label
