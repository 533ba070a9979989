"""The Gold tab: edit the task's current gold in a grid and save it as a new version with a reason;
history, diff and restore are in gold_history.py.

The reviewer's draft lives in session state, keyed by run, task, gold set and alternative, so it
survives reruns, alternative switches and a refused save: a save based on an older version than the
current one is refused by core (GoldConflict: who saved what when) and the draft stays on screen to
merge. Nothing here writes except through `db.write`; a read-only instance shows no write control.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from core.gold import editing as ge
from core.queries.task import gold_sets_with_task
from core.values import is_missing
from dashboard import identity, state
from dashboard.components import gold_history
from dashboard.components.tables import show_table
from dashboard.db import read, read_only, write
from dashboard.text import escape_md

COLUMNS = ("order", "text", "flags")


def steps_frame(steps: list[ge.EditStep]) -> pd.DataFrame:
    """The grid of one alternative: order (the step's position, read-only: ▲/▼ move a step), text, flags."""
    frame = pd.DataFrame(
        {"order": [float(i + 1) for i in range(len(steps))], "text": [s.text for s in steps],
         "flags": [", ".join(s.flags) for s in steps]},
        columns=list(COLUMNS),
    )  # fmt: skip
    # Explicit types: an empty grid (a task without gold) would otherwise be float, not editable as text.
    return frame.astype({"order": "float64", "text": "string", "flags": "string"})


def frame_steps(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """The grid back to steps, sorted by the order column (rows without an order go last, in place)."""
    if frame is None or frame.empty:
        return []
    f = frame.reset_index(drop=True).assign(_pos=range(len(frame)))
    f = f.sort_values(["order", "_pos"], na_position="last", kind="stable")
    out = []
    for text, flags in zip(f["text"], f["flags"], strict=True):
        text = "" if is_missing(text) else str(text)
        flags = "" if is_missing(flags) else str(flags)
        out.append({"text": text, "flags": [x for x in flags.split(",") if x.strip()]})
    return out


class Draft:
    """The reviewer's draft of one (run, task, gold set) in session state."""

    def __init__(self, run: str, task_id: int, gold_set: str):
        self.prefix = f"gold:{run}:{task_id}:{gold_set}"

    def _get(self, name: str, default: Any = None) -> Any:
        return st.session_state.get(f"{self.prefix}:{name}", default)

    def _set(self, name: str, value: Any) -> None:
        st.session_state[f"{self.prefix}:{name}"] = value

    @property
    def exists(self) -> bool:
        return self._get("base") is not None

    @property
    def base(self) -> int:
        return self._get("base", 0)

    def start(self, base: int, alternatives: list[pd.DataFrame]) -> None:
        self._set("base", base)
        self._set("alts", [a.copy() for a in alternatives] or [steps_frame([])])
        for key in [k for k in st.session_state if str(k).startswith(f"{self.prefix}:edited:")]:
            del st.session_state[key]
        self._set("nonce", self._get("nonce", 0) + 1)
        self._set("started_as", ge.clean_alternatives(self.alternatives()))

    @property
    def untouched(self) -> bool:
        """Nothing edited since the draft was loaded (a newer version can simply replace it)."""
        return ge.clean_alternatives(self.alternatives()) == self._get("started_as")

    def rebase(self, version: int) -> None:
        """The reviewer merged by hand: the draft is now based on `version`."""
        self._set("base", version)

    @property
    def n_alternatives(self) -> int:
        return len(self._get("alts", []))

    def grid_key(self, alt: int) -> str:
        return f"{self.prefix}:grid:{alt}:{self._get('nonce', 0)}"

    def original(self, alt: int) -> pd.DataFrame:
        return self._get("alts")[alt]

    def edited(self, alt: int) -> pd.DataFrame:
        return self._get(f"edited:{alt}", self.original(alt))

    def keep(self, alt: int, frame: pd.DataFrame) -> None:
        self._set(f"edited:{alt}", frame)

    def revive(self, alt: int) -> None:
        """A run that did not draw the grid (a read failed, the page stopped on an error) dropped the
        grid's widget state: the edits kept from it become its data, so the draft is never lost."""
        if self.grid_key(alt) not in st.session_state and self._get(f"edited:{alt}") is not None:
            self._set("alts", [self.edited(a) for a in range(self.n_alternatives)])
            self._set("nonce", self._get("nonce", 0) + 1)

    def show(self, alt: int) -> None:
        """Switching alternatives: the grid of the hidden one is gone, so its edits become its data."""
        if self._get("shown") != alt:
            if self._get("shown") is not None:
                self._set("alts", [self.edited(a) for a in range(self.n_alternatives)])
                self._set("nonce", self._get("nonce", 0) + 1)
            self._set("shown", alt)

    def add_alternative(self, frame: pd.DataFrame) -> int:
        self._set("alts", [self.edited(a) for a in range(self.n_alternatives)] + [frame])
        self._set("nonce", self._get("nonce", 0) + 1)
        self._set("shown", None)
        return self.n_alternatives - 1

    def alternatives(self) -> list[list[dict[str, Any]]]:
        return [frame_steps(self.edited(a)) for a in range(self.n_alternatives)]

    def move(self, alt: int, position: int, delta: int) -> None:
        """Swap the step at `position` (0-based, in the grid's order) with its neighbour `delta` away; the
        grid is rebuilt from the draft with the steps renumbered."""
        frame = self.edited(alt).reset_index(drop=True)
        target = position + delta
        if not (0 <= position < len(frame) and 0 <= target < len(frame)):
            return
        order = list(range(len(frame)))
        order[position], order[target] = order[target], order[position]
        moved = frame.iloc[order].reset_index(drop=True)
        moved["order"] = [float(i + 1) for i in range(len(moved))]
        alternatives = [self.edited(a) for a in range(self.n_alternatives)]
        alternatives[alt] = moved.astype({"order": "float64"})
        self._set("alts", alternatives)
        for key in [k for k in st.session_state if str(k).startswith(f"{self.prefix}:edited:")]:
            del st.session_state[key]
        self._set("nonce", self._get("nonce", 0) + 1)
        st.session_state[f"{self.prefix}:move:{alt}"] = target + 1  # the picker follows the moved step


def _content_frames(content: list[list[ge.EditStep]]) -> list[pd.DataFrame]:
    return [steps_frame(alt) for alt in content]


def _pick_gold_set(task_id: int) -> str | None:
    names = read(ge.gold_set_names) or []
    if not names:
        return None
    with_task = read(gold_sets_with_task, task_id) or []
    default = with_task[0] if with_task else names[0]
    chosen = state.url_selectbox(
        st, "Gold set", names, "goldset", default=default,
        format_func=lambda n: n + ("" if n in with_task else " (no gold for this task yet)"),
    )  # fmt: skip
    return chosen or default


def _new_gold_set(name: str | None) -> None:
    with st.form("new-gold-set", clear_on_submit=False, border=False):
        new = st.text_input("Name of a new gold set", key="new-gold-set-name", placeholder="e.g. team-gold")
        if st.form_submit_button("Create gold set", disabled=name is None):
            created = write(ge.create_gold_set, new, name)
            if created is not None:
                state.set_param("goldset", created)
                st.rerun()
    if name is None:
        st.caption("Give your name in *Your name* at the top of this tab to create a gold set.")


def _stale_banner(task_id: int, gold_set: str) -> None:
    stale = read(ge.stale_metrics, task_id, gold_set) or []
    if not stale:
        return
    runs = sorted({r["run"] for r in stale})
    current = stale[0]["current_version"]
    used = sorted({r["gold_version"] for r in stale if r["gold_version"] is not None})
    cols = st.columns([5, 2])
    cols[0].warning(
        f"Stale metrics: {len(stale)} stored metrics row(s) of this task ({len(runs)} run(s): "
        f"{escape_md(', '.join(runs), 200)}) were computed against gold version(s) "
        f"{', '.join(map(str, used)) or 'none'}; the current version is {current}.",
        icon=":material/update:",
    )
    if not read_only() and cols[1].button("Recompute (offline judge)", key=f"recompute:{task_id}:{gold_set}"):
        with st.spinner("Recomputing this task's metrics with the offline judge…"):
            done = write(ge.recompute_stale, task_id, gold_set)
        if done is not None:
            st.toast(f"Recomputed the metrics of {done} run(s).")
            st.rerun()


def _current(gold_set: str, task_id: int) -> tuple[list[dict], list[list[ge.EditStep]]] | None:
    versions = read(ge.history, gold_set, task_id)
    if versions is None:
        return None
    content = read(ge.version_content, gold_set, task_id, versions[0]["version"]) if versions else []
    return (versions, content) if content is not None else None


def render(run: str, task_id: int, episode: str | None) -> None:
    writable = not read_only()
    name = identity.ask_reviewer_name() if writable else None
    gold_set = _pick_gold_set(task_id)
    if gold_set is None:
        st.info("No gold set in this database yet: import one (`trajreview import gold`) or create one here.")
        if writable:
            _new_gold_set(name)
        return
    loaded = _current(gold_set, task_id)
    if loaded is None:  # a one-line error is already on the page (e.g. the file is busy)
        return
    versions, content = loaded
    current = versions[0] if versions else None
    current_version = current["version"] if current else 0
    _stale_banner(task_id, gold_set)
    if current:
        st.caption(
            f"Current: version {current_version} by {escape_md(current['author'], 80)} at "
            f"{current['created_at']:%Y-%m-%d %H:%M} UTC — {escape_md(current['reason'] or '', 200)}"
        )
    else:
        st.caption(f"Task {task_id} has no gold in {escape_md(gold_set, 80)} yet.")

    if writable:
        _editor(run, task_id, episode, gold_set, name, current_version, content)
    else:
        for alt, steps in enumerate(content):
            st.caption(f"Alternative {alt + 1}")
            show_table(
                steps_frame(steps), hide_index=True, width="stretch",
                column_config={"order": st.column_config.NumberColumn("#", format="%d", width="small"),
                               "text": st.column_config.TextColumn("step", width="large")},
            )  # fmt: skip
    gold_history.render(run, task_id, gold_set, versions, current_version, name if writable else None)
    if writable:
        with st.expander("New gold set"):
            _new_gold_set(name)


def _editor(
    run: str, task_id: int, episode: str | None, gold_set: str, name: str | None, current_version: int,
    content: list[list[ge.EditStep]],
) -> None:  # fmt: skip
    draft = Draft(run, task_id, gold_set)
    if not draft.exists:
        draft.start(current_version, _content_frames(content))
    if draft.base != current_version and draft.untouched:  # someone saved; nothing of ours to keep
        draft.start(current_version, _content_frames(content))
    if draft.base != current_version:
        _behind(draft, current_version, content)

    n = draft.n_alternatives
    cols = st.columns([3, 2, 2], vertical_alignment="bottom")
    alt = state.url_selectbox(
        cols[0], "Alternative", list(range(n)), "galt", default=0,
        format_func=lambda a: f"alternative {a + 1} of {n}",
    )  # fmt: skip
    alt = alt if alt is not None and alt < n else 0
    if cols[1].button("Add an alternative", key="gold-add-alt", icon=":material/add:"):
        new = draft.add_alternative(steps_frame([]))
        state.set_param("galt", new)
        st.rerun()
    if episode and cols[2].button(
        "Start from this agent trajectory", key="gold-from-agent", icon=":material/smart_toy:",
        help=f"The readable steps of attempt {episode} become a draft alternative to edit",
    ):  # fmt: skip
        steps = read(ge.draft_from_trajectory, run, task_id, episode)
        if steps:
            frame = steps_frame([ge.EditStep(t) for t in steps])
            new = draft.add_alternative(frame) if content else 0
            if not content:
                draft.start(draft.base, [frame])
            state.set_param("galt", new)
            st.rerun()
        elif steps is not None:
            st.warning("This attempt has no executed step to start from.")
    draft.show(alt)
    draft.revive(alt)
    # The step text is the cell a reviewer edits; the position is read-only (an edit can never land in it)
    # and changes only through ▲/▼ below.
    edited = st.data_editor(
        draft.original(alt), key=draft.grid_key(alt), num_rows="dynamic", hide_index=True, width="stretch",
        column_order=COLUMNS,
        column_config={
            "order": st.column_config.NumberColumn("#", help="The step's position: move it with ▲/▼ below the grid",
                                                   width="small", format="%d", disabled=True),
            "text": st.column_config.TextColumn("step", width="large", required=True),
            "flags": st.column_config.TextColumn("flags", help="Comma-separated marks, e.g. pink, check", width="small"),
        },
    )  # fmt: skip
    draft.keep(alt, edited)
    _move_controls(draft, alt, len(edited))
    _save(draft, gold_set, task_id, name, current_version, content)


def _move_controls(draft: Draft, alt: int, n_rows: int) -> None:
    """Pick a step by its position and move it up or down one place."""
    if n_rows < 2:
        return
    cols = st.columns([2, 1, 1, 4], vertical_alignment="bottom")
    picked = cols[0].selectbox("Move step", list(range(1, n_rows + 1)), key=f"{draft.prefix}:move:{alt}",
                               format_func=lambda i: f"step {i}")  # fmt: skip
    position = (picked or 1) - 1
    cols[1].button(
        "▲ up", key="gold-move-up", disabled=position == 0, on_click=draft.move, args=(alt, position, -1)
    )
    cols[2].button("▼ down", key="gold-move-down", disabled=position >= n_rows - 1,
                   on_click=draft.move, args=(alt, position, 1))  # fmt: skip


def _behind(draft: Draft, current_version: int, content: list[list[ge.EditStep]]) -> None:
    st.warning(
        f"Your draft started from version {draft.base or 'none'}; version {current_version} has been saved "
        "since. Compare below, merge what you need into your draft, then mark it as based on the current "
        "version to save.",
        icon=":material/merge:",
    )
    mine = ge.clean_alternatives(draft.alternatives())
    rows = ge.diff_alternatives(content, mine)
    changed = [r for r in rows if r["kind"] != "same"]
    if changed:
        st.caption(f"Current version {current_version} (left) against your draft (right)")
        gold_history.show_diff(changed)
    cols = st.columns(2)
    if cols[0].button(f"My draft is merged: base it on version {current_version}", key="gold-rebase"):
        draft.rebase(current_version)
        st.rerun()
    if cols[1].button("Discard my draft, load the current version", key="gold-discard-behind"):
        draft.start(current_version, _content_frames(content))
        st.rerun()


def _save(
    draft: Draft, gold_set: str, task_id: int, name: str | None, current_version: int,
    content: list[list[ge.EditStep]],
) -> None:  # fmt: skip
    mine = ge.clean_alternatives(draft.alternatives())
    dirty = mine != [list(alt) for alt in content]
    cols = st.columns([5, 1.4, 1.4], vertical_alignment="bottom")
    # Keyed by the number of saves: after a save the field starts empty; a refused save keeps it, and so
    # does a run that did not draw it (the text is kept beside the widget, whose state such a run drops).
    saves_key = f"{draft.prefix}:saves"
    reason_key = f"{draft.prefix}:reason:{st.session_state.get(saves_key, 0)}"
    kept = {} if reason_key in st.session_state else {"value": st.session_state.get(f"{reason_key}:kept", "")}
    reason = cols[0].text_input(
        "Reason for this edit (saved with the version)", key=reason_key, placeholder="e.g. step 3 clicked the wrong tab",
        **kept,
    )  # fmt: skip
    st.session_state[f"{reason_key}:kept"] = reason
    missing = (
        "your name (Your name, top of this tab)" if not name else ("a reason" if not reason.strip() else None)
    )
    clicked = cols[1].button(
        "Save new version", key="gold-save", type="primary", icon=":material/save:",
        disabled=missing is not None or not dirty,
        help="Nothing changed" if not dirty else (f"Needs {missing}" if missing else "Writes a new version; older ones stay"),
    )  # fmt: skip
    if cols[2].button("Discard draft", key="gold-discard", disabled=not dirty):
        draft.start(current_version, _content_frames(content))
        st.rerun()
    if dirty:
        st.caption(":material/edit: Unsaved changes in your draft.")
    if clicked:
        version = write(ge.save_gold, gold_set, task_id, draft.alternatives(), name, reason, draft.base)
        if version is not None:  # else: one line is on the page and the draft stays as it is
            draft.start(version, [steps_frame(alt) for alt in mine])
            st.session_state[saves_key] = st.session_state.get(saves_key, 0) + 1
            st.toast(f"Saved version {version} of task {task_id}.")
            st.rerun()
