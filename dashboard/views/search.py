"""Search: `?query=&run=&site=&outcome=&cause=&limit=` — words and "quoted phrases" over every run's
intents, thoughts, actions, answers, evaluator sentences, labels, notes, causes and network URLs; each
hit opens the task page at its step."""

from __future__ import annotations

import streamlit as st

from core.queries import search as q
from core.queries.causes import cause_name
from dashboard import state
from dashboard.components import search_hits
from dashboard.db import read
from dashboard.text import escape_md

LIMITS = (50, 100, 200, 500)

st.title("Search")
state.follow_same_page_links()  # a "same search without …" link of the last run
options = read(q.search_filters)
if options is None:
    st.stop()
query = state.url_text(
    st, 'Words or "a phrase"', "query", placeholder='e.g. "search box" or /customer/address'
)
cols = st.columns(5)
run = state.url_selectbox(cols[0], "Run", options["run"], "run", placeholder="every run")
site = state.url_selectbox(cols[1], "Site", options["site"], "site", placeholder="every site")
outcome = state.url_selectbox(cols[2], "Outcome", options["outcome"], "outcome", placeholder="any outcome")
cause = state.url_selectbox(cols[3], "Primary cause", options["cause"], "cause", placeholder="any cause",
                            format_func=cause_name,  # words shown, the code in the URL
                            help="Causes come from `trajreview diagnose`: a run never diagnosed has none.")  # fmt: skip
limit = state.url_select_slider(cols[4], "Hits shown", LIMITS, "limit")
if not q.parse_query(query):
    st.info(
        'Type words or a "quoted phrase": every part must occur in one text, as whole words, in any case.'
    )
    st.stop()
result = read(q.search, query, run=run, site=site, outcome=outcome, cause=cause, limit=int(limit))
if result is None:
    st.stop()
if cause is not None and result.undiagnosed:
    st.caption(f"Not diagnosed, so never matched by a cause: {escape_md(', '.join(result.undiagnosed))}.")
search_hits.render(result, {"query": query, "run": run, "site": site, "outcome": outcome, "cause": cause,
                            "limit": str(limit)})  # fmt: skip
