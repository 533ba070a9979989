"""The BrowserGym action grammar: `click('184')`, `fill('216', 'x')\\nclick('221')`, `send_msg_to_user(...)`.

Action strings are Python call expressions, one call per line. They are parsed with `ast.parse` and
`ast.literal_eval` on argument nodes, which never execute anything. Each call maps to one canonical
verb of `core.measure.action_grammar`. Element ids (bids) resolve to role and accessible name through the
AXTree text of the observation the action was chosen on (`[184] link 'My Account'` lines).
"""

from __future__ import annotations

import ast
import re
from functools import cached_property

from core.measure.action_grammar import ParsedAction, readable

# BrowserGym function name -> canonical verb (browsergym.core.action.functions, all action sets).
FUNCTION_VERBS = {
    "click": "click", "mouse_click": "click", "dblclick": "dblclick", "mouse_dblclick": "dblclick",
    "hover": "hover", "mouse_move": "hover", "fill": "type", "keyboard_type": "type",
    "keyboard_insert_text": "type", "clear": "clear", "select_option": "select", "check": "check",
    "uncheck": "check", "press": "press", "keyboard_press": "press", "keyboard_down": "press",
    "keyboard_up": "press", "scroll": "scroll", "goto": "goto", "go_back": "go_back",
    "go_forward": "go_forward", "new_tab": "new_tab", "tab_focus": "tab_focus", "tab_close": "close_tab",
    "upload_file": "upload", "mouse_upload_file": "upload", "drag_and_drop": "drag",
    "mouse_drag_and_drop": "drag", "focus": "focus", "send_msg_to_user": "answer",
    "report_infeasible": "infeasible", "noop": "noop",
}  # fmt: skip

# Functions whose first argument is an element bid.
_BID_FIRST = frozenset(
    {"click", "dblclick", "hover", "fill", "clear", "select_option", "check", "uncheck", "press",
     "upload_file", "drag_and_drop", "focus"}
)  # fmt: skip

# `[184] link 'My Account'` / `[252] combobox '\ue615 Search', autocomplete='both'`: bid, role, repr(name).
_AXTREE_LINE = re.compile(
    r"""^[ \t]*\[([^\]\s]+)\][ \t]+([^\s']+)(?:[ \t]+('(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"))?""",
    re.MULTILINE,
)
# Icon-font glyphs (Unicode private-use area) say nothing to a reader.
_PRIVATE_USE = re.compile("[\ue000-\uf8ff]")
_CALL_START = re.compile(r"\s*([A-Za-z_]\w*)\s*\(")
_CALL_HEAD = re.compile(r"^\s*([A-Za-z_]\w*)\s*\((.*)\)\s*$", re.DOTALL)
_FENCE = re.compile(r"^```\w*\s*|\s*```$")
_MAX_ACTION_CHARS = 100_000


class AXTree:
    """bid -> (role, name) of an observation's `axtree_txt`, indexed on first lookup."""

    def __init__(self, text: str | None):
        self.text = text or ""

    @cached_property
    def _index(self) -> dict[str, tuple[str, str]]:
        index = {}
        for bid, role, quoted in _AXTREE_LINE.findall(self.text):
            index.setdefault(bid, (role, _unquote(quoted) if quoted else ""))
        return index

    def lookup(self, bid: str | None) -> tuple[str, str] | None:
        """(role, name) of the element, name cleaned of icon glyphs; None when the bid is absent."""
        if bid is None:
            return None
        found = self._index.get(str(bid))
        if found is None:
            return None
        role, name = found
        return role, " ".join(_PRIVATE_USE.sub(" ", name).split())


def _unquote(quoted: str) -> str:
    if "\\" not in quoted:  # no escapes: the repr is the text between its quotes
        return quoted[1:-1]
    try:
        value = ast.literal_eval(quoted)  # the AXTree prints names with repr(); literal_eval never runs code
    except (ValueError, SyntaxError):
        return quoted[1:-1]
    return value if isinstance(value, str) else str(value)


def _text(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    return str(value)


def _scroll_direction(dx: object, dy: object) -> str | None:
    try:
        x, y = float(dx or 0), float(dy or 0)
    except (TypeError, ValueError):
        return None
    if abs(y) >= abs(x) and y:
        return "down" if y > 0 else "up"
    if x:
        return "right" if x > 0 else "left"
    return None


def _action_from_call(name: str, args: list, kwargs: dict, raw: str) -> ParsedAction:
    verb = FUNCTION_VERBS.get(name, "unknown")
    a = ParsedAction(raw=raw, verb=verb)

    def arg(i: int, key: str) -> object:
        return args[i] if len(args) > i else kwargs.get(key)

    if name in _BID_FIRST:
        a.element_id = _text(arg(0, "from_bid" if name == "drag_and_drop" else "bid"))
    if name == "fill":
        a.value = _text(arg(1, "value"))
    elif name in ("keyboard_type", "keyboard_insert_text"):
        a.value = _text(arg(0, "text"))
    elif name == "select_option":
        a.value = _text(arg(1, "options"))
    elif name == "uncheck":
        a.value = "unchecked"
    elif name == "press":
        a.key = _text(arg(1, "key_comb"))
    elif name in ("keyboard_press", "keyboard_down", "keyboard_up"):
        a.key = _text(arg(0, "key"))
    elif name == "scroll":
        a.direction = _scroll_direction(arg(0, "delta_x"), arg(1, "delta_y"))
        a.value = ", ".join(_text(v) or "0" for v in (arg(0, "delta_x"), arg(1, "delta_y")))
    elif name == "goto":
        a.target_url = _text(arg(0, "url"))
    elif name == "tab_focus":
        a.value = _text(arg(0, "index"))
    elif name in ("upload_file",):
        a.value = _text(arg(1, "file"))
    elif name == "drag_and_drop":
        a.value = _text(arg(1, "to_bid"))
    elif name in ("send_msg_to_user", "report_infeasible"):
        a.answer = _text(arg(0, "text" if name == "send_msg_to_user" else "reason"))
    elif name.startswith("mouse_") and args:
        a.value = ", ".join(str(v) for v in args)
    return a


def _lenient_call(line: str) -> ParsedAction | None:
    """A call `ast` rejects, e.g. `send_msg_to_user('It's 5')`: keep the name and the text inside."""
    match = _CALL_HEAD.match(line)
    if not match:
        return None
    name, inner = match.group(1), match.group(2).strip()
    if name not in FUNCTION_VERBS:
        return ParsedAction(raw=line, verb="unknown")
    if inner[:1] in ("'", '"') and inner[-1:] == inner[:1]:
        inner = inner[1:-1]
    if name in ("send_msg_to_user", "report_infeasible", "goto", "keyboard_type", "keyboard_press"):
        return _action_from_call(name, [inner], {}, line)
    return ParsedAction(raw=line, verb=FUNCTION_VERBS[name])


def parse_calls(action: str | None) -> list[ParsedAction]:
    """Every call of a (possibly multi-line) action string, in order; [] for an empty action."""
    if not action or not action.strip():
        return []
    text = _FENCE.sub("", action.strip())
    if len(text) > _MAX_ACTION_CHARS:  # no agent sends this much; do not hand it to the parser
        return [ParsedAction(raw=text[:200] + "…", verb="unknown")]
    try:
        tree = ast.parse(text, mode="exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        lines = [line for line in text.splitlines() if line.strip()]
        if len(lines) > 1 and all(_starts_call(line) for line in lines):
            # One malformed call among several: parse each line so the others survive.
            return [c for line in lines for c in parse_calls(line)]
        return [_lenient_or_unknown(text)]
    calls = []
    for stmt in tree.body:
        raw = ast.get_source_segment(text, stmt) or ""
        call = stmt.value if isinstance(stmt, ast.Expr) else None
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)):
            calls.append(ParsedAction(raw=raw, verb="unknown"))
            continue
        try:
            args = [ast.literal_eval(a) for a in call.args]
            kwargs = {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg}
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            calls.append(ParsedAction(raw=raw, verb=FUNCTION_VERBS.get(call.func.id, "unknown")))
            continue
        calls.append(_action_from_call(call.func.id, args, kwargs, raw))
    return calls


def strict_first_call(action: str | None) -> ParsedAction | None:
    """The first call of an action string when that call is wholly in the grammar (a known function
    with literal arguments), else None: no lenient reading. For callers that then read the text another
    way (the judge reads it as a sentence) instead of showing an unparsed action. Like `parse_calls`,
    when the whole text does not parse, its first line alone may."""
    if not action or not action.strip():
        return None
    text = action.strip()
    if text.startswith("```"):
        text = _FENCE.sub("", text)
    if len(text) > _MAX_ACTION_CHARS or not _starts_call(text):  # most texts are sentences: no ast
        return None
    for candidate in dict.fromkeys((text, text.splitlines()[0])):
        try:
            tree = ast.parse(candidate, mode="exec")
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        stmt = tree.body[0] if tree.body else None
        call = stmt.value if isinstance(stmt, ast.Expr) else None
        if not (
            isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in FUNCTION_VERBS
        ):
            return None
        try:
            args = [ast.literal_eval(a) for a in call.args]
            kwargs = {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg}
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return None
        return _action_from_call(call.func.id, args, kwargs, ast.get_source_segment(candidate, stmt) or "")
    return None


def _starts_call(line: str) -> bool:
    match = _CALL_START.match(line)
    return bool(match and match.group(1) in FUNCTION_VERBS)


def _lenient_or_unknown(line: str) -> ParsedAction:
    return _lenient_call(line.strip()) or ParsedAction(raw=line.strip(), verb="unknown")


def resolve(action: ParsedAction, axtree: AXTree | None) -> ParsedAction:
    """Fill element role and label from the observation's AXTree when the bid is in it."""
    if axtree is not None and action.element_id is not None:
        found = axtree.lookup(action.element_id)
        if found:
            action.element_role, action.element_label = found[0], (found[1] or None)
    return action


def sentence(action: ParsedAction) -> str:
    """readable() plus the wording the shared verbs lack (uncheck)."""
    text = readable(action)
    if action.verb == "check" and action.value == "unchecked":
        text = "Uncheck" + text[len("Check") :]
    return text


def parse_action(action: str | None, axtree_txt: str | None = None) -> tuple[ParsedAction | None, str | None]:
    """(step action, readable sentence) of a raw BrowserGym action string.

    A multi-call action keeps its first call's fields (the answer of any `send_msg_to_user` in it is
    kept) and a sentence joining every call: "Type 'x' into searchbox 'Search', then click button 'Go'".
    """
    calls = parse_calls(action)
    if not calls:
        return None, None
    tree = AXTree(axtree_txt) if axtree_txt else None
    for call in calls:
        resolve(call, tree)
    first = calls[0].model_copy(update={"raw": action.strip() if action else ""})
    answers = [c for c in calls if c.verb in ("answer", "infeasible")]
    if answers and first.verb not in ("answer", "infeasible"):
        first.answer = answers[-1].answer
    parts = [sentence(c) for c in calls]
    text = parts[0] + "".join(", then " + p[:1].lower() + p[1:] for p in parts[1:])
    return first, text


def answer_call(action: str | None) -> ParsedAction | None:
    """The last `send_msg_to_user` / `report_infeasible` call of an action string, if any."""
    found = [c for c in parse_calls(action) if c.verb in ("answer", "infeasible")]
    return found[-1] if found else None


# Sentences in which an agent announces its next action ("I will click on the 'My Account' link.").
_INTENT = re.compile(
    r"\b(I will|I'll|I am going to|I'm going to|I need to|I should|I must|I can now|Let me|Let's|"
    r"[Mm]y next action|[Tt]he next action|Next,? I)\b"
)
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")


def stated_action(thought: str | None) -> str | None:
    """The last sentence of the reasoning that announces an action, or None.

    Conditional sentences ("If it fails, I will ...") are skipped: they state a fallback, not the action.
    """
    if not thought:
        return None
    for sent in reversed(_SENTENCE_SPLIT.split(thought.strip())):
        s = sent.strip(" -*\t")
        if s and _INTENT.search(s) and not re.match(r"(?i)(if|unless|otherwise|once|when)\b", s):
            return s if len(s) <= 400 else s[:399] + "…"
    return None
