"""The WebArena action grammar and the human gold step text, parsed into `ParsedAction`.

Two inputs share this module because both name WebArena elements the same way:
- agent actions: the LLM form `click [1096]`, `type [12] [text] [1]`, `stop [answer]`, and the
  readable form RenderHelper writes (`click [1096] where [1096] is [1096] button 'All Store Views'
  hasPopup: menu`), whose description names the element's role and accessible name;
- human gold step text ("Click on 'Reports'", "Type 'yoga mat' in the search bar"): heuristic and
  conservative, a field is filled only when the text clearly gives it, and quoted labels/values are
  never dropped.

Nothing here evaluates what it parses; Python string literals are decoded with `ast.literal_eval`.
"""

from __future__ import annotations

import ast
import re
import unicodedata

from core.measure.action_grammar import ParsedAction, readable

# WebArena verb -> canonical verb (core.measure.action_grammar.VERBS). `page_focus` is how action2str writes
# tab_focus; `none` is an output the harness could not parse (executed as a no-op).
ACTION_VERBS = {
    "click": "click", "hover": "hover", "type": "type", "press": "press", "scroll": "scroll",
    "goto": "goto", "go_back": "go_back", "go_forward": "go_forward", "new_tab": "new_tab",
    "tab_focus": "tab_focus", "page_focus": "tab_focus", "close_tab": "close_tab", "stop": "answer",
    "none": "noop",
}  # fmt: skip

_HEAD = re.compile(r"\s*([a-z_]+)\b\s*(.*)\Z", re.S)
_ID_ARG = re.compile(r"\[(\d+)\]\s*")
EARLY_STOP_PREFIX = "Early stop:"
ERROR_STOP_PREFIX = "ERROR:"
SUMMARY_PHRASE = "In summary, the next action I will perform is"


def parse_webarena_action(text: str | None, *, strict: bool = False) -> ParsedAction | None:
    """Parse a WebArena action (LLM or rendered form); None when the text is not in this grammar.

    `strict`: arguments only in brackets and element ids present, so a sentence that merely starts
    with an action word ("scroll down", "click on 'X'") is not claimed; for callers that then read the
    text another way (the judge reads it as a sentence) instead of showing an unparsed action.
    """
    if not text:
        return None
    match = _HEAD.match(text)
    if not match or match.group(1) not in ACTION_VERBS:
        return None
    word, rest = match.group(1), match.group(2).strip()
    if rest.startswith("("):  # a function call: BrowserGym's grammar, not ours
        return None
    if strict and rest and not rest.startswith("["):
        return None
    action = ParsedAction(raw=text, verb=ACTION_VERBS[word])
    if word in ("click", "hover", "type"):
        id_match = _ID_ARG.match(rest)
        if not id_match:
            return None if strict else action.model_copy(update={"verb": "unknown"})
        element_id = id_match.group(1)
        args, description = _split_where(rest[id_match.end() :], element_id)
        action.element_id = element_id
        if word == "type":
            action.value = _type_text(args)
        if description is not None:
            action.element_role, action.element_label = parse_element_description(description)
    elif word == "press":
        action.key = _bracketed(rest)
    elif word == "scroll":
        arg = (_bracketed(rest) or rest).strip().lower()
        action.direction = arg if arg in ("up", "down", "left", "right") else (arg or None)
    elif word == "goto":
        action.target_url = _bracketed(rest)
    elif word in ("tab_focus", "page_focus"):
        action.value = _bracketed(rest)
    elif word == "stop":
        # The answer is everything between the first '[' and the last ']' (answers contain brackets).
        answer = _bracketed(rest)
        action.answer = answer if answer is not None else rest
    return action


def _bracketed(text: str) -> str | None:
    text = text.strip()
    if text.startswith("[") and text.endswith("]"):
        return text[1:-1]
    start, end = text.find("["), text.rfind("]")
    return text[start + 1 : end] if 0 <= start < end else None


def _split_where(rest: str, element_id: str) -> tuple[str, str | None]:
    """Split `[args] where [id] is DESCRIPTION` (rendered form) into args and description."""
    marker = f"where [{element_id}] is"
    at = rest.find(marker)
    if at < 0:
        return rest, None
    return rest[:at], rest[at + len(marker) :]


def _type_text(args: str) -> str | None:
    """`[text] [1]`, `[text]` or the rendered `[text ]` -> the typed text (Enter flag dropped)."""
    args = args.strip()
    for flag in ("[0]", "[1]"):
        if args.endswith(flag) and args[: -len(flag)].rstrip().endswith("]"):
            args = args[: -len(flag)].rstrip()
            break
    text = _bracketed(args)
    # The rendered form writes the Enter of `[1]` as a trailing space.
    return text.rstrip() if text is not None else None


def valid_text(text: str) -> str:
    """The text, with lone surrogates (which `'\\ud800'` decodes to, and no store can hold) kept as
    their escapes."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def _python_string(text: str, start: int) -> tuple[str, int] | None:
    """Decode the Python string literal starting at text[start] (a quote); (value, end index)."""
    quote = text[start]
    i = start + 1
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == quote:
            literal = text[start : i + 1]
            try:
                value = ast.literal_eval(literal)
            except (ValueError, SyntaxError):
                value = literal[1:-1]
            return valid_text(value if isinstance(value, str) else literal[1:-1]), i + 1
        i += 1
    return None


def clean_label(label: str | None) -> str | None:
    """Accessible names without icon-font glyphs (private-use characters like U+E60A)."""
    if label is None:
        return None
    cleaned = "".join(ch for ch in label if unicodedata.category(ch) != "Co")
    cleaned = " ".join(cleaned.split())
    return cleaned or None


def parse_element_description(description: str) -> tuple[str | None, str | None]:
    """`[1096] button 'All Store Views' hasPopup: menu` -> ('button', 'All Store Views').

    Forks write other forms: `link 'Reports'` (no id) gives role and label too; other plain text
    (`Account Activity`) is taken as the label.
    """
    desc = description.strip()
    id_match = _ID_ARG.match(desc)
    rest = desc[id_match.end() :] if id_match else desc
    role, _, after = rest.partition(" ")
    after = after.lstrip()
    if not id_match and not (role.isidentifier() and after[:1] in ("'", '"')):
        return None, clean_label(desc)
    label = None
    if after[:1] in ("'", '"'):
        decoded = _python_string(after, 0)
        label = decoded[0] if decoded else after[1:]
    return (role or None), clean_label(label)


def element_from_axtree(axtree: str | None, element_id: str | None) -> tuple[str | None, str | None]:
    """Role and name of element `[id]` in a WebArena accessibility-tree observation."""
    if not axtree or not element_id:
        return None, None
    match = re.search(rf"^[ \t]*(\[{re.escape(element_id)}\] .*)$", axtree, re.M)
    return parse_element_description(match.group(1)) if match else (None, None)


def stated_action(raw_output: str | None) -> str | None:
    """The action the output says it takes: the text after "In summary, the next action I will perform is"."""
    if not raw_output:
        return None
    at = raw_output.lower().rfind(SUMMARY_PHRASE.lower())
    if at < 0:
        return None
    tail = raw_output[at + len(SUMMARY_PHRASE) :].strip()
    if tail.startswith("```"):
        end = tail.find("```", 3)
        tail = tail[3:end] if end >= 0 else tail[3:]
    elif tail.startswith("`"):
        end = tail.find("`", 1)
        tail = tail[1:end] if end >= 0 else tail[1:]
    else:
        tail = tail.splitlines()[0] if tail else ""
        tail = tail.rstrip(".")
    return tail.strip() or None


def is_unparsed_output(action: ParsedAction) -> bool:
    """`none`: the harness could not parse the model's output and executed nothing (no chosen action)."""
    return action.verb == "noop" and action.raw.strip() == "none"


def describe(action: ParsedAction) -> str:
    """Readable sentence, with the WebArena harness's own stops and unparsed outputs spelled out."""
    if is_unparsed_output(action):
        return "No action (the output did not parse)"
    if action.verb == "answer" and action.answer is not None:
        if action.answer.startswith(EARLY_STOP_PREFIX):
            return f"Harness early stop: {action.answer[len(EARLY_STOP_PREFIX) :].strip()}"
        if action.answer.startswith(ERROR_STOP_PREFIX):
            return f"Harness error stop: {action.answer[len(ERROR_STOP_PREFIX) :].strip()}"
    return readable(action)


# -- human gold step text ----------------------------------------------------------------------------

_GOLD_VERBS = {
    "click": "click", "tap": "click", "hover": "hover", "type": "type", "enter": "type",
    "input": "type", "fill": "type", "write": "type", "select": "select", "choose": "select",
    "chose": "select", "pick": "select", "press": "press", "hit": "press", "scroll": "scroll",
    "go": "go", "navigate": "goto", "visit": "goto", "open": "open", "clear": "clear",
    "delete": "clear", "erase": "clear", "mark": "check", "tick": "check", "uncheck": "check",
    "untick": "check", "remove": "remove", "check": "check?", "switch": "switch", "move": "switch",
    "double": "double",
}  # fmt: skip
# Misspellings seen in the paper's file are caught by edit distance 1 to these verbs.
_FUZZY_TARGETS = ("click", "hover", "type", "select", "scroll", "press")
_LOCATION_WORDS = frozenset({"in", "under", "from", "on", "at", "within", "inside"})
_QUOTE_PAIRS = {"'": "'", '"': '"', "‘": "’", "“": "”"}  # noqa: RUF001
_URL_TOKEN = re.compile(r"^(?:https?://\S+|[\w-]+(?:\.[\w-]+)+(?:/\S*)?)$", re.I)
_KEY_NAMES = {
    "enter": "Enter", "return": "Enter", "tab": "Tab", "delete": "Delete", "del": "Delete",
    "backspace": "Backspace", "escape": "Escape", "esc": "Escape", "space": "Space", "ctrl": "Ctrl",
    "control": "Ctrl", "shift": "Shift", "alt": "Alt", "cmd": "Meta", "command": "Meta",
    "up": "ArrowUp", "down": "ArrowDown", "left": "ArrowLeft", "right": "ArrowRight",
}  # fmt: skip


def _quoted_spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, content) of quoted strings; an unclosed final quote runs to the end of the text."""
    spans = []
    i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        closer = _QUOTE_PAIRS.get(ch)
        opens = closer is not None and (i == 0 or not text[i - 1].isalnum())
        if not opens:
            i += 1
            continue
        j = i + 1
        end = -1
        while j < n:
            # A closing quote is followed by the end, a space or punctuation (so "Women's" stays inside).
            if text[j] == closer and (j + 1 == n or not text[j + 1].isalnum()):
                end = j
                break
            j += 1
        if end < 0:
            content = text[i + 1 :].strip()
            if content:
                spans.append((i, n, content))
            break
        content = text[i + 1 : end].strip()
        if content:
            spans.append((i, end + 1, content))
        i = end + 1
    return spans


def _words(text: str) -> list[tuple[int, str]]:
    return [(m.start(), m.group(0).lower()) for m in re.finditer(r"[A-Za-z]+", text)]


def _verb_of(word: str) -> str | None:
    if word in _GOLD_VERBS:
        return _GOLD_VERBS[word]
    if len(word) >= 4:
        from rapidfuzz.distance import Levenshtein

        for target in _FUZZY_TARGETS:
            if Levenshtein.distance(word, target, score_cutoff=1) <= 1:
                return target
    return None


def _find_verb(text: str, spans: list[tuple[int, int, str]]) -> tuple[str | None, int]:
    """The first verb word outside quotes: at the start, or after a leading location phrase."""
    words = [(pos, w) for pos, w in _words(text) if not any(s <= pos < e for s, e, _ in spans)]
    if not words:
        return None, 0
    first_pos, first = words[0]
    verb = _verb_of(first)
    if verb:
        return verb, first_pos
    if first in _LOCATION_WORDS:
        for pos, word in words[1:]:
            verb = _verb_of(word)
            if verb and verb not in ("check?", "remove", "double"):
                return verb, pos
    return None, 0


def _key_of(text: str) -> str | None:
    parts = [p.strip(" '\".") for p in re.split(r"\s*\+\s*", text)]
    parts = [p for p in parts if p]
    if not parts:
        return None
    return "+".join(_KEY_NAMES.get(p.lower(), p if len(p) > 1 else p.upper()) for p in parts)


def _url_in(text: str) -> str | None:
    for token in text.split():
        token = token.strip("'\"()<>,;").rstrip(".")
        if _URL_TOKEN.match(token):
            return token
    return None


def parse_gold_step(text: str) -> ParsedAction:
    """Verb, element label and value of one human gold step, where the text clearly gives them."""
    spans = _quoted_spans(text)
    verb, verb_pos = _find_verb(text, spans)
    action = ParsedAction(raw=text)
    if verb is None:
        return action
    before = [c for s, _, c in spans if s < verb_pos]
    after = [c for s, _, c in spans if s > verb_pos]
    lowered = text.lower()
    if verb == "double":
        verb = "dblclick" if re.search(r"\bdouble[- ]click", lowered) else None
    elif verb in ("check?", "remove"):  # "Check the cart..." is not a checkbox; "Remove the checkbox" is
        verb = "check" if "checkbox" in lowered else None
    elif verb == "switch":
        verb = "tab_focus" if re.search(r"\btab\b", lowered) else ("click" if "toggle" in lowered else None)
    elif verb == "open":
        if re.search(r"\bnew tab\b", lowered):
            verb = "new_tab"
        elif _url_in(text[verb_pos:]):
            verb = "goto"
        else:
            verb = "click" if after else None
    elif verb == "go":
        rest = lowered[verb_pos + 2 :].lstrip()
        url = _url_in(text[verb_pos:])
        if url:
            verb = "goto"
        elif rest.startswith("back"):
            verb = "go_back"
        elif rest.startswith("forward"):
            verb = "go_forward"
        elif rest.startswith("to"):
            verb = "goto"
        else:
            verb = None
    elif verb == "press" and after and re.search(r"\b(button|link|tab|icon|option)\b", lowered):
        # "Press the 'Go' button" is a click; "Press 'Enter'" / "Press Ctrl + A" is a key press.
        verb = "click"
    if verb is None:
        return action
    action.verb = verb
    if verb in ("click", "dblclick", "hover", "clear", "check"):
        action.element_label = (after or before or [None])[0]
    elif verb == "type":
        action.value = after[0] if after else None
        action.element_label = after[1] if len(after) > 1 else (before[0] if before else None)
    elif verb == "select":
        # "Select the 'Period' dropdown and choose 'Year'": a second verb separates label and value.
        second = re.search(r"\b(choose|chose|select|pick)\b", lowered[verb_pos + 1 :])
        if second and len(after) >= 2:
            action.element_label, action.value = after[0], after[1]
        else:
            action.value = after[0] if after else None
            action.element_label = after[1] if len(after) > 1 else (before[0] if before else None)
    elif verb == "press":
        rest = text[verb_pos + len("press") :]
        action.key = _key_of(after[0]) if after else _key_of(re.sub(r"(?i)\b(the|key)\b", " ", rest))
    elif verb == "scroll":
        direction = re.search(r"\b(up|down|left|right)\b", lowered)
        action.direction = direction.group(1) if direction else None
        action.element_label = after[0] if after else None
    elif verb == "goto":
        action.target_url = _url_in(text[verb_pos:])
        if action.target_url is None and after:
            action.element_label = after[0]
    return action


def gold_value(action: ParsedAction) -> str | None:
    """The one `value` a gold step stores: typed text, option, key, direction or URL."""
    return action.value or action.key or action.direction or action.target_url
