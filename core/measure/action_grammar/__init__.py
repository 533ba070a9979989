"""One parsed-action model for every agent action grammar (BrowserGym, WebArena) and gold text.

Parsers live beside this module, one per grammar: `browsergym.py` (`click('184')`, `fill('216', 'x')`,
`send_msg_to_user(...)`), `webarena.py` (`click [1096]`, `type [12] [text] [1]`, `stop [answer]`).
They never execute anything they parse.
"""

from __future__ import annotations

from pydantic import BaseModel

# Canonical verbs shared by every grammar, so gold and agent steps compare on one vocabulary.
VERBS = (
    "click", "dblclick", "hover", "type", "clear", "select", "check", "press", "scroll", "goto",
    "go_back", "go_forward", "new_tab", "tab_focus", "close_tab", "upload", "drag", "focus",
    "answer", "infeasible", "noop", "unknown",
)  # fmt: skip


class ParsedAction(BaseModel):
    """One browser action, grammar-independent. `raw` keeps the original text."""

    raw: str
    verb: str = "unknown"
    element_id: str | None = None
    element_role: str | None = None
    element_label: str | None = None
    value: str | None = None
    key: str | None = None
    direction: str | None = None
    target_url: str | None = None
    answer: str | None = None


def is_na_answer(answer: str | None) -> bool:
    """The agent's way of saying the task cannot be done: `N/A` (or `NA`), optionally quoted, as in
    WebArena's `stop [N/A]` and BrowserGym's `send_msg_to_user('N/A')`."""
    return answer is not None and answer.strip().strip("'\"").strip().upper() in ("N/A", "NA")


def _quoted(text: str | None, limit: int = 80) -> str:
    text = (text or "").strip()
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return f"'{text}'"


def readable(action: ParsedAction) -> str:
    """A short human-style sentence: "Click link 'My Account'", "Type 'yoga mat' into searchbox 'Search'"."""
    target = (
        " ".join(p for p in (action.element_role, _quoted(action.element_label)) if p)
        if (action.element_label)
        else (f"{action.element_role or 'element'} [{action.element_id}]" if action.element_id else "")
    )
    verb = action.verb
    if verb in ("click", "dblclick", "hover", "focus", "clear", "check"):
        word = {"dblclick": "Double-click", "check": "Check"}.get(verb, verb.capitalize())
        return f"{word} {target}".strip()
    if verb == "type":
        return (
            f"Type {_quoted(action.value)} into {target}".strip()
            if target
            else f"Type {_quoted(action.value)}"
        )
    if verb == "select":
        return f"Select {_quoted(action.value)} in {target}".strip()
    if verb == "press":
        return f"Press {action.key or action.value or ''}".strip() + (f" on {target}" if target else "")
    if verb == "scroll":
        return f"Scroll {action.direction or ''}".strip()
    if verb == "goto":
        return f"Go to {action.target_url or ''}".strip()
    if verb in ("go_back", "go_forward"):
        return "Go back" if verb == "go_back" else "Go forward"
    if verb == "new_tab":
        return "Open a new tab"
    if verb == "tab_focus":
        return f"Switch to tab {action.value or ''}".strip()
    if verb == "close_tab":
        return "Close the tab"
    if verb == "upload":
        return f"Upload {_quoted(action.value)} to {target}".strip()
    if verb == "drag":
        return f"Drag {target}".strip()
    if verb == "answer":
        return f"Answer {_quoted(action.answer, 120)}"
    if verb == "infeasible":
        return f"Report the task infeasible: {_quoted(action.answer, 120)}"
    if verb == "noop":
        return "Wait"
    return f"Unparsed action {_quoted(action.raw)}"
