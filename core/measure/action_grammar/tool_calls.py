"""Tool calls of agents that drive a browser through tools (an MCP browser server such as GBOX's) as
`ParsedAction`.

Such an agent writes its session as a transcript (`[tool] mcp__gbox-browser__click: {'boxId': '…',
'target': 'Go button next to the search field'}`): the tool's name says the verb, its arguments the
value, and the element is a natural-language *target description* instead of an element id. The
executed action is stored as that line without the session's `boxId` (`executed_text`), which no
other grammar claims, so the judge reads it back here (`parse_executed`).

Verbs: the browser tools (`click`, `type`, `scroll`, `press_key`, `hover`, `drag`, `switch_tab`,
`open_tab`, `close_tab`, and the navigation and selection names other tool servers use) map onto the
canonical verbs of `core.measure.action_grammar`; the harness's `complete_task` is the answer. Calls
that do not act on the page are of kind `observe`: screenshots, tab lists, waits, starting the browser,
and the agent's own non-browser tools (shell, files, to-do list, sub-agents).

A target description names its element the way a person would ("Go button next to the search field",
"Foot (OSRM) option in the dropdown menu"): `split_target` keeps the name ("Go", "Foot (OSRM)") as the
element label and the role words ("button", "option") as its role, so gold steps ("Click on 'Go'")
compare on the name; the whole description stays in the readable sentence. Values come from an
untrusted transcript: read as data with `ast.literal_eval`, never evaluated, and clipped.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

from core.measure.action_grammar import ParsedAction, readable

StepKind = Literal["action", "observe"]

# Tool name (without its `mcp__<server>__` prefix, lower case) -> canonical verb.
TOOL_VERBS = {
    "click": "click", "double_click": "dblclick", "right_click": "click", "hover": "hover",
    "type": "type", "fill": "type", "input_text": "type", "clear": "clear", "select": "select",
    "select_option": "select", "press_key": "press", "press": "press", "key": "press",
    "scroll": "scroll", "navigate": "goto", "goto": "goto", "open_url": "goto", "open_tab": "goto",
    "go_back": "go_back", "back": "go_back", "go_forward": "go_forward", "forward": "go_forward",
    "switch_tab": "tab_focus", "new_tab": "new_tab", "close_tab": "close_tab", "drag": "drag",
    "upload_file": "upload", "complete_task": "answer",
}  # fmt: skip
# Tools that look and wait but do not act on the page (a step of kind `observe`, verb `noop`).
OBSERVE_TOOLS = frozenset(
    {"screenshot", "list_tabs", "wait", "start_browser_box", "get_page_content", "read_page", "snapshot"}
)
# The agent's own tools (Claude Code's built-ins): a shell, files, a to-do list, sub-agents. They never
# touch the page the task is about, so they are observe steps too.
AGENT_TOOLS = frozenset({"bash", "read", "write", "edit", "grep", "glob", "todowrite", "task", "webfetch"})
# Arguments that identify the session, not the action.
_SESSION_ARGS = frozenset({"boxId", "box_id", "sessionId", "session_id"})
_MCP_NAME = re.compile(r"^mcp__[\w.-]+?__([\w.-]+)$")
_EXECUTED = re.compile(r"^((?:mcp__[\w.-]+|[A-Z][A-Za-z]+)): (\{.*\})\s*$", re.S)
_CLIP = 2000

# Target descriptions: where the name ends ("Go button| next to the search field") and role words.
_LOCATION = re.compile(
    r"\s+(?:in|on|at|near|next to|beside|below|above|under|underneath|inside|within|from|for|with|that|"
    r"which|to the (?:left|right) of|located|labell?ed|showing|displaying|containing|currently|directly|"
    r"to (?:close|open|clear|select|see|view|go|expand|collapse|submit|search|show|hide|remove|access|"
    r"navigate|return|sort|filter|dismiss|confirm|cancel|reveal|toggle))(?=\s)"
    r"|\s*[,(]\s*(?=(?:the|a|an|in|on|at|near|next|below|above|under|located|which|that|with)\s)",
    re.I,
)
_ROLE_WORDS = frozenset(
    {"button", "link", "field", "input", "textbox", "box", "dropdown", "menu", "option", "item", "tab",
     "icon", "checkbox", "radio", "searchbox", "combobox", "area", "textarea", "text", "bar", "entry",
     "toggle", "selector", "listbox", "control", "element", "hyperlink", "btn", "card", "row", "suggestion",
     "tile", "chip"}
)  # fmt: skip
_ARTICLE = re.compile(r"^(?:the|a|an)\s+", re.I)
# Sentences in which the agent announces its next call ("Now let me click the "Go" button.").
_ANNOUNCES = re.compile(
    r"\b(?:I will|I'll|I am going to|I'm going to|I need to|I should|I must|I can now|let me|let's|"
    r"my next action|the next action|next,? I)\b",
    re.I,
)
_CONDITIONAL = re.compile(r"(?i)(?:if|unless|otherwise|once|when)\b")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_QUOTED = re.compile(r"(?<!\w)(['\"‘“])(.+?)(?:\1|[’”])(?!\w)")  # noqa: RUF001


@dataclass(frozen=True)
class ToolCall:
    """One tool call read as an action: its kind, the parsed action and one readable sentence."""

    kind: StepKind
    action: ParsedAction
    readable: str


def short_name(tool: str) -> str:
    """`mcp__gbox-browser__click` -> `click`; a built-in tool's own name, lower case."""
    match = _MCP_NAME.match(tool.strip())
    return (match.group(1) if match else tool.strip()).lower()


def _text(value: Any, limit: int = _CLIP) -> str | None:
    if value is None:
        return None
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def executed_text(tool: str, args: dict[str, Any] | None, raw_args: str = "") -> str:
    """The executed action as stored: the transcript's `name: {args}` without session arguments."""
    if args is None:
        return f"{tool}: {raw_args.strip()}" if raw_args.strip() else tool
    kept = {k: v for k, v in args.items() if k not in _SESSION_ARGS}
    return f"{tool}: {_text(repr(kept), 20_000)}"


@lru_cache(maxsize=100_000)
def _executed_call(text: str | None) -> tuple[str, dict[str, Any]] | None:
    """(tool, arguments) of a stored executed call. Cached: the judge reads each call's verb and its
    target from the same text (`parse_executed`, `target_of`), so the arguments are only read, never
    changed."""
    if not text:
        return None
    match = _EXECUTED.match(text.strip())
    if not match:
        return None
    name = short_name(match.group(1))
    if name not in TOOL_VERBS and name not in OBSERVE_TOOLS and name not in AGENT_TOOLS:
        return None
    try:
        args = ast.literal_eval(match.group(2))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return (match.group(1), args) if isinstance(args, dict) else None


def parse_executed(text: str | None) -> ParsedAction | None:
    """Read back a stored executed action (`mcp__gbox-browser__click: {'target': '…'}`); None when the
    text is not a tool call of this grammar (an action of another grammar, a sentence)."""
    call = _executed_call(text)
    return parse_tool_call(*call).action if call is not None else None


def target_of(text: str | None) -> str | None:
    """The natural-language target description of a stored executed call, if it has one."""
    call = _executed_call(text)
    target = call[1].get("target") if call is not None else None
    return target if isinstance(target, str) else None


def split_target(description: str | None) -> tuple[str | None, str | None]:
    """(role, name) of a natural-language target description.

    "Go button next to the search field" -> ("button", "Go"); "Search text input field in the top left"
    -> ("text input field", "Search"); "the 'Sign in' button" -> ("button", "Sign in"). A description
    that is only role words ("Checkbox in the first row for product ID 682") keeps itself as the name.
    """
    if not description or not description.strip():
        return None, None
    text = " ".join(description.split())
    cut = _LOCATION.search(text)
    head = _ARTICLE.sub("", text[: cut.start()] if cut and cut.start() > 0 else text).strip(" .,:;")
    quoted = _QUOTED.search(head)
    if quoted and quoted.group(2).strip():
        after = head[quoted.end() :].split()
        before = head[: quoted.start()].split()
        role = " ".join(w.lower() for w in after if w.lower() in _ROLE_WORDS) or " ".join(
            w.lower() for w in before if w.lower() in _ROLE_WORDS
        )
        return role or None, quoted.group(2).strip()
    words = head.split()
    roles: list[str] = []
    while len(words) > 1 and words[-1].lower() in _ROLE_WORDS:
        roles.insert(0, words.pop().lower())
    name = " ".join(words)
    if not roles and len(words) == 1 and words[0].lower() in _ROLE_WORDS:
        return words[0].lower(), text  # only a role: the description is all there is to name it by
    return (" ".join(roles) or None), (name or text)


def announced_action(thought: str | None) -> str | None:
    """The stated action of a tool call: the last sentence of the reasoning before it that announces an
    action ("Now let me click the "Go" button to search."), any case; conditional sentences ("If that
    fails, I'll ...") state a fallback and are skipped. None when no sentence announces one."""
    if not thought:
        return None
    for line in reversed(thought.strip().split("\n")):  # from the end: most thoughts end announcing
        for sentence in reversed(_SENTENCE_END.split(line)):
            text = sentence.strip(" -*#\t")
            if text and _ANNOUNCES.search(text) and not _CONDITIONAL.match(text):
                return text if len(text) <= 400 else text[:399] + "…"
    return None


def _keys(value: Any) -> str | None:
    if isinstance(value, list | tuple):
        parts = [str(k) for k in value if isinstance(k, str | int)]
        return "+".join(parts) or None
    return _text(value, 100)


def _yes(value: Any) -> bool:
    return value in (True, 1, "true", "True")


def parse_tool_call(tool: str, args: dict[str, Any] | None, raw_args: str = "") -> ToolCall:
    """One transcript tool call as a step: its kind, its action and a readable sentence. Arguments that
    were not a dict literal (`args` None) leave the action without values; `raw_args` keeps them."""
    name = short_name(tool)
    raw = executed_text(tool, args, raw_args)
    args = args if isinstance(args, dict) else {}
    if name in OBSERVE_TOOLS or name in AGENT_TOOLS:
        return ToolCall("observe", ParsedAction(raw=raw, verb="noop"), _observe_sentence(name, tool, args))
    verb = TOOL_VERBS.get(name, "unknown")
    action = ParsedAction(raw=raw, verb=verb)
    target = _text(args.get("target") or args.get("element") or args.get("selector"), 500)
    if verb in ("click", "dblclick", "hover", "clear", "select", "drag", "upload", "type"):
        action.element_role, action.element_label = split_target(target)
    if name == "click" and _yes(args.get("double")):
        action.verb = "dblclick"
    if verb == "type":
        action.value = _text(args.get("content") if "content" in args else args.get("text"))
        if _yes(args.get("pressEnterAfterType")) or _yes(args.get("press_enter")):
            action.key = "Enter"
    elif verb == "select":
        action.value = _text(args.get("option") or args.get("value"), 500)
    elif verb == "press":
        action.key = _keys(args.get("keys") if "keys" in args else args.get("key"))
    elif verb == "scroll":
        direction = _text(args.get("direction"), 20)
        action.direction = direction.lower() if direction else None
        action.value = _text(args.get("distance"), 50)
    elif verb == "goto":
        action.target_url = _text(args.get("url"))
    elif verb == "tab_focus":
        action.value = _text(args.get("tabId") or args.get("tab_id") or args.get("index"), 50)
    elif verb == "drag":
        action.value = _text(args.get("destination"), 500)
    elif verb == "answer":
        answer = args.get("finalAnswer", args.get("answer"))
        action.answer = _text(answer, 100_000) if answer is not None else ""
    return ToolCall("action", action, _action_sentence(action, name, args, target))


def _action_sentence(action: ParsedAction, name: str, args: dict[str, Any], target: str | None) -> str:
    if action.verb == "unknown":
        return f"Unknown tool {name}: {_text(action.raw, 200)}"
    sentence = readable(action)
    if action.verb == "type":
        sentence += " and press Enter" if action.key == "Enter" else ""
        sentence += " (replacing the field's text)" if _yes(args.get("replace")) else ""
    elif action.verb == "scroll" and action.value:
        sentence += f" ({action.value})"
    elif action.verb == "goto" and name == "open_tab":
        sentence = f"Open {action.target_url or ''} in a new tab".replace("  ", " ")
    elif action.verb == "drag" and action.value:
        sentence += f" to '{action.value}'"
    if name == "right_click" or args.get("button") == "right":
        sentence = sentence.replace("Click", "Right-click", 1)
    if target and target != action.element_label:
        sentence += f'; target: "{target}"'
    return sentence


def _observe_sentence(name: str, tool: str, args: dict[str, Any]) -> str:
    if name == "screenshot":
        return "Take a screenshot"
    if name == "list_tabs":
        return "List the open tabs"
    if name == "wait":
        duration = args.get("duration")
        return f"Wait {duration} ms" if isinstance(duration, int | float) else "Wait"
    if name == "start_browser_box":
        return "Start a browser"
    if name == "bash":
        return f"Run a shell command: {_text(args.get('description') or args.get('command'), 200)}"
    if name == "todowrite":
        return "Update the to-do list"
    if name == "task":
        return f"Ask a sub-agent: {_text(args.get('description') or args.get('prompt'), 200)}"
    if name in ("read", "write", "edit"):
        return f"{name.capitalize()} the file {_text(args.get('file_path'), 200)}"
    if name in ("grep", "glob"):
        return f"Search files for {_text(args.get('pattern'), 200)}"
    return f"Observe ({tool})"
