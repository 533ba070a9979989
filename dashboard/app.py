"""trajreview dashboard entry point: `streamlit run dashboard/app.py` (or `trajreview serve`)."""

from __future__ import annotations

import sys
from pathlib import Path

import streamlit as st

# `streamlit run` puts this file's folder on sys.path, not the repository root.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

st.set_page_config(page_title="trajreview", page_icon=":material/fact_check:", layout="wide")

VIEWS = Path(__file__).parent / "views"
navigation = st.navigation(
    [
        st.Page(
            VIEWS / "overview.py",
            title="Overview",
            icon=":material/dashboard:",
            url_path="overview",
            default=True,
        )
    ]
)
navigation.run()
