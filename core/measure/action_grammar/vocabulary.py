"""How verbs are spelled in step text, mapped to the canonical verbs of `core.measure.action_grammar.VERBS`.

Grammar function names are defined beside their parsers (`browsergym.FUNCTION_VERBS`,
`webarena.ACTION_VERBS`); this module adds the English words of step sentences — the human gold and
trajreview's readable sentences — including the typos the paper's gold file uses ("clicl", "hober"),
so every spelling → verb mapping has one home and comparers (the judge) only map verbs to their own
classes.
"""

from __future__ import annotations

from core.measure.action_grammar.browsergym import FUNCTION_VERBS
from core.measure.action_grammar.webarena import ACTION_VERBS

# English word (lower case) -> canonical verb, for a word that starts a clause of a step sentence.
STEP_VERBS = {
    "click": "click", "tap": "click", "dblclick": "dblclick", "check": "check", "uncheck": "check",
    "focus": "focus", "hover": "hover", "type": "type", "fill": "type", "enter": "type",
    "input": "type", "write": "type", "search": "type", "clear": "clear", "select": "select",
    "choose": "select", "pick": "select", "press": "press", "hit": "press", "scroll": "scroll",
    "goto": "goto", "go": "goto", "navigate": "goto", "visit": "goto", "open": "goto",
    "upload": "upload", "drag": "drag", "answer": "answer", "infeasible": "infeasible",
    "wait": "noop", "noop": "noop",
}  # fmt: skip

# Misspellings written as a step's verb: 'clicl', 'clock' and 'hober' start steps of the paper's gold
# file, 'clik' and 'clcik' are the other usual slips. Listed, not found by edit distance: a sentence
# has many words, and 'types' or 'elect' must not become verbs.
GOLD_TYPOS = {"clicl": "click", "clock": "click", "clik": "click", "clcik": "click", "hober": "hover"}

# Grammar words that are ordinary English in a sentence: "Stop when ...", "None of the results ...".
_ORDINARY_WORDS = frozenset({"stop", "none"})


def step_verb(word: str) -> str | None:
    """The canonical verb a (lower-case) word of a step sentence names, or None.

    Grammar function names count too: a call the grammar could not read still names its verb.
    """
    found = STEP_VERBS.get(word) or GOLD_TYPOS.get(word)
    if found or word in _ORDINARY_WORDS:
        return found
    return FUNCTION_VERBS.get(word) or ACTION_VERBS.get(word)
