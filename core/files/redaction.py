"""What a network trace must not leave in the database: the redaction rules, applied to `network_events`
(core.files.network_events) and to what the engine reports about trace events (`redact_report`).

By name: secret header names (`SECRET_HEADER`: auth, cookie, token, session, ...), secret query and form
field names (`SECRET_FIELD`: token, password, form_key, ...), URL user info, auth-scheme values
(`SECRET_VALUE`), and every value a trace sets as a cookie or sends in a secret header (`Secrets`),
wherever it appears again.

By value: name rules miss secrets whose field names are
generic or short: signed-URL parameters (`X-Amz-Credential`, `X-Amz-Signature`, `sig`), an OAuth `code`,
an API `key`, a JSON body's `credentials`. Three rules close that gap without touching the ordinary ids
the evaluators compare (`id=123`, `sku=MH01-XS-Black`, `code=US`, `order_id=000000170`):

- signed-URL and credential names are secrets whatever their value (`SIGNED_FIELD`, whole-name match);
- secret-ish names (`key`, `code`, `sig`, `hash`, `nonce`, ...) are secrets when the value *looks* like
  one (`looks_secret`: 16+ characters of a token alphabet, letters and digits, no spaces, not low in
  entropy): a country code, a page number or a product key of a few characters stays;
- well-known token shapes (JWTs, AWS access key ids, GitHub/GitLab/OpenAI/Slack tokens) are replaced
  wherever they appear in stored text (`scrub_tokens`), and `name=value` / `"name": "value"` pairs with
  secret names are redacted inside free text (`redact_text`, e.g. a text/plain body the engine quotes).

Redaction only changes what is stored: the scoring engine always gets the entries as they are in the file.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from functools import lru_cache
from typing import Any
from urllib.parse import parse_qsl, unquote, unquote_plus, urlparse

import orjson

REDACTED = "[REDACTED]"

# Names that are secrets whatever the value: AWS SigV4 / GCS / Azure SAS signed URLs, OAuth/OpenID
# credentials, credential objects in JSON bodies.
SIGNED_FIELD = re.compile(
    r"x-amz-(?:credential|signature|security-token)|x-goog-(?:credential|signature)|sig|signature"
    r"|key-pair-id|credentials?|client_secret|client_assertion|assertion|jwt|id_token|code_verifier"
    r"|private_key|privatekey|secret_key|access_key|otp|passcode",
    re.IGNORECASE,
)
# Names that are secrets when their value looks like one.
SECRETISH_FIELD = re.compile(r"key|code|sig|hash|nonce|ticket|policy|cert|credential|state|hmac|mac$", re.I)
# A token's alphabet: base64/base64url/hex/percent-encoding and the separators tokens use.
_TOKEN_CHARS = re.compile(r"[A-Za-z0-9_\-.~+/=%:]{16,}")
_MIN_ENTROPY_BITS = 3.0  # per character; "aaaaaaaaaaaaaaaa1" or "0000000000000170" stay below it

# Shapes of well-known credentials, wherever they appear.
TOKEN_SHAPE = re.compile(
    r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"  # JWT (header and payload are JSON)
    r"|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"  # AWS access key id
    r"|\bgh[pousr]_[A-Za-z0-9]{30,}"  # GitHub tokens
    r"|\bglpat-[A-Za-z0-9_-]{20,}"  # GitLab personal access token
    r"|\bsk-[A-Za-z0-9_-]{20,}"  # OpenAI-style secret keys
    r"|\bxox[abposr]-[A-Za-z0-9-]{10,}"  # Slack tokens
)
# Any of the shapes' first characters: whether a text can hold a token at all. Substring tests (memchr
# speed) rather than one alternation, which the `re` engine tries at every position (10x slower on a URL).
_TOKEN_HINTS = ("eyJ", "AKIA", "ASIA", "gh", "glpat-", "sk-", "xox")

# `name=value`, `name: value`, `"name": "value"` in free text, for names matching `names` below.
_PAIR = re.compile(
    r"""(?P<name>[A-Za-z_][\w.\-\[\]]{0,60})(?P<sep>["']?\s*[:=]\s*["']?)(?P<value>[^\s"'&;,<>}{)]+)"""
)


def looks_secret(value: Any) -> bool:
    """True for a long, mixed, high-entropy token-like string (not an id, a word, a URL or a sentence)."""
    if not isinstance(value, str) or len(value) < 16 or len(value) > 8192:
        return False
    if not _TOKEN_CHARS.fullmatch(value) or "://" in value:
        return False
    if not (any(c.isdigit() for c in value) and any(c.isalpha() for c in value)):
        return False
    counts = Counter(value)
    n = len(value)
    entropy = -sum(k / n * math.log2(k / n) for k in counts.values())
    return entropy >= _MIN_ENTROPY_BITS


def secret_by_value(name: Any, value: Any) -> bool:
    """Whether field `name` holding `value` is a secret by the value rules (the name rules: `SECRET_FIELD`)."""
    if not isinstance(name, str):
        return False
    rule = _value_rule(name)
    return rule == _ALWAYS or (rule == _IF_IT_LOOKS_SECRET and looks_secret(value))


_NEVER, _IF_IT_LOOKS_SECRET, _ALWAYS = 0, 1, 2


@lru_cache(maxsize=4096)
def _value_rule(name: str) -> int:
    """What the value rules say of a field name alone (the same few names recur in every URL of a trace)."""
    if SIGNED_FIELD.fullmatch(name.strip()):
        return _ALWAYS
    return _IF_IT_LOOKS_SECRET if SECRETISH_FIELD.search(name) else _NEVER


def may_hold_token(text: str) -> bool:
    """False when `text` cannot hold a well-known token shape (`scrub_tokens` would leave it as it is)."""
    return any(hint in text for hint in _TOKEN_HINTS)


def scrub_tokens(text: str | None) -> str | None:
    """Well-known credential shapes replaced wherever they appear in `text`."""
    if not text or not may_hold_token(text):
        return text
    return TOKEN_SHAPE.sub(REDACTED, text)


def redact_text(text: str, secret_name: re.Pattern[str]) -> str:
    """Free text with the values of secret `name=value` / `name: value` pairs replaced.

    `secret_name` is the name rule of the caller (`SECRET_FIELD`); the value rules apply too.
    """
    if not text or ("=" not in text and ":" not in text):
        return scrub_tokens(text) or text

    def replace(match: re.Match[str]) -> str:
        name, value = match.group("name"), match.group("value")
        if value == REDACTED or not (secret_name.search(name) or secret_by_value(name, value)):
            return match.group(0)
        return f"{name}{match.group('sep')}{REDACTED}"

    return scrub_tokens(_PAIR.sub(replace, text)) or ""


# -- the name rules of network traces (headers, query and form fields) and the helpers built on them ---------
# Header names whose values are secrets: the official submission sanitiser's patterns (auth, token, key,
# secret) plus cookies, CSRF/XSRF and sessions, which that sanitiser keeps but we never store.
SECRET_HEADER = re.compile(
    r"^(?!:authority$).*(auth|token|key|secret|cookie|csrf|xsrf|session|password)", re.IGNORECASE
)
# Query/form field names whose values are secrets (GitLab private_token, Magento form_key, passwords).
SECRET_FIELD = re.compile(
    r"token|csrf|xsrf|secret|passw|passwd|pwd|api[-_]?key|apikey|auth|session|form_key|sid$|signature",
    re.IGNORECASE,
)
SECRET_VALUE = re.compile(r"^\s*(bearer|basic|token|digest)\s+\S", re.IGNORECASE)
# (Values stop at white space and quotes too, so a URL quoted in a sentence is redacted in place.)
_SECRET_QUERY_PARAM = re.compile(
    r"([?&;#][^=&#;\s]*?(?:" + SECRET_FIELD.pattern + r")[^=&#;\s]*=)([^&#;\s\"'<>]*)", re.I
)
# Any `name=value` of a query or fragment, for names that must be percent-decoded before the test.
_URL_PARAM = re.compile(r"([?&;#])([^=&#;\s]*)=([^&#;\s\"'<>]*)")
# `scheme://user:password@`: the password goes.
_USERINFO = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://[^/?#@:\s]*):[^/?#@\s]*@")
# Values shorter than this are not searched for elsewhere (a cookie "1" would redact every digit).
MIN_SECRET_LEN = 6
MAX_SECRETS = 512  # distinct secret values remembered per trace (bounds the scrub cost)


def secret_field(name: Any, value: Any) -> bool:
    """A secret by its name (passwords, tokens, form keys) or by its value (`secret_by_value`)."""
    return isinstance(name, str) and (_secret_name(name) or secret_by_value(name, value))


@lru_cache(maxsize=4096)
def _secret_name(name: str) -> bool:
    return SECRET_FIELD.search(name) is not None


def redact_fields(value: Any) -> Any:
    """Replace the values of secret fields at any depth (a `credentials` object goes whole); strings
    keep no well-known token shape (a JWT in a `data` field)."""
    if isinstance(value, dict):
        return {k: (REDACTED if secret_field(k, v) else redact_fields(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_fields(v) for v in value]
    if isinstance(value, str):
        return scrub_tokens(value)
    return value


def redact_url(url: str | None) -> str | None:
    """The URL with the password of its user info and the values of secret-named query or fragment
    fields (names compared percent-decoded, as the query column shows them) replaced."""
    if not url:
        return url
    if "@" in url:
        url = _USERINFO.sub(r"\1:" + REDACTED + "@", url)
    if "?" in url or ";" in url or "#" in url:
        url = _SECRET_QUERY_PARAM.sub(lambda m: m.group(1) + REDACTED, url)
        # Names compared percent-decoded; values by shape (signed URLs, OAuth codes, API keys).
        url = _URL_PARAM.sub(_redact_encoded_param, url)
    return scrub_tokens(url)


def _redact_encoded_param(match: re.Match) -> str:
    name, value = match.group(2), match.group(3)
    if value == REDACTED:
        return match.group(0)
    plain = unquote_plus(name) if "%" in name or "+" in name else name
    if secret_field(plain, unquote_plus(value) if "%" in value else value):
        return f"{match.group(1)}{name}={REDACTED}"
    return match.group(0)


def redact_report(value: Any) -> Any:
    """What the engine reports about trace events (URLs, post data), redacted by the rules of the
    stored events: URL passwords, secret query/fragment fields, values of secret-named fields."""
    if isinstance(value, str):
        # A quoted request body (text/plain, a form) may carry `password=...` anywhere in its text.
        return redact_text(redact_url(value) or value, SECRET_FIELD)
    if isinstance(value, dict):
        return {
            k: REDACTED if secret_field(k, v) and not isinstance(v, dict | list | None) else redact_report(v)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact_report(v) for v in value]
    return value


def query_json(url: str) -> str | None:
    """The URL's query as a JSON object (a repeated parameter keeps every value, in order), secret
    values replaced; None without a query."""
    query = urlparse(url).query
    if not query:
        return None
    params: dict[str, Any] = {}
    for name, value in parse_qsl(query, keep_blank_values=True):
        value = REDACTED if secret_field(name, value) else scrub_tokens(value)
        if name in params:  # repeated parameter: keep every value, in order
            prior = params[name]
            params[name] = [*prior, value] if isinstance(prior, list) else [prior, value]
        else:
            params[name] = value
    return dumps(params)


def post_data_json(post: Any) -> str | None:
    """A request's `postData` as the engine parses it (so we show what it compares), secret fields
    replaced, as JSON text; None when it has none or it cannot be parsed."""
    if not isinstance(post, dict):
        return None
    from webarena_verified.core.utils.network_event_utils import parse_har_content

    try:
        parsed = parse_har_content(post)
    except Exception:  # hostile bodies must not stop an import; the engine will report them itself
        return None
    return None if parsed is None else dumps(redact_fields(parsed))


def dumps(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()


def cookie_values(header_value: str) -> list[str]:
    """The values of a `Cookie` header (`a=1; b=2`)."""
    return [value.strip() for _, sep, value in (p.partition("=") for p in header_value.split(";")) if sep]


class Secrets:
    """Secret values seen in a trace (cookies, auth headers): scrubbed from every stored text."""

    def __init__(self) -> None:
        self.values: dict[str, None] = {}  # insertion-ordered set
        self.pattern: re.Pattern[str] | None = None

    def add(self, value: Any) -> None:
        if not isinstance(value, str) or len(value) < MIN_SECRET_LEN or len(self.values) >= MAX_SECRETS:
            return
        for v in (value, unquote(value)):
            if len(v) >= MIN_SECRET_LEN and v not in self.values:
                self.values[v] = None
                self.pattern = None

    def scrub_all(self, text: str | None) -> str | None:
        """`scrub`, then well-known token shapes wherever they are."""
        return scrub_tokens(self.scrub(text))

    def scrub(self, text: str | None) -> str | None:
        if not text or not self.values:
            return text
        if len(self.values) <= 8:  # substring tests are far cheaper than a regex for a few values
            for v in self.values:
                if v in text:
                    text = text.replace(v, REDACTED)
            return text
        return self._pattern().sub(REDACTED, text)

    def occur_in(self, text: str) -> bool:
        """Whether any secret value occurs in `text`: when none does, `scrub` leaves `text` and every
        part of it as they are (one test for a whole batch of values joined together)."""
        if not self.values:
            return False
        if len(self.values) <= 8:
            return any(v in text for v in self.values)
        return self._pattern().search(text) is not None

    def _pattern(self) -> re.Pattern[str]:
        if self.pattern is None:
            alternatives = sorted(self.values, key=len, reverse=True)
            self.pattern = re.compile("|".join(re.escape(v) for v in alternatives))
        return self.pattern
