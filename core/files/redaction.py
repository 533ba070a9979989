"""Secrets found by their value, not only by their field name (used by core.files.har before anything is stored).

Name rules (core.files.har `_SECRET_FIELD`: token, password, session, ...) miss secrets whose field names are
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
from typing import Any

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
_TOKEN_SHAPE = re.compile(
    r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"  # JWT (header and payload are JSON)
    r"|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"  # AWS access key id
    r"|\bgh[pousr]_[A-Za-z0-9]{30,}"  # GitHub tokens
    r"|\bglpat-[A-Za-z0-9_-]{20,}"  # GitLab personal access token
    r"|\bsk-[A-Za-z0-9_-]{20,}"  # OpenAI-style secret keys
    r"|\bxox[abposr]-[A-Za-z0-9-]{10,}"  # Slack tokens
)
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
    """Whether field `name` holding `value` is a secret by the value rules (the name rules are core.files.har's)."""
    if not isinstance(name, str):
        return False
    if SIGNED_FIELD.fullmatch(name.strip()):
        return True
    return bool(SECRETISH_FIELD.search(name)) and looks_secret(value)


def scrub_tokens(text: str | None) -> str | None:
    """Well-known credential shapes replaced wherever they appear in `text`."""
    if not text or not any(hint in text for hint in _TOKEN_HINTS):
        return text
    return _TOKEN_SHAPE.sub(REDACTED, text)


def redact_text(text: str, secret_name: re.Pattern[str]) -> str:
    """Free text with the values of secret `name=value` / `name: value` pairs replaced.

    `secret_name` is the name rule of the caller (core.files.har `_SECRET_FIELD`); the value rules apply too.
    """
    if not text or ("=" not in text and ":" not in text):
        return scrub_tokens(text) or text

    def replace(match: re.Match[str]) -> str:
        name, value = match.group("name"), match.group("value")
        if value == REDACTED or not (secret_name.search(name) or secret_by_value(name, value)):
            return match.group(0)
        return f"{name}{match.group('sep')}{REDACTED}"

    return scrub_tokens(_PAIR.sub(replace, text)) or ""
