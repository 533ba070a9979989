"""OpAgent's coordinate actions (`{"action_type": "click", "params": {"coords": [x, y]}}`) as `ParsedAction`.

OpAgent's grounder turns the planner's instruction ("Click the 'REPORTS' menu item in the left sidebar.")
into an action on screen pixels: there is no element id and no accessibility tree. The executed action
therefore names no element; the element the planner meant is read from its instruction with the gold
step parser (the instruction is English in the gold's style) and kept as the label, and the readable
sentence says what was done, where on the screen, and quotes the instruction, e.g.
`Click 'REPORTS' at (102, 388); planner: "Click the 'REPORTS' menu item in the left sidebar."`.

Values come from an untrusted file: they are read as data, never evaluated, and clipped when shown.
"""

from __future__ import annotations

import re
from typing import Any

from core.measure.action_grammar import ParsedAction

# OpAgent action_type -> canonical verb (core.measure.action_grammar.VERBS). right_click and the zooms have no
# canonical verb of their own: right_click is a click, the zooms change the view like a scroll.
_VERBS = {
    "click": "click", "right_click": "click", "double_click": "dblclick", "hover": "hover",
    "type": "type", "select_option": "select", "press": "press", "scroll": "scroll", "goto": "goto",
    "go_back": "go_back", "go_forward": "go_forward", "zoom_in": "scroll", "zoom_out": "scroll",
    "stop": "answer", "answer": "answer", "wait": "noop", "noop": "noop",
}  # fmt: skip
_WORDS = {
    "click": "Click", "right_click": "Right-click", "double_click": "Double-click", "hover": "Hover",
    "zoom_in": "Zoom in", "zoom_out": "Zoom out",
}  # fmt: skip
_CLIP = 300
# A quoted name: an opening quote not inside a word, up to the same (or the matching curly) quote that
# is not followed by a letter ("Women's" stays inside).
_FIRST_QUOTED = re.compile(r"(?<!\w)(['\"‘“])(.+?)(?:\1|[’”])(?!\w)")  # noqa: RUF001


def _text(value: Any, limit: int = _CLIP) -> str | None:
    if value is None:
        return None
    text = value if isinstance(value, str) else str(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _quoted(value: str | None) -> str:
    return f"'{value or ''}'"


# Words before a quoted text that say it is what an element shows, not its name.
_SHOWN = re.compile(
    r"(?i)\b(?:contain(?:s|ing)?|show(?:s|ing)?|display(?:s|ing)?|currently|like|reads?|says?)\s*$"
)


def element_named(instruction: str | None, typed: Any = None) -> str | None:
    """The first quoted name in an instruction that is neither the `typed` text (or option) nor text an
    element is said to show ("the search box (currently containing 'Aeno capri')"); None if there is none."""
    if not instruction:
        return None
    value = " ".join(str(typed).split()).casefold() if typed is not None else None
    for match in _FIRST_QUOTED.finditer(instruction):
        name = match.group(2).strip()
        if not name or (value is not None and " ".join(name.split()).casefold() == value):
            continue
        if _SHOWN.search(instruction[: match.start()]):
            continue
        return name
    return None


def coords_of(params: dict[str, Any]) -> tuple[int, int] | None:
    """Screen pixels `[x, y]` as integers; None when absent or not two numbers."""
    coords = params.get("coords")
    if not isinstance(coords, list | tuple) or len(coords) != 2:
        return None
    x, y = coords
    if (
        isinstance(x, bool)
        or isinstance(y, bool)
        or not isinstance(x, int | float)
        or not isinstance(y, int | float)
    ):
        return None
    if x != x or y != y or abs(x) > 1e9 or abs(y) > 1e9:  # NaN or absurd
        return None
    return round(x), round(y)


def raw_action(action_type: str, params: dict[str, Any]) -> str:
    """The executed action as one line, OpAgent's own call form: `click(coords=[434, 155])`."""
    args = ", ".join(f"{k}={_text(repr(v), 200)}" for k, v in params.items())
    return f"{action_type}({args})"


def parse_opagent_action(action: Any, instruction: str | None = None) -> ParsedAction | None:
    """Parse `{"action_type", "params"}`; None when it is not that shape."""
    if not isinstance(action, dict) or not isinstance(action.get("action_type"), str):
        return None
    action_type = action["action_type"].strip()
    params = action.get("params")
    params = params if isinstance(params, dict) else {}
    verb = _VERBS.get(action_type, "unknown")
    parsed = ParsedAction(raw=raw_action(action_type, params), verb=verb)
    if verb in ("click", "dblclick", "hover", "type", "select"):
        # The element the planner meant: the first quoted name in its instruction ("Click the 'REPORTS'
        # menu item"), quoted the way gold steps quote labels; for typing and selecting, not the text typed
        # or the option chosen ("Type 'MIT' into the 'License' field") nor what a field already shows.
        typed = (
            params.get("content") if verb == "type" else params.get("option") if verb == "select" else None
        )
        meant = element_named(instruction, typed)
        if meant:
            parsed.element_label = _text(meant, 200)
    if verb == "type":
        parsed.value = _text(params.get("content"), 2000)
        if params.get("press_enter") in (True, 1, "true", "True"):
            parsed.key = "Enter"
    elif verb == "select":
        parsed.value = _text(params.get("option"), 500)
    elif verb == "press":
        parsed.key = _text(params.get("key"), 100)
    elif verb == "scroll":
        if action_type in ("zoom_in", "zoom_out"):
            parsed.direction = action_type.removeprefix("zoom_")
            parsed.value = _text(params.get("level"), 50)
        else:
            direction = _text(params.get("direction"), 20)
            parsed.direction = direction.lower() if direction else None
    elif verb == "goto":
        parsed.target_url = _text(params.get("url"), 2000)
    elif verb == "answer":
        parsed.answer = _text(params.get("answer") or params.get("content"), 2000)
    return parsed


def describe_opagent(
    action: ParsedAction, action_type: str, params: dict[str, Any], instruction: str | None
) -> str:
    """What was done and where on the screen, then the planner's instruction quoted."""
    at = coords_of(params)
    where = f" at ({at[0]}, {at[1]})" if at else ""
    label = f" {_quoted(action.element_label)}" if action.element_label else ""
    verb = action.verb
    if action_type in _WORDS:
        level = f" (level {action.value})" if action.value and action_type.startswith("zoom") else ""
        head = f"{_WORDS[action_type]}{label if verb != 'scroll' else ''}{level}{where}"
    elif verb == "type":
        into = f" into{label}" if label else ""
        enter = " and press Enter" if action.key == "Enter" else ""
        head = f"Type {_quoted(_text(action.value, 120))}{into}{where}{enter}"
    elif verb == "select":
        in_label = f" in{label}" if label else ""
        head = f"Select {_quoted(_text(action.value, 120))}{in_label}{where}"
    elif verb == "press":
        head = f"Press {action.key or ''}".rstrip()
    elif verb == "scroll":
        head = f"Scroll {action.direction or ''}".rstrip() + where
    elif verb == "goto":
        head = f"Go to {_text(action.target_url, 200) or ''}".rstrip()
    elif verb == "go_back":
        head = "Go back"
    elif verb == "go_forward":
        head = "Go forward"
    elif verb == "answer":
        head = f"Answer {_quoted(_text(action.answer, 120))}"
    elif verb == "noop":
        head = "Wait"
    else:
        head = f"Unparsed action {_quoted(_text(action.raw, 120))}"
    said = _text(instruction)
    return f'{head}; planner: "{said}"' if said else head
