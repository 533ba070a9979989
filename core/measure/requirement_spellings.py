"""How one requirement with alternative spellings is written as one text: 'Anglebert Dinkherhump || Dinkherhump'.

`core.measure.requirements` joins the spellings when it stores a requirement; the judge's rule stage splits
them when it looks for the requirement in an answer (any spelling satisfies it). Pure, so both layers
import it.
"""

from __future__ import annotations

ALTERNATIVES_SEPARATOR = " || "


def join_spellings(spellings: list[str]) -> str:
    """One requirement text from its spellings, in order, without repeats."""
    return ALTERNATIVES_SEPARATOR.join(dict.fromkeys(spellings))


def split_spellings(requirement: str) -> list[str]:
    """The spellings of a requirement text (one, when it has no alternatives)."""
    return [s for s in requirement.split(ALTERNATIVES_SEPARATOR) if s.strip()]
