"""Small text helpers shared by importers and editors."""

from __future__ import annotations


def normalise_text(text: str) -> str:
    """Non-breaking and repeated spaces to one space, trimmed; nothing else changes."""
    return " ".join(text.replace("\xa0", " ").split())
