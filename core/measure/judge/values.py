"""Values the rule stage compares: labels and texts folded, numbers, dates and durations read from text.

Folding only touches case, Unicode width, whitespace and surrounding punctuation: every inner word,
digit and symbol of a label or value is kept, because they are what tells two steps apart.
"""

from __future__ import annotations

import re
import unicodedata
from datetime import date, datetime

from rapidfuzz import fuzz


def fold(text: str) -> str:
    """Unicode-compatible forms (NFKC), no-break spaces as spaces, runs of whitespace as one space."""
    text = unicodedata.normalize("NFKC", text).replace("\u00a0", " ")
    return " ".join(text.split())


def norm_label(text: str | None) -> str | None:
    """Case-, width- and whitespace-insensitive label; inner words and digits are all kept."""
    if text is None:
        return None
    text = fold(text).casefold().strip(" .,;:!?\"'`")
    return text or None


_NUMBER = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?")
_CURRENCY = re.compile(r"^[\s$€£¥]*([-+]?[\d,]*\.?\d+)\s*%?\s*(?:usd|dollars?)?$", re.I)
_DATE_FORMATS = (
    "%m/%d/%Y", "%m/%d/%y", "%Y-%m-%d", "%Y/%m/%d", "%d.%m.%Y", "%B %d, %Y", "%b %d, %Y", "%B %d %Y",
    "%b %d %Y", "%d %B %Y", "%d %b %Y", "%B %Y", "%b %Y",
)  # fmt: skip
_DATE_IN_TEXT = re.compile(
    r"\d{1,4}[/\-.]\d{1,2}[/\-.]\d{1,4}|"
    r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.? \d{1,2}(?:st|nd|rd|th)?,? \d{4}|"
    r"\d{1,2}(?:st|nd|rd|th)? (?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?,? \d{4}",
    re.I,
)


def as_number(text: str | None) -> float | None:
    """'$1,234.50' -> 1234.5; None when the text is not one number."""
    if not text:
        return None
    match = _CURRENCY.match(text.strip())
    if not match:
        return None
    try:
        return float(match.group(1).replace(",", ""))
    except ValueError:
        return None


def as_date(text: str | None) -> date | None:
    """A date written in any common format ('03/31/2022', '2022-03-31', 'March 31, 2022')."""
    if not text or not any(ch.isdigit() for ch in text):  # every format has digits: skip strptime
        return None
    cleaned = re.sub(r"(\d)(st|nd|rd|th)\b", r"\1", fold(text).strip(" .,"))
    cleaned = cleaned.replace("Sept ", "Sep ")
    for fmt in _DATE_FORMATS:
        try:
            return datetime.strptime(cleaned, fmt).date()
        except ValueError:
            continue
    return None


def norm_value(text: str | None) -> str | None:
    """A typed or answered value folded like a label (case, width, whitespace, outer punctuation)."""
    if text is None:
        return None
    text = fold(text).casefold().strip(" .,;:!?\"'`")
    return text or None


_UNSIGNED = re.compile(r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?")
_COSMETIC = re.compile(r"[\s\-_.,;:'\"`‘’“”]+")


def label_numbers(label: str | None) -> list[float]:
    """The numbers written in a label, in order ('Page 2' -> [2.0], 'Order #000000170' -> [170.0])."""
    return [float(m.group(0).replace(",", "")) for m in _UNSIGNED.finditer(label or "")]


def same_value(a: str | None, b: str | None) -> bool | None:
    """True/False when the rule can tell, None when only a fuzzier stage can."""
    na, nb = norm_value(a), norm_value(b)
    if na is None or nb is None:
        return None if (na is None) != (nb is None) else True
    if na == nb:
        return True
    num_a, num_b = as_number(a), as_number(b)
    if num_a is not None and num_b is not None:
        return abs(num_a - num_b) < 1e-9
    date_a, date_b = as_date(a), as_date(b)
    if date_a is not None and date_b is not None:
        return date_a == date_b
    if (num_a is None) != (num_b is None) and (date_a or date_b) is None and (num_a or num_b) is not None:
        return False  # a number against words that are no number: a substantive mismatch
    # Only cosmetic separators fold away: symbols such as '+' or '#' carry meaning ('C++' vs 'C#').
    squashed_a, squashed_b = _COSMETIC.sub("", na), _COSMETIC.sub("", nb)
    if squashed_a == squashed_b:
        return True
    # Clearly different values (names, words) are the paper's rule 2; near-misses go to later stages.
    return False if fuzz.ratio(na, nb) < 70 else None


# -- a value inside a longer text (an answer) ----------------------------------------------------
def squash(text: str) -> str:
    """Casefolded words only: punctuation and dots become spaces (for finding a phrase in an answer)."""
    return " ".join(re.sub(r"[^\w\s.]", " ", fold(text).casefold()).replace(".", " ").split())


def numbers_in(text: str) -> list[float]:
    """Every number written in the text, thousands separators read ('1,234.5' -> 1234.5)."""
    return [float(m.group(0).replace(",", "")) for m in _NUMBER.finditer(text)]


def dates_in(text: str) -> list[date]:
    """Every date written in the text, in any of the formats `as_date` reads."""
    found = [as_date(m.group(0)) for m in _DATE_IN_TEXT.finditer(text)]
    return [d for d in found if d is not None]


_DURATION_REQ = re.compile(
    r"^\s*(?:(\d+)\s*(?:h|hr|hrs|hours?)\s*)?(?:(\d+)\s*(?:m|min|mins|minutes?))?\s*$", re.I
)
_DURATION_IN_TEXT = re.compile(
    r"(\d+)\s*(?:h|hr|hrs|hours?)\s*(?:and\s*)?(\d+)\s*(?:m|min|mins|minutes?)\b|(\d+)\s*(?:h|hr|hrs|hours?)\b"
    r"|(\d+)\s*(?:m|min|mins|minutes?)\b|\b(\d{1,2}):(\d{2})\b",
    re.I,
)


def as_minutes(text: str) -> int | None:
    """'1hr 44min' -> 104, '11min' -> 11; None when the text is not a duration."""
    match = _DURATION_REQ.match(text)
    if not match or not (match.group(1) or match.group(2)):
        return None
    return int(match.group(1) or 0) * 60 + int(match.group(2) or 0)


def minutes_in(text: str) -> set[int]:
    """Every duration in the text, in minutes ('1 hour 44 minutes', '1:44', '11 min')."""
    found = set()
    for m in _DURATION_IN_TEXT.finditer(text):
        h_m, h_only, m_only, clock = (
            (m.group(1), m.group(2)),
            m.group(3),
            m.group(4),
            (m.group(5), m.group(6)),
        )
        if h_m[0]:
            found.add(int(h_m[0]) * 60 + int(h_m[1]))
        elif h_only:
            found.add(int(h_only) * 60)
        elif m_only:
            found.add(int(m_only))
        elif clock[0]:
            found.add(int(clock[0]) * 60 + int(clock[1]))
    return found
