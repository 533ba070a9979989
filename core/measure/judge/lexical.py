"""Lexical stage: rapidfuzz scores on labels and values, deciding only outside an ambiguous band.

The band was set on the gold xlsx × BrowserGym sample (see docs/metrics.md, "Calibration"): above
`accept` the wording differs only cosmetically, below `reject` the labels share almost nothing.
Pairs in between go to the embedding and LLM stages (or, offline, are settled approximately).
"""

from __future__ import annotations

from dataclasses import dataclass

from rapidfuzz import fuzz

from core.measure.judge.rules import canonicalize, compatible
from core.measure.judge.values import label_numbers, norm_label, norm_value, same_value


@dataclass(frozen=True)
class Band:
    accept: float = 88.0  # token_sort_ratio at or above: equivalent
    reject: float = 50.0  # token_set_ratio below: different
    offline_split: float = 75.0  # offline only: mean of both scores at or above settles as equivalent


DEFAULT_BAND = Band()


@dataclass(frozen=True)
class LexicalScore:
    verdict: bool | None  # None: inside the ambiguous band
    score: float  # 0..1 evidence of equivalence


def _texts(kind: str, a: str, b: str) -> tuple[str, str]:
    """What to compare: labels (and values) when both sides have them, else the whole sentences."""
    if kind == "requirement_in_answer":
        return norm_value(a) or "", norm_value(b) or ""
    ca, cb = canonicalize(a), canonicalize(b)
    if ca.label and cb.label and compatible(ca.verb, cb.verb):
        left, right = ca.label, cb.label
        if ca.value and cb.value and same_value(ca.value, cb.value) is not True:
            left, right = f"{left} {norm_value(ca.value)}", f"{right} {norm_value(cb.value)}"
        return left, right
    return norm_label(a) or "", norm_label(b) or ""


def score_pair(kind: str, a: str, b: str, band: Band = DEFAULT_BAND) -> LexicalScore:
    left, right = _texts(kind, a, b)
    if not left or not right:
        return LexicalScore(None, 0.0)
    if kind == "requirement_in_answer":
        # Is the requirement (short) somewhere in the answer (long)? Best-aligned substring score.
        partial = fuzz.partial_ratio(left, right)
        if partial >= 92:
            return LexicalScore(True, partial / 100)
        if partial < 60:
            return LexicalScore(False, partial / 100)
        return LexicalScore(None, partial / 100)
    sort_score = fuzz.token_sort_ratio(left, right)
    set_score = fuzz.token_set_ratio(left, right)
    # A label contained in the other ('Reviews' in 'Reviews (12)') is good, not conclusive, evidence.
    evidence = max(sort_score, 0.9 * set_score) / 100
    numbers_left, numbers_right = label_numbers(left), label_numbers(right)
    if numbers_left and numbers_right and sorted(numbers_left) != sorted(numbers_right):
        # One character of difference can be another number ('Page 2' / 'Page 3', '5' / '50'): the
        # paper's rule 2, whatever the string similarity says.
        return LexicalScore(False, 0.0)
    if sort_score >= band.accept:
        return LexicalScore(True, evidence)
    if set_score < band.reject:
        return LexicalScore(False, evidence)
    return LexicalScore(None, evidence)


def settle_offline(kind: str, score: float, band: Band = DEFAULT_BAND) -> bool:
    """Offline only: an ambiguous pair's best guess from lexical evidence (marked approximate)."""
    if kind == "requirement_in_answer":
        return score >= 0.8
    return score * 100 >= band.offline_split
