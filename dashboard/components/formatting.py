"""Small formatters shared by pages: rates with their interval, verdict icons."""

from __future__ import annotations

from core.values import is_missing

# Plain symbols every font has (emoji need a colour font the reviewer may not have).
VERDICT_ICONS = {"success": "✓", "failure": "✗", "error": "⚠", "unscored": "·", "unresolved": "?"}


def pct(value: float | None, digits: int = 1) -> str:
    if is_missing(value):
        return "–"
    return f"{value * 100:.{digits}f} %"


def rate_with_ci(rate: float | None, low: float | None, high: float | None, n: int | None = None) -> str:
    """'67.9 % [64.7–71.1] of 812' — every rate says its interval and how many tasks it covers."""
    if is_missing(rate):
        return "– (no scored task)"
    ci = f" [{low * 100:.1f}–{high * 100:.1f}]" if low is not None and high is not None else ""
    of = f" of {n}" if n is not None else ""
    return f"{rate * 100:.1f} %{ci}{of}"


def verdict_label(verdict: str | None) -> str:
    return f"{VERDICT_ICONS.get(verdict or 'unscored', '·')} {verdict or 'unscored'}"
