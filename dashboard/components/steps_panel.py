"""The Steps tab: a filmstrip of the visible steps' screenshots, then the chosen step in full. Large
observations (AXTree, HTML, LLM chat, a tool call's raw transcript text) load only when the reviewer
asks for one. Observe-only steps (a tool-using agent's screenshots and waits) are marked as such."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from core.files import thumbnails
from core.queries import evidence as ev
from core.queries import task as q
from core.values import is_missing
from dashboard import state
from dashboard.components import labels_panel, step_pages
from dashboard.components.tables import show_table
from dashboard.db import db_path, read, read_files

FILMSTRIP = 6  # screenshots loaded around the current step; the others are never read
# One size for the filmstrip and the chosen step: each screenshot is decoded once (a 1500-px PNG costs
# ~45 ms to decode, the rest ~5 ms), the chosen step's image is its filmstrip image, and the browser
# scales the thumbnails down.
STEP_WIDTH = 800
OBSERVATION_LABELS = {"axtree": "AXTree", "html": "HTML", "chat": "LLM chat"}
OBSERVE_NOTE = (
    "Observe-only call (a screenshot, a tab list, a wait, or one of the agent's own tools): shown here, "
    "not counted in the step metrics."
)


def _set_step(value: int) -> None:
    state.set_widget("step", value)


def _text_block(label: str, text: Any) -> None:
    if is_missing(text) or str(text).strip() == "":
        return
    st.caption(label)
    st.text(str(text))


def _outcome(row: pd.Series) -> None:
    """What the tool returned; a screenshot it carried is named, not stored."""
    text = "" if is_missing(row["outcome"]) else str(row["outcome"])
    image = not is_missing(row["outcome_image"]) and bool(row["outcome_image"])
    if text or image:
        _text_block(
            "Outcome",
            text + ("\n" if text and image else "") + ("[a screenshot, not stored]" if image else ""),
        )


def _filmstrip(steps: pd.DataFrame, current: int) -> bytes | None:
    """The filmstrip page around `current`; returns the current step's image (None: no screenshot).
    Fixed pages of FILMSTRIP steps (not a window sliding by one), so each page's screenshots are scaled
    once and reused while the reviewer steps through it."""
    idxs = steps["idx"].tolist()
    start = idxs.index(current) // FILMSTRIP * FILMSTRIP
    window = steps.iloc[start : start + FILMSTRIP]
    folder = str(thumbnails.folder_for(db_path()))  # scaled copies kept beside the database
    images = read_files(q.screenshot_images, tuple(window["screenshot_path"]), STEP_WIDTH, folder)
    cols = st.columns(FILMSTRIP)
    for col, row, image in zip(cols, window.itertuples(index=False), images, strict=False):
        with col:
            if image is not None:
                st.image(image, width="stretch")
            else:
                st.caption("no screenshot")
            label = f"{'▶ ' if row.idx == current else ''}step {row.idx}"
            st.button(label, key=f"film-{row.idx}", on_click=_set_step, args=(int(row.idx),), width="stretch",
                      type="primary" if row.idx == current else "secondary")  # fmt: skip
            if isinstance(row.error, str) and row.error:
                st.caption("⚠ error")
    return images[idxs.index(current) - start]


def render(run: str, task_id: int, episode: str | None) -> None:
    if episode is None:
        st.info("This run recorded no steps for this task (a WebArena-Verified run keeps only the answer and "
                "the network trace: see the Network and Evaluation tabs).")  # fmt: skip
        return
    steps = read(q.steps, run, task_id, episode)
    if steps is None:
        return
    if steps.empty:
        st.info("This attempt has no steps: it ended before its first action.")
        return
    idxs = [int(i) for i in steps["idx"]]
    observe = {int(i) for i, kind in zip(steps["idx"], steps["kind"], strict=True) if kind == "observe"}
    nav = st.columns([1, 1, 6])
    pos_of = {v: i for i, v in enumerate(idxs)}
    current_now = state.int_param("step")
    i = pos_of.get(current_now, 0)
    nav[0].button("◀ step", key="prev-step", shortcut="P", disabled=i == 0,
                  on_click=_set_step, args=(idxs[max(i - 1, 0)],), help="Previous step (P)")  # fmt: skip
    nav[1].button("step ▶", key="next-step", shortcut="N", disabled=i >= len(idxs) - 1,
                  on_click=_set_step, args=(idxs[min(i + 1, len(idxs) - 1)],), help="Next step (N)")  # fmt: skip
    with nav[2]:
        current = state.url_select_slider(
            st, "Step", idxs, "step", label_visibility="collapsed",
            format_func=lambda v: f"step {v} ({pos_of[v] + 1} of {len(idxs)})" + (" · observe" if v in observe else ""),
        )  # fmt: skip
    image = None
    if steps["screenshot_path"].notna().any():
        image = _filmstrip(steps, current)
    else:
        st.caption("This run recorded no screenshots for this attempt.")

    row = steps[steps["idx"] == current].iloc[0]
    evidence = next(iter(read(ev.step_evidence, run, task_id, episode, int(current)) or []), None)
    st.markdown(f"#### Step {current}" + (" · :gray-badge[observe]" if current in observe else ""))
    if current in observe:
        st.caption(OBSERVE_NOTE)
    labels_panel.render("step", run, task_id, episode=episode, step_idx=int(current), what="step")
    step_pages.render(row["url"], evidence.page_after if evidence else None)
    left, right = st.columns([3, 2])
    with left:
        _text_block("Thought", row["thought"])
        _text_block("Plan", evidence.plan if evidence else None)
        _text_block("Stated action", row["stated_action"])
        _text_block("Executed action", row["executed_action"])
        _text_block("In words", row["readable"])
        _outcome(row)
        if isinstance(row["error"], str) and row["error"]:
            step_pages.error(row["error"])
        if pd.notna(row["elapsed_s"]):
            st.caption(f"took {row['elapsed_s']:.1f} s")
    with right:
        if image is not None:
            st.image(image, caption=f"step {current}", width="stretch")
        elif isinstance(row["screenshot_path"], str) and row["screenshot_path"]:
            st.caption("Screenshot file not found or not an image.")
    if q.RAW_TEXT_KIND in list(row["observations"]) and state.url_toggle(
        st, "Raw text", "raw", help="This step's part of the agent's session text, as recorded."
    ):
        raw = read(q.observation, run, task_id, episode, current, q.RAW_TEXT_KIND)
        if raw is not None:
            st.code(raw, language=None, wrap_lines=True, height=400)
    kinds = [k for k in q.OBSERVATION_KINDS if k in list(row["observations"])]
    if kinds:
        shown = st.segmented_control(
            "Open", kinds, format_func=OBSERVATION_LABELS.get, key=f"obs-{current}",
            help="Loaded from the database only when opened.",
        )  # fmt: skip
        if shown:
            content = read(q.observation, run, task_id, episode, current, shown)
            if content is not None:
                st.code(content, language=None, wrap_lines=True, height=500)

    # A table only when asked (the choice is in the URL): drawn under every step, it made each step change
    # load and lay out the data grid (bench page_settle).
    if state.url_toggle(st, f"All {len(idxs)} steps as a table", "all_steps"):
        show_table(steps[["idx", "kind", "readable", "error", "url"]], hide_index=True, width="stretch")
