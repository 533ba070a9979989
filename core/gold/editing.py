"""Editing human gold: save a new version against the version the reviewer started from, history, diff,
restore, a draft from an agent trajectory, new gold sets, and which stored metrics an edit made stale.

Nothing is ever overwritten: every save inserts a whole new version (highest + 1) of the task's gold in
one short transaction. A save names the version it was based on; if someone saved in between, it is
refused with a `GoldConflict` saying who saved which version when, so the caller keeps the draft on
screen and the reviewer merges by hand — never a silent overwrite (docs/reviewers.md).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.errors import Conflict, InputError, NotFound
from core.gold.versions import GoldStep
from core.measure.action_grammar.webarena import gold_value, parse_gold_step
from core.store import Store, insert_rows, utcnow
from core.values import normalise_text

# A step as the editor hands it over: its text, or a mapping/GoldStep with text and flags.
StepLike = str | Mapping[str, Any] | GoldStep


class GoldConflict(Conflict):
    """A save based on a version that is no longer the current one (someone saved in between)."""

    def __init__(self, gold_set: str, task_id: int, based_on: int | None, current: dict[str, Any]):
        self.gold_set, self.task_id, self.based_on = gold_set, task_id, based_on
        self.version = current["version"]
        self.author = current["author"]
        self.created_at = current["created_at"]
        self.note = current["note"]
        when = self.created_at.strftime("%Y-%m-%d %H:%M:%S UTC") if self.created_at else "an unknown time"
        started = f"version {based_on}" if based_on else "no gold"
        reason = f" ({self.note})" if self.note else ""
        super().__init__(
            f"Not saved: {self.author or 'someone'} saved version {self.version} of task {task_id} in "
            f"{gold_set} at {when}{reason} after you started from {started}; your draft is kept — "
            "merge it with the current version and save again."
        )


@dataclass(frozen=True)
class EditStep:
    text: str
    flags: tuple[str, ...] = ()


def _clean_step(step: StepLike) -> EditStep | None:
    if isinstance(step, GoldStep):
        text, flags = step.text, step.flags
    elif isinstance(step, Mapping):
        text, flags = step.get("text"), step.get("flags") or ()
        if isinstance(flags, str):
            flags = [f for f in flags.replace(";", ",").split(",")]
    else:
        text, flags = step, ()
    text = normalise_text(str(text)) if text is not None else ""
    if not text:
        return None
    clean_flags = tuple(dict.fromkeys(f.strip().lower() for f in flags if f and str(f).strip()))
    return EditStep(text, clean_flags)


def clean_alternatives(alternatives: Sequence[Sequence[StepLike]]) -> list[list[EditStep]]:
    """Whitespace-normalised steps; empty steps and empty alternatives dropped (the grid's blank rows)."""
    out = [[s for s in (_clean_step(x) for x in alt) if s is not None] for alt in alternatives]
    return [alt for alt in out if alt]


def _latest(cur, gold_set: str, task_id: int) -> dict[str, Any] | None:
    rows = cur.execute(
        "SELECT version, any_value(author), min(created_at), any_value(note) FROM gold_steps"
        " WHERE gold_set = ? AND task_id = ? GROUP BY version ORDER BY version DESC LIMIT 1",
        [gold_set, task_id],
    ).fetchall()
    if not rows:
        return None
    version, author, created_at, note = rows[0]
    return {"version": version, "author": author, "created_at": created_at, "note": note}


def save_gold(
    store: Store,
    gold_set: str,
    task_id: int,
    alternatives: Sequence[Sequence[StepLike]],
    author: str | None,
    reason: str | None,
    based_on_version: int | None,
) -> int:
    """Write the task's gold as a new version and return its number.

    `based_on_version` is the version the reviewer edited (None or 0: the task had no gold). If the
    task's current version differs, nothing is written and `GoldConflict` says who saved what when.
    """
    where = f"{gold_set}/{task_id}"
    cleaned = clean_alternatives(alternatives)
    if not cleaned:
        raise InputError(where, "a gold version needs at least one non-empty step")
    if not author or not author.strip():
        raise InputError(where, "a gold edit needs the reviewer's name")
    if not reason or not reason.strip():
        raise InputError(where, "a gold edit needs a short reason")
    now = utcnow()
    with store.transaction() as cur:
        if not cur.execute("SELECT 1 FROM gold_sets WHERE name = ?", [gold_set]).fetchall():
            raise NotFound("gold set", gold_set)
        latest = _latest(cur, gold_set, task_id)
        current = latest["version"] if latest else 0
        if (based_on_version or 0) != current:
            raise GoldConflict(gold_set, task_id, based_on_version, latest or {"version": 0, "author": None,
                                                                               "created_at": None, "note": None})  # fmt: skip
        version = current + 1
        rows = []
        for alternative, steps in enumerate(cleaned):
            for idx, step in enumerate(steps):
                parsed = parse_gold_step(step.text)
                rows.append(
                    {
                        "gold_set": gold_set, "version": version, "task_id": int(task_id),
                        "alternative": alternative, "idx": idx, "text": step.text, "verb": parsed.verb,
                        "element_label": parsed.element_label, "value": gold_value(parsed), "source_row": None,
                        "flags": list(step.flags), "author": author.strip(), "created_at": now,
                        "note": reason.strip(),
                    }
                )  # fmt: skip
        insert_rows(cur, "gold_steps", rows)
    return version


# -- reading versions --------------------------------------------------------------------------------
NO_AUTHOR = "not recorded"


def history(store: Store, gold_set: str, task_id: int) -> list[dict[str, Any]]:
    """Every version of the task's gold, newest first: version, author, created_at, reason, sizes. An
    imported version without an author of its own names the set's owner (`import gold --author`, `gold
    new-set --author`); with neither, the author reads NO_AUTHOR — never blank."""
    return store.query_dicts(
        "SELECT g.version, coalesce(any_value(g.author), any_value(s.author), ?) AS author,"
        " min(g.created_at) AS created_at, any_value(g.note) AS reason,"
        " count(DISTINCT g.alternative) AS alternatives, count(*) AS steps"
        " FROM gold_steps g LEFT JOIN gold_sets s ON s.name = g.gold_set"
        " WHERE g.gold_set = ? AND g.task_id = ? GROUP BY g.version ORDER BY g.version DESC",
        [NO_AUTHOR, gold_set, task_id],
    )


def version_content(store: Store, gold_set: str, task_id: int, version: int) -> list[list[EditStep]]:
    """The alternatives of one version, each a list of steps (text and flags) in order."""
    alternatives: dict[int, list[EditStep]] = {}
    for alternative, text, flags in store.query(
        "SELECT alternative, text, flags FROM gold_steps WHERE gold_set = ? AND task_id = ? AND version = ?"
        " ORDER BY alternative, idx",
        [gold_set, task_id, version],
    ):
        alternatives.setdefault(alternative, []).append(EditStep(text, tuple(flags or ())))
    return [alternatives[a] for a in sorted(alternatives)]


def diff_versions(store: Store, gold_set: str, task_id: int, old: int, new: int) -> list[dict[str, Any]]:
    """Step-level diff of two versions, per alternative (see `diff_alternatives`)."""
    return diff_alternatives(
        version_content(store, gold_set, task_id, old), version_content(store, gold_set, task_id, new)
    )


def diff_alternatives(old: Sequence[Sequence[EditStep]], new: Sequence[Sequence[EditStep]]) -> list[dict]:
    """One row per step of either side: kind is same, changed, added, removed or moved; old/new index
    (1-based) and text side by side. Alternatives are compared by position. A removed step whose text
    is added elsewhere in the same alternative is a move, not a removal and an addition."""
    rows: list[dict[str, Any]] = []
    for alt in range(max(len(old), len(new))):
        a = list(old[alt]) if alt < len(old) else []
        b = list(new[alt]) if alt < len(new) else []
        pairs: list[tuple[str, int | None, int | None]] = []
        matcher = difflib.SequenceMatcher(a=[s.text for s in a], b=[s.text for s in b], autojunk=False)
        for op, i1, i2, j1, j2 in matcher.get_opcodes():
            if op == "equal":
                pairs += [("same" if a[i1 + k].flags == b[j1 + k].flags else "changed", i1 + k, j1 + k)
                          for k in range(i2 - i1)]  # fmt: skip
            else:
                pairs += _pair_replaced(a, b, range(i1, i2), range(j1, j2))
        alt_rows = [_diff_row(alt, kind, a, b, i, j) for kind, i, j in pairs]
        _pair_moves(alt_rows)
        rows.extend(alt_rows)
    return rows


def _pair_replaced(a: list[EditStep], b: list[EditStep], old: range, new: range) -> list[tuple]:
    """Inside a replaced block, a step is "changed" when it resembles a step on the other side (in
    order); the rest are removed or added. Plain positional pairing would call a deleted step the
    change of its neighbour."""
    out: list[tuple[str, int | None, int | None]] = []
    j = new.start
    for i in old:
        best = next((k for k in range(j, new.stop)
                     if difflib.SequenceMatcher(a=a[i].text, b=b[k].text).ratio() >= 0.6), None)  # fmt: skip
        if best is None:
            out.append(("removed", i, None))
            continue
        out += [("added", None, k) for k in range(j, best)]
        out.append(("changed", i, best))
        j = best + 1
    out += [("added", None, k) for k in range(j, new.stop)]
    return out


def _diff_row(
    alt: int, kind: str, a: list[EditStep], b: list[EditStep], i: int | None, j: int | None
) -> dict:
    return {
        "alternative": alt + 1, "kind": kind,
        "old_idx": None if i is None else i + 1, "old_text": None if i is None else a[i].text,
        "new_idx": None if j is None else j + 1, "new_text": None if j is None else b[j].text,
        "old_flags": None if i is None else ", ".join(a[i].flags),
        "new_flags": None if j is None else ", ".join(b[j].flags),
    }  # fmt: skip


def _pair_moves(rows: list[dict[str, Any]]) -> None:
    """Turn a removed step and an added step with the same text into one moved row."""
    added = {}
    for r in rows:
        if r["kind"] == "added":
            added.setdefault(r["new_text"], []).append(r)
    for r in rows:
        if r["kind"] == "removed" and added.get(r["old_text"]):
            twin = added[r["old_text"]].pop(0)
            r.update(
                kind="moved", new_idx=twin["new_idx"], new_text=twin["new_text"], new_flags=twin["new_flags"]
            )
            rows.remove(twin)


def restore(
    store: Store, gold_set: str, task_id: int, version: int, author: str | None, based_on_version: int | None
) -> int:
    """Write the content of an old version as a new version (the history keeps both). A version whose
    content is the current one's is not written again: InputError says so (nothing would change, and a
    new version would only mark every run's metrics of the task stale)."""
    content = version_content(store, gold_set, task_id, version)
    if not content:
        raise InputError(f"{gold_set}/{task_id}", f"no version {version}")
    latest = history(store, gold_set, task_id)[0]["version"]
    if based_on_version == latest and content == version_content(store, gold_set, task_id, latest):
        raise InputError(
            f"{gold_set}/{task_id}",
            f"version {version} is the same as the current version {latest}: nothing to restore",
        )
    steps = [[{"text": s.text, "flags": list(s.flags)} for s in alt] for alt in content]
    return save_gold(store, gold_set, task_id, steps, author, f"restore version {version}", based_on_version)


def draft_from_trajectory(store: Store, run: str, task_id: int, episode: str) -> list[str]:
    """The readable executed actions of an episode, in order: a starting point for a gold to edit
    (observe-only calls such as screenshots are no gold steps)."""
    from core.measure.metrics_run import step_text

    rows = store.query_dicts(
        "SELECT * FROM steps WHERE run = ? AND task_id = ? AND episode = ? AND executed_action IS NOT NULL"
        " AND coalesce(kind, 'action') = 'action' ORDER BY idx",
        [run, task_id, episode],
    )
    return [text for text in (normalise_text(step_text(r)) for r in rows) if text]


# -- gold sets ---------------------------------------------------------------------------------------
def gold_set_names(store: Store) -> list[str]:
    return [name for (name,) in store.query("SELECT name FROM gold_sets ORDER BY created_at, name")]


def create_gold_set(store: Store, name: str, author: str | None, description: str | None = None) -> str:
    """A new, empty gold set for writing gold of tasks that have none; refused if the name is taken."""
    name = (name or "").strip()
    if not name:
        raise InputError("gold set", "needs a name")
    if not author or not author.strip():
        raise InputError(name, "a new gold set needs the reviewer's name")
    with store.transaction() as cur:
        if cur.execute("SELECT 1 FROM gold_sets WHERE name = ?", [name]).fetchall():
            raise InputError(name, "a gold set of that name already exists")
        cur.execute(
            "INSERT INTO gold_sets (name, source_path, source_checksum, author, description, created_at)"
            " VALUES (?, NULL, NULL, ?, ?, ?)",
            [name, author.strip(), description or "written in the dashboard", utcnow()],
        )
    return name


# -- stale metrics -----------------------------------------------------------------------------------
def stale_metrics(store: Store, task_id: int, gold_set: str) -> list[dict[str, Any]]:
    """Stored metrics rows of the task for this gold set computed against an older gold version than
    the current one (metrics.gold_version records the version each row used)."""
    return store.query_dicts(
        "SELECT m.run, m.judge_config, m.preset, m.gold_version, c.version AS current_version, m.computed_at"
        " FROM metrics m JOIN (SELECT max(version) AS version FROM gold_steps WHERE gold_set = $g AND task_id = $t) c"
        "   ON c.version IS NOT NULL"
        " WHERE m.task_id = $t AND m.gold_set = $g AND coalesce(m.gold_version, 0) < c.version"
        " ORDER BY m.run, m.judge_config, m.preset",
        {"g": gold_set, "t": int(task_id)},
    )


def recompute_stale(store: Store, task_id: int, gold_set: str) -> int:
    """Recompute, with the offline judge, every run's metrics of the task that are stale for this gold
    set; returns how many (run, preset) were recomputed. Stale rows of another judge (an LLM run) stay
    stale until `trajreview metrics` recomputes them with that judge: this button never calls a model."""
    from core.measure.metrics_run import run_task_metrics

    runs = sorted({(r["run"], r["preset"]) for r in stale_metrics(store, task_id, gold_set)})
    for run, preset in runs:
        run_task_metrics(store, run, task_id, gold_set, preset)
    return len(runs)
