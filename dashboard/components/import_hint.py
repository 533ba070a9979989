"""What to do with a database that holds no run: every `trajreview import` command, what it reads, and
`make demo`. The dashboard may not import the command line (tests/test_architecture.py), so the commands are
listed here and `tests/test_dashboard_pages.py` checks they are exactly the CLI's import group."""

from __future__ import annotations

import streamlit as st

# The `trajreview import` group's commands, in its order, with what each reads.
IMPORT_COMMANDS = (
    ("tasks", "the 812 WebArena-Verified tasks (and the original WebArena ones)"),
    ("wav-run", "a WebArena-Verified run directory (agent responses + network traces), scored officially"),
    ("agentlab", "BrowserGym / AgentLab experiment directories"),
    ("browsergym", "the same as `import agentlab`"),
    ("opagent", "OpAgent's per-task trajectory files, as one run"),
    ("webarena-render", "WebArena render_<id>.html files and the run's logs, as one run"),
    ("gold", "human gold trajectories (the paper's xlsx, or CSV/JSONL with its columns)"),
    ("jsonl", "a trajreview JSONL run"),
    ("requirements", "partial-success requirements of tasks"),
)


def render() -> None:
    st.info("No runs imported yet. Import one with a `trajreview import` command (`--help` after any says "
            "how), or build the demo database with `make demo` (`trajreview demo`).")  # fmt: skip
    st.markdown(
        "\n".join(
            f"- `trajreview import {name}`: {what.replace('<', '&lt;')}" for name, what in IMPORT_COMMANDS
        )
    )
