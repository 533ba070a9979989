"""OpAgent's coordinate actions (`{"action_type": "click", "params": {"coords": [x, y]}}`).

A grounder executes the planner's instruction at screen coordinates: there is no element id, so the
parsed action has none; the element label is the first name the instruction quotes ("Click the
'Reports' menu item" -> 'Reports'), and the readable sentence says what was done and where, then quotes
the instruction it executed.
"""

from __future__ import annotations

import re
from typing import Any

from core.action_grammar import ParsedAction

# OpAgent action type -> canonical verb. Zooming changes the view, not the page: a no-op for the page.
VERB_OF = {
    "click": "click", "right_click": "click", "hover": "hover", "type": "type", "scroll": "scroll",
    "goto": "goto", "select_option": "select", "go_back": "go_back", "press": "press",
    "zoom_in": "noop", "zoom_out": "noop",
}  # fmt: skip
_FIRST_QUOTED = re.compile(r"""(?:^|[\s(])['"‘“](.+?)['"’”](?=[\s.,;:)!?]|$)""")
_TEXT_LIMIT = 300


def _clip(text: Any, limit: int = _TEXT_LIMIT) -> str:
    s = " ".join(str(text).split())
    return s if len(s) <= limit else s[: limit - 1] + "…"


def _coords(params: dict[str, Any]) -> str | None:
    coords = params.get("coords")
    if (
        isinstance(coords, (list, tuple))
        and len(coords) == 2
        and all(isinstance(c, (int, float)) for c in coords)
    ):
        return f"({coords[0]:g}, {coords[1]:g})"
    return None


def executed_text(action_type: str, params: dict[str, Any]) -> str:
    """The executed call as one line, e.g. `click(coords=[41, 480])`."""
    args = ", ".join(f"{k}={v!r}" for k, v in params.items())
    return _clip(f"{action_type}({args})", 1000)


def element_label(instruction: str | None) -> str | None:
    """The first quoted name in the planner's instruction: the element the grounder was asked to hit."""
    if not instruction:
        return None
    found = _FIRST_QUOTED.search(instruction)
    return _clip(found.group(1), 120) if found else None


def parse_opagent_action(action: Any, instruction: str | None) -> tuple[ParsedAction, str]:
    """(parsed action, readable sentence) of one OpAgent action; unknown shapes parse as verb `unknown`."""
    action_type = action.get("action_type") if isinstance(action, dict) else None
    params = action.get("params") if isinstance(action, dict) else None
    params = params if isinstance(params, dict) else {}
    raw = executed_text(str(action_type), params) if action_type else _clip(action, 1000)
    verb = VERB_OF.get(action_type or "", "unknown")
    where = _coords(params)
    at = f" at {where}" if where else ""
    value = params.get("content") if action_type == "type" else params.get("option")
    key = params.get("key") if action_type == "press" else ("Enter" if params.get("press_enter") else None)
    parsed = ParsedAction(
        raw=raw, verb=verb, element_label=element_label(instruction),
        value=None if value is None else _clip(value, 1000), key=None if key is None else str(key),
        direction=str(params["direction"]) if action_type == "scroll" and params.get("direction") else None,
        target_url=str(params["url"]) if action_type == "goto" and params.get("url") else None,
    )  # fmt: skip
    if action_type in ("click", "right_click", "hover"):
        done = {"click": "Click", "right_click": "Right-click", "hover": "Hover"}[action_type] + at
    elif action_type == "type":
        done = f"Type '{_clip(value or '', 80)}'{at}" + (
            " and press Enter" if params.get("press_enter") else ""
        )
    elif action_type == "select_option":
        done = f"Select '{_clip(value or '', 80)}'{at}"
    elif action_type == "scroll":
        done = f"Scroll {parsed.direction or ''}{at}".replace("  ", " ")
    elif action_type == "goto":
        done = f"Go to {_clip(parsed.target_url or '', 120)}"
    elif action_type == "go_back":
        done = "Go back"
    elif action_type == "press":
        done = f"Press {parsed.key or ''}".strip()
    elif action_type in ("zoom_in", "zoom_out"):
        done = f"Zoom {'in' if action_type == 'zoom_in' else 'out'}{at}"
    else:
        done = f"Unparsed action {_clip(raw, 80)}"
    readable = f"{done}: {_clip(instruction)}" if instruction and instruction.strip() else done
    return parsed, readable
