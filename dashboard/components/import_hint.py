"""What to do with a database that holds no run: every `trajreview import` command, what it reads, and
`make demo`. The commands come from core.ingest.commands, the list the CLI builds its import group from."""

from __future__ import annotations

import streamlit as st

from core.ingest.commands import IMPORT_COMMANDS


def render() -> None:
    st.info("No runs imported yet. Import one with a `trajreview import` command (`--help` after any says "
            "how), or build the demo database with `make demo` (`trajreview demo`).")  # fmt: skip
    st.markdown(
        "\n".join(
            f"- `trajreview import {name}`: {what.replace('<', '&lt;')}"
            for name, what in IMPORT_COMMANDS.items()
        )
    )
