"""Small formatters shared by pages: rates with their interval, verdict icons."""

from __future__ import annotations

from core.measure.stats import percent, rate_text

# Plain symbols every font has (emoji need a colour font the reviewer may not have).
VERDICT_ICONS = {"success": "✓", "failure": "✗", "error": "⚠", "unscored": "·", "unresolved": "?"}


def pct(value: float | None, digits: int = 1) -> str:
    """'61.8 %', the one percent format (core.measure.stats.percent)."""
    return percent(value, digits)


def rate_with_ci(rate: float | None, low: float | None, high: float | None, n: int | None = None) -> str:
    """'67.9 % [64.7–71.1] of 812' — every rate says its interval and how many tasks it covers."""
    return rate_text(rate, low, high, n)


def verdict_label(verdict: str | None) -> str:
    return f"{VERDICT_ICONS.get(verdict or 'unscored', '·')} {verdict or 'unscored'}"
