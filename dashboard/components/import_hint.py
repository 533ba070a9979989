"""What to do with a database that holds no run: every `trajreview import` command with its one-line help,
read from the command line itself (so a new importer is listed the day it is added), and `make demo`."""

from __future__ import annotations

import streamlit as st

from dashboard.text import escape_md


def import_commands() -> list[tuple[str, str]]:
    """(name, one-line help) of every command of the `trajreview import` group, in its order."""
    import typer.main

    from core.cli.main import import_app

    group = typer.main.get_command(import_app)
    return [(name, command.get_short_help_str(120)) for name, command in group.commands.items()]


def render() -> None:
    st.info("No runs imported yet. Import one with a `trajreview import` command, or build the demo database "
            "with `make demo` (`trajreview demo`).")  # fmt: skip
    st.markdown(
        "\n".join(
            f"- `trajreview import {name}`: {escape_md(help_text, None)}"
            for name, help_text in import_commands()
        )
    )
