"""CLI commands of the agentlab area (filled in by its issue)."""

from __future__ import annotations

import typer


def register(app: typer.Typer, import_app: typer.Typer) -> None:
    """Add this area's commands to the main app and to the `import` group."""
