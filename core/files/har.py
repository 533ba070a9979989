"""Network traces (HAR files, Playwright traces): parse once, derive `network_events` rows.

A trace is read as a stream of entries (memory stays bounded for huge HARs), each entry exactly as in
the file. The static-asset rule and the navigation predicate mirror the official
`webarena_verified.types.tracing.NetworkEvent` (tests compare both on real HARs); secrets are redacted
before anything is stored.
"""

from __future__ import annotations

import gc
import re
import zipfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, unquote_plus, urlparse

import numpy as np
import orjson
import pyarrow as pa

from core.errors import InputError
from core.files import redaction
from core.files.safe_files import LIMITS

# The official suffix list (NetworkEvent.is_evaluation_event): these requests never count for evaluation.
STATIC_ASSET_SUFFIXES = (
    ".css", ".js", ".png", ".jpg", ".jpeg", ".gif", ".svg", ".woff", ".woff2", ".ttf", ".ico", ".webp",
)  # fmt: skip
MUTATION_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
REDACTED = "[REDACTED]"
PLAYWRIGHT_NETWORK_FILE = "trace.network"
# Trace files looked for in a task directory of a run, in order of preference.
TRACE_FILES = ("network.har", "trace.zip", PLAYWRIGHT_NETWORK_FILE)

# Header names whose values are secrets: the official submission sanitiser's patterns (auth, token, key,
# secret) plus cookies, CSRF/XSRF and sessions, which that sanitiser keeps but we never store.
_SECRET_HEADER = re.compile(
    r"^(?!:authority$).*(auth|token|key|secret|cookie|csrf|xsrf|session|password)", re.IGNORECASE
)
# Query/form field names whose values are secrets (GitLab private_token, Magento form_key, passwords).
_SECRET_FIELD = re.compile(
    r"token|csrf|xsrf|secret|passw|passwd|pwd|api[-_]?key|apikey|auth|session|form_key|sid$|signature",
    re.IGNORECASE,
)
_SECRET_VALUE = re.compile(r"^\s*(bearer|basic|token|digest)\s+\S", re.IGNORECASE)
# (Values stop at white space and quotes too, so a URL quoted in a sentence is redacted in place.)
_SECRET_QUERY_PARAM = re.compile(
    r"([?&;#][^=&#;\s]*?(?:" + _SECRET_FIELD.pattern + r")[^=&#;\s]*=)([^&#;\s\"'<>]*)", re.I
)
# Any `name=value` of a query or fragment, for names that must be percent-decoded before the test.
_URL_PARAM = re.compile(r"([?&;#])([^=&#;\s]*)=([^&#;\s\"'<>]*)")
# `scheme://user:password@`: the password goes.
_USERINFO = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://[^/?#@:\s]*):[^/?#@\s]*@")
# Values shorter than this are not searched for elsewhere (a cookie "1" would redact every digit).
_MIN_SECRET_LEN = 6

_BLOCK_SIZE = 4 << 20
# Byte classes for the structural scan of a HAR.
_QUOTE, _BACKSLASH, _OPEN, _CLOSE = 1, 2, 3, 4
_CLASS_TABLE = bytes(
    {0x22: _QUOTE, 0x5C: _BACKSLASH, 0x7B: _OPEN, 0x5B: _OPEN, 0x7D: _CLOSE, 0x5D: _CLOSE}.get(b, 0)
    for b in range(256)
)  # bytes scanned per step when streaming a HAR
_WHITESPACE = b" \t\r\n"
_STREAMED_MARKER = b'"trajreview:streamed-entries:5f1c9e"'


# -- official predicates, mirrored ---------------------------------------------------------------------
@lru_cache(maxsize=65536)
def url_path(url: str) -> str:
    """The path component exactly as the official engine computes it (`urlparse(url).path`)."""
    return urlparse(url).path


def is_static_asset(url: str) -> bool:
    """True when the official engine ignores the request (not an evaluation event)."""
    return url_path(url).endswith(STATIC_ASSET_SUFFIXES)


def is_navigation(method: str, headers: dict[str, str]) -> bool:
    """The official navigation predicate; `headers` maps lower-cased names to lower-cased values."""
    if method != "GET":
        return False
    if "sec-fetch-user" in headers:
        return (
            headers.get("sec-fetch-dest") == "document"
            and headers.get("sec-fetch-mode") == "navigate"
            and headers.get("sec-fetch-user") == "?1"
            and "text/html" in headers.get("accept", "")
        )
    return headers.get("accept", "").startswith("text/html")


def event_type(method: str | None, navigation: bool) -> str:
    if navigation:
        return "navigation"
    if method in MUTATION_METHODS:
        return "mutation"
    return "other"


# -- loading ---------------------------------------------------------------------------------------------
@contextmanager
def gc_paused() -> Iterator[None]:
    """Parsing allocates millions of small containers; the cyclic GC would rescan them all (5x slower)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def load_trace_entries(path: Path) -> list[dict]:
    """Entries of a HAR file or a Playwright trace (zip, `trace.network`, or a directory holding it)."""
    with gc_paused():
        return list(iter_trace_entries(Path(path)))


def iter_trace_entries(path: Path) -> Iterator[dict]:
    """Stream the entries of any supported trace; see `iter_har_entries` for error semantics."""
    path = Path(path)
    if path.is_dir() or path.suffix == ".zip" or path.name.endswith(".network"):
        return iter_playwright_entries(path)
    whole = _whole_har_entries(path)
    return iter(whole) if whole is not None else iter_har_entries(path)


# Below this size one orjson call over the whole file is much faster than streaming, and its
# transient memory (a few times the file) is small; above it, memory must stay bounded.
_WHOLE_FILE_MAX = 32 << 20


def _whole_har_entries(path: Path) -> list[dict] | None:
    """The entries of a small, well-formed HAR in one read; None sends the file to the streaming
    scanner, which also gives the precise reason when something is wrong."""
    try:
        if path.stat().st_size > _WHOLE_FILE_MAX:
            return None
        entries = orjson.loads(path.read_bytes())["log"]["entries"]
    except Exception:
        return None
    if isinstance(entries, list) and all(isinstance(entry, dict) for entry in entries):
        return entries
    return None


# The largest `trace.network` read out of a zip (its declared size, which zipfile enforces while
# reading): a compressed bomb is refused, never inflated, and not handed on to the engine either.
MAX_ZIPPED_TRACE = LIMITS["network trace"]


class TraceTooLarge(InputError):
    """A zipped trace that inflates beyond MAX_ZIPPED_TRACE: refused outright."""


def iter_playwright_entries(path: Path) -> Iterator[dict]:
    """HAR-entry-like dicts of a Playwright trace: the `snapshot` of each `resource-snapshot` line.

    Read by the official `load_playwright_trace` rules, so the same files are refused and the same
    events come out in the same order: the zipped member decoded as strict UTF-8, a plain file with
    undecodable bytes dropped, `str.splitlines` (which also splits on U+2028, \\x85, ...), every line
    JSON (a blank line in the middle is an error) and an object with a `type`.
    """
    path = Path(path)
    if path.suffix == ".zip":
        try:
            with zipfile.ZipFile(path) as archive:
                try:
                    info = archive.getinfo(PLAYWRIGHT_NETWORK_FILE)
                except KeyError:
                    raise InputError(path, f"no {PLAYWRIGHT_NETWORK_FILE} in the Playwright trace") from None
                if info.file_size > MAX_ZIPPED_TRACE:
                    raise TraceTooLarge(path, f"{PLAYWRIGHT_NETWORK_FILE} inflates to {info.file_size} bytes")
                raw = archive.read(info)  # in memory, nothing extracted to disk
        except (OSError, zipfile.BadZipFile, EOFError, NotImplementedError, RuntimeError) as exc:
            raise InputError(path, f"not a readable zip archive ({exc})") from None
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(path, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    else:
        path = path / PLAYWRIGHT_NETWORK_FILE if path.is_dir() else path
        try:
            text = path.read_bytes().decode("utf-8", errors="ignore")
        except OSError as exc:
            raise InputError(path, f"cannot read ({exc.strerror or exc})") from None
    return _playwright_lines(path, text.splitlines())


def _playwright_lines(path: Path, lines: list[str]) -> Iterator[dict]:
    for number, line in enumerate(lines, 1):
        try:
            item = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise InputError(path, f"line {number}: {_json_reason(exc)}") from None
        if not isinstance(item, dict) or "type" not in item:
            raise InputError(path, f"line {number}: not an object with a type")
        if item["type"] == "resource-snapshot":
            snapshot = item.get("snapshot")
            if not isinstance(snapshot, dict):
                raise InputError(path, f"line {number}: resource-snapshot without a snapshot object")
            yield snapshot


def _json_reason(exc: Exception) -> str:
    message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if "utf-8" in message.lower() or "utf8" in message.lower():
        return f"not UTF-8 text ({message})"
    return f"invalid JSON ({message})"


def iter_har_entries(path: Path, block_size: int = _BLOCK_SIZE) -> Iterator[dict]:
    """Stream `log.entries` of a HAR file with bounded memory: one block plus one entry at a time.

    A vectorised scan finds the entries array and each entry's byte range (outside JSON strings);
    each entry is then parsed by orjson. Whatever lies outside the entries array is validated at the end
    (so an InputError may come after some entries were yielded: callers discard partial results).
    """
    path = Path(path)
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise InputError(path, f"cannot read ({exc.strerror or exc})") from None
    with handle:
        yield from _HarScanner(path).run(handle, block_size)


class _HarScanner:
    """State machine over blocks: header (before `log.entries[`), entries, trailer (after `]`)."""

    def __init__(self, path: Path):
        self.path = path
        self.skeleton = bytearray()  # the file minus the entries' contents: validated at the end
        self.buf = bytearray()  # unconsumed bytes of the entries array
        self.phase = "header"
        self.depth = 0
        self.in_string = False
        self.escaped_next = False
        self.array_depth = -1  # depth inside log.entries
        self.in_log = False
        self.entry_start = -1  # position in buf of the open entry, -1 when between entries
        self.last_end = 0  # position in buf after the previous entry (or after `[`)
        self.n_entries = 0
        self.total = 0
        self.block_start = 0

    def fail(self, reason: str) -> InputError:
        return InputError(self.path, reason)

    def run(self, handle, block_size: int) -> Iterator[dict]:
        while block := handle.read(block_size):
            self.total += len(block)
            yield from self._block(block)
        yield from self._finish()

    # one block -------------------------------------------------------------------------------------------
    def _block(self, block: bytes) -> Iterator[dict]:
        pos, opens, depth_after = self._structure(block)
        if self.phase == "trailer":
            self.skeleton += block
            return
        self.block_start = len(self.buf)  # block positions + block_start = positions in buf
        self.buf += block
        i = 0
        if self.phase == "header":
            i = self._find_entries_array(pos, opens, depth_after)
            if self.phase == "header":
                self.skeleton += self.buf
                self.buf.clear()
                return
        if self.phase == "entries":
            yield from self._entries(pos[i:], opens[i:], depth_after[i:])
        if self.phase == "entries":
            # Keep only the open entry (or the gap since the last one) for the next block.
            cut = self.entry_start if self.entry_start >= 0 else self.last_end
            del self.buf[:cut]
            self.last_end -= cut
            if self.entry_start >= 0:
                self.entry_start -= cut

    def _structure(self, block: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Positions of `{[]}` outside strings, whether each opens, and the depth after each."""
        # One C-speed pass classifies every byte; only the few interesting ones reach numpy.
        cls = np.frombuffer(block.translate(_CLASS_TABLE), dtype=np.uint8)
        where = np.flatnonzero(cls)
        kinds = cls[where]
        is_quote = kinds == _QUOTE
        backslashes = where[kinds == _BACKSLASH]
        escaped_first = self.escaped_next
        self.escaped_next = False
        if backslashes.size:
            quotes = where[is_quote]
            run_start = backslashes[np.r_[True, np.diff(backslashes) != 1]]
            # A quote is escaped when the backslash run just before it has odd length.
            after_backslash = quotes > 0
            after_backslash[after_backslash] = cls[quotes[after_backslash] - 1] == _BACKSLASH
            candidates = quotes[after_backslash]
            if candidates.size:
                starts = run_start[np.searchsorted(run_start, candidates - 1, side="right") - 1]
                lengths = candidates - starts - ((starts == 0) & escaped_first)
                escaped = candidates[lengths % 2 == 1]
                if escaped.size:
                    is_quote[np.searchsorted(where, escaped)] = False
            if backslashes[-1] == cls.size - 1:
                start = int(run_start[-1])
                self.escaped_next = bool((cls.size - start - int(start == 0 and escaped_first)) % 2)
        if escaped_first and cls.size and cls[0] == _QUOTE:
            is_quote[0] = False
        # Quote parity before each token tells whether it lies inside a string.
        parity = (np.cumsum(is_quote) - is_quote + int(self.in_string)) % 2
        bracket = (kinds >= _OPEN) & (parity == 0)
        pos = where[bracket]
        opens = kinds[bracket] == _OPEN
        depth_after = self.depth + np.cumsum(np.where(opens, 1, -1))
        if depth_after.size:
            self.depth = int(depth_after[-1])
        self.in_string ^= bool(int(np.count_nonzero(is_quote)) % 2)
        return pos, opens, depth_after

    def _key_before(self, end: int) -> bytes | None:
        """The JSON key right before position `end` in buf (`"key" :`), if any."""
        match = re.search(rb'"([^"\\]{1,32})"[ \t\r\n]*:[ \t\r\n]*$', self.buf[max(0, end - 256) : end])
        return match.group(1) if match else None

    def _find_entries_array(self, pos, opens, depth_after) -> int:
        """Walk the header's structure; on `log.entries[` switch to the entries phase."""
        for i in range(pos.size):
            depth_before = int(depth_after[i]) - (1 if opens[i] else -1)
            if not opens[i]:
                if depth_before == 2:
                    self.in_log = False
                continue
            p = self.block_start + int(pos[i])
            if depth_before == 1:
                self.in_log = self.buf[p] == 0x7B and self._key_before(p) == b"log"
            elif (
                depth_before == 2
                and self.in_log
                and self.buf[p] == 0x5B
                and self._key_before(p) == b"entries"
            ):
                self.skeleton += self.buf[: p + 1]
                del self.buf[: p + 1]
                self.block_start -= p + 1
                self.phase = "entries"
                self.array_depth = depth_before + 1
                self.last_end = 0
                return i + 1
        return pos.size

    def _entries(self, pos, opens, depth_after) -> Iterator[dict]:
        block_start = self.block_start
        depth_before = depth_after - np.where(opens, 1, -1)
        d = self.array_depth
        boundary = (opens & (depth_before == d)) | (~opens & (depth_after <= d))
        idx = np.flatnonzero(boundary)
        # Plain lists iterate far faster than numpy scalars.
        for p, is_open, depth in zip(
            (pos[idx] + block_start).tolist(), opens[idx].tolist(), depth_after[idx].tolist(), strict=True
        ):
            if is_open:
                if self.buf[p] != 0x7B:
                    raise self.fail(f"log.entries[{self.n_entries}] is not an object")
                self._check_gap(self.last_end, p, first=self.n_entries == 0)
                self.entry_start = p
            elif depth == d:
                try:
                    with memoryview(self.buf) as view:  # no copy of the entry's bytes
                        entry = orjson.loads(view[self.entry_start : p + 1])
                except orjson.JSONDecodeError as exc:
                    raise self.fail(f"log.entries[{self.n_entries}]: {_json_reason(exc)}") from None
                self.n_entries += 1
                self.entry_start = -1
                self.last_end = p + 1
                yield entry
            else:  # the array closes
                if self.buf[p] != 0x5D:
                    raise self.fail("invalid JSON (log.entries is not closed by ']')")
                self._check_gap(self.last_end, p, first=True)
                # The streamed array stands as [marker] in the skeleton: `_finish` checks that it is
                # the array a JSON parser keeps (a duplicate `log` or `entries` key wins otherwise).
                self.skeleton += _STREAMED_MARKER
                self.skeleton += self.buf[p:]
                self.buf.clear()
                self.phase = "trailer"
                return

    def _check_gap(self, start: int, end: int, *, first: bool) -> None:
        gap = bytes(self.buf[start:end]).strip(_WHITESPACE)
        if gap == (b"" if first else b","):
            return
        try:  # a scalar element (number, string, null) rather than broken JSON?
            orjson.loads(gap.strip(b"," + _WHITESPACE) or b"x")
        except orjson.JSONDecodeError:
            raise self.fail(f"invalid JSON after log.entries[{self.n_entries - 1}]") from None
        raise self.fail(f"log.entries[{self.n_entries}] is not an object")

    def _finish(self) -> Iterator[dict]:
        if self.total == 0:
            raise self.fail("empty file (0 bytes)")
        if self.phase == "entries":
            raise self.fail(f"truncated JSON (log.entries not closed after {self.n_entries} entries)")
        skeleton = self.skeleton + self.buf
        try:
            har = orjson.loads(bytes(skeleton))
        except orjson.JSONDecodeError as exc:
            raise self.fail(_json_reason(exc)) from None
        if not isinstance(har, dict) or not isinstance(har.get("log"), dict):
            raise self.fail("not a HAR file (no log object)")
        entries = har["log"].get("entries")
        if not isinstance(entries, list):
            raise self.fail("not a HAR file (no log.entries list)")
        if self.phase == "trailer" and entries != [_STREAMED_MARKER.decode()[1:-1]]:
            raise self.fail("duplicate log or log.entries keys (the last one counts, not the streamed one)")
        if self.phase == "header":  # the scan did not recognise the array (e.g. escaped key): use the parse
            for n, entry in enumerate(entries):
                if not isinstance(entry, dict):
                    raise self.fail(f"log.entries[{n}] is not an object")
                yield entry


# -- network_events rows ---------------------------------------------------------------------------------
NETWORK_EVENTS_SCHEMA = pa.schema(
    [
        ("run", pa.string()), ("task_id", pa.int32()), ("seq", pa.int32()),
        ("started_at", pa.timestamp("us")), ("time_ms", pa.float64()), ("method", pa.string()),
        ("url", pa.string()), ("url_path", pa.string()), ("query", pa.string()), ("status", pa.int32()),
        ("mime_type", pa.string()), ("size", pa.int64()), ("referer", pa.string()),
        ("redirect_url", pa.string()), ("post_data", pa.string()), ("is_static_asset", pa.bool_()),
        ("is_navigation", pa.bool_()), ("event_type", pa.string()), ("request_headers", pa.string()),
    ]
)  # fmt: skip
_ROW_COLUMNS = tuple(NETWORK_EVENTS_SCHEMA.names)[2:]
_TYPES = {field.name: field.type for field in NETWORK_EVENTS_SCHEMA}
_TIMESTAMP = _TYPES["started_at"]
_UTC_TIMESTAMP = pa.timestamp("us", tz="UTC")
_BATCH_ROWS = 4096  # rows buffered as Python tuples before becoming an Arrow batch
_MAX_SECRETS = 512  # distinct secret values remembered per trace (bounds the scrub cost)


def _dumps(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _timestamps(values: Iterable[Any]) -> pa.Array:
    """HAR `startedDateTime` strings as naive UTC timestamps: Arrow's ISO parser, per value if any is odd."""
    values = list(values)
    try:
        aware = pa.array(values, pa.string()).cast(_UTC_TIMESTAMP)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        aware = pa.array([_parse_time(v) for v in values], _UTC_TIMESTAMP)
    return aware.cast(_TIMESTAMP)  # same instants, time zone dropped (the schema stores UTC)


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=_UTC)


_UTC = datetime.fromisoformat("2000-01-01T00:00:00+00:00").tzinfo


def _secret_field(name: Any, value: Any) -> bool:
    """A secret by its name (passwords, tokens, form keys) or by its value (core.files.redaction)."""
    return isinstance(name, str) and (
        bool(_SECRET_FIELD.search(name)) or redaction.secret_by_value(name, value)
    )


def _redact_fields(value: Any) -> Any:
    """Replace the values of secret fields at any depth (a `credentials` object goes whole); strings
    keep no well-known token shape (a JWT in a `data` field)."""
    if isinstance(value, dict):
        return {k: (REDACTED if _secret_field(k, v) else _redact_fields(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact_fields(v) for v in value]
    if isinstance(value, str):
        return redaction.scrub_tokens(value)
    return value


def _cookie_values(header_value: str) -> Iterator[str]:
    for part in header_value.split(";"):
        _, sep, value = part.partition("=")
        if sep:
            yield value.strip()


class _Secrets:
    """Secret values seen in a trace (cookies, auth headers): scrubbed from every stored text."""

    def __init__(self) -> None:
        self.values: dict[str, None] = {}  # insertion-ordered set
        self.pattern: re.Pattern[str] | None = None

    def add(self, value: Any) -> None:
        if not isinstance(value, str) or len(value) < _MIN_SECRET_LEN or len(self.values) >= _MAX_SECRETS:
            return
        for v in (value, unquote(value)):
            if len(v) >= _MIN_SECRET_LEN and v not in self.values:
                self.values[v] = None
                self.pattern = None

    def scrub_all(self, text: str | None) -> str | None:
        """`scrub`, then well-known token shapes (core.files.redaction) wherever they are."""
        return redaction.scrub_tokens(self.scrub(text))

    def scrub(self, text: str | None) -> str | None:
        if not text or not self.values:
            return text
        if len(self.values) <= 8:  # substring tests are far cheaper than a regex for a few values
            for v in self.values:
                if v in text:
                    text = text.replace(v, REDACTED)
            return text
        if self.pattern is None:
            alternatives = sorted(self.values, key=len, reverse=True)
            self.pattern = re.compile("|".join(re.escape(v) for v in alternatives))
        return self.pattern.sub(REDACTED, text)


_HEADER_INFO: dict[str, tuple[str, bool]] = {}


def _header_info(name: str) -> tuple[str, bool]:
    """(lower-cased name, whether its value is a secret), cached: header names repeat endlessly."""
    info = _HEADER_INFO.get(name)
    if info is None:
        key = name.lower()
        info = (key, bool(_SECRET_HEADER.search(key)))
        if len(_HEADER_INFO) < 4096:
            _HEADER_INFO[name] = info
    return info


# Headers the official navigation predicate reads (it lower-cases their values).
_PREDICATE_HEADERS = frozenset({"accept", "sec-fetch-user", "sec-fetch-dest", "sec-fetch-mode"})


def _redact_url(url: str | None) -> str | None:
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
    return redaction.scrub_tokens(url)


def redact_report(value: Any) -> Any:
    """What the engine reports about trace events (URLs, post data), redacted by the rules of the
    stored events: URL passwords, secret query/fragment fields, values of secret-named fields."""
    if isinstance(value, str):
        # A quoted request body (text/plain, a form) may carry `password=...` anywhere in its text.
        return redaction.redact_text(_redact_url(value) or value, _SECRET_FIELD)
    if isinstance(value, dict):
        return {
            k: REDACTED if _secret_field(k, v) and not isinstance(v, dict | list | None) else redact_report(v)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact_report(v) for v in value]
    return value


def _redact_encoded_param(match: re.Match) -> str:
    name, value = match.group(2), match.group(3)
    if value == REDACTED:
        return match.group(0)
    plain = unquote_plus(name) if "%" in name or "+" in name else name
    if _secret_field(plain, unquote_plus(value) if "%" in value else value):
        return f"{match.group(1)}{name}={REDACTED}"
    return match.group(0)


@lru_cache(maxsize=65536)
def _query_json(url: str) -> str | None:
    query = urlparse(url).query
    if not query:
        return None
    params: dict[str, Any] = {}
    for name, value in parse_qsl(query, keep_blank_values=True):
        value = REDACTED if _secret_field(name, value) else redaction.scrub_tokens(value)
        if name in params:  # repeated parameter: keep every value, in order
            prior = params[name]
            params[name] = [*prior, value] if isinstance(prior, list) else [prior, value]
        else:
            params[name] = value
    return _dumps(params)


def _post_data(request: dict) -> Any:
    post = request.get("postData")
    if not isinstance(post, dict):
        return None
    from webarena_verified.core.utils.network_event_utils import parse_har_content

    try:  # the engine's own parser, so we show what it compares
        parsed = parse_har_content(post)
    except Exception:  # hostile bodies must not stop an import; the engine will report them itself
        return None
    return None if parsed is None else _redact_fields(parsed)


class NetworkEventsBuilder:
    """Accumulates `network_events` columns for one task's trace, one entry at a time.

    `add` returns the entry when the scoring engine needs it, None for a static asset (the engine
    filters those out before any evaluator looks), so memory for huge traces stays bounded.
    """

    def __init__(self, run: str, task_id: int):
        self.run = run
        self.task_id = task_id
        self.rows: list[tuple] = []  # buffered rows, columns _ROW_COLUMNS (run/task_id are constant)
        self.batches: list[pa.RecordBatch] = []
        self.flushed = 0
        self.secrets = _Secrets()
        self.malformed: dict[str, int] = {}

    def __len__(self) -> int:
        return self.flushed + len(self.rows)

    def _flag(self, what: str) -> None:
        self.malformed[what] = self.malformed.get(what, 0) + 1

    def add(self, entry: Any) -> Any:
        """Add the next entry (seq = entries added so far); returns it unless it is a static asset."""
        if type(entry) is not dict:
            self._flag("entries that are not objects")
            entry_d: dict = {}
        else:
            entry_d = entry
        request = entry_d.get("request")
        if type(request) is not dict:
            self._flag("entries without a request")
            request = {}
        response = entry_d.get("response")
        if type(response) is not dict:
            self._flag("entries without a response")
            response = {}
        headers_list = request.get("headers")
        if type(headers_list) is not list:
            self._flag("entries without request headers")
            headers_list = ()

        secrets = self.secrets
        # Collect this entry's secret values first, so they are scrubbed from this very entry too.
        for cookies in (request.get("cookies"), response.get("cookies")):
            if cookies and type(cookies) is list:
                for cookie in cookies:
                    if type(cookie) is dict:
                        secrets.add(cookie.get("value"))
        response_headers = response.get("headers")
        if response_headers and type(response_headers) is list:
            for header in response_headers:
                try:
                    name = header["name"]
                    if name[0] in "sS" and name.lower() == "set-cookie":
                        for line in str(header["value"]).splitlines():
                            secrets.add(line.split(";", 1)[0].partition("=")[2].strip())
                except (TypeError, KeyError, IndexError, AttributeError):
                    continue
        lowered: dict[str, str] = {}
        shown: dict[str, str] = {}
        for header in headers_list:
            try:
                name, value = header["name"], header["value"]
                key, secret = _header_info(name)
            except (TypeError, KeyError, AttributeError):
                continue
            if type(value) is not str:
                continue
            if key in _PREDICATE_HEADERS:
                lowered[key] = value.lower()
            if secret or (value[:1] in "BbTtDd" and _SECRET_VALUE.match(value)):
                if key == "cookie":
                    for v in _cookie_values(value):
                        secrets.add(v)
                secrets.add(value)
                secrets.add(value.split(None, 1)[-1])
                shown[key] = REDACTED
            else:
                if "://" in value:  # a Referer carries the page's query (form keys, tokens)
                    value = _redact_url(value)
                shown[key] = f"{shown[key]}, {value}" if key in shown else value

        method = request.get("method")
        method = method if type(method) is str else None
        url = request.get("url")
        url = url if type(url) is str else None
        path = url_path(url) if url is not None else None
        static = path is not None and path.endswith(STATIC_ASSET_SUFFIXES)
        navigation = method is not None and is_navigation(method, lowered)
        content = response.get("content")
        if type(content) is not dict:
            content = {}
        size = _number(content.get("size"))
        if size is None or size < 0:
            size = _number(response.get("bodySize"))
        status = response.get("status")
        redirect = response.get("redirectURL")
        mime = content.get("mimeType")
        post = _post_data(request) if "postData" in request else None
        scrub = secrets.scrub_all
        self.rows.append(
            (
                len(self),
                entry_d.get("startedDateTime"),
                _number(entry_d.get("time")),
                method,
                scrub(_redact_url(url)),
                scrub(path),
                scrub(_query_json(url)) if url else None,
                status if type(status) is int else None,
                mime if type(mime) is str else None,
                int(size) if size is not None and size >= 0 else None,
                scrub(shown.get("referer")),
                scrub(_redact_url(redirect)) if redirect and type(redirect) is str else None,
                None if post is None else scrub(_dumps(post)),
                static,
                navigation,
                event_type(method, navigation),
                scrub(_dumps(shown)),
            )
        )
        if len(self.rows) >= _BATCH_ROWS:
            self._flush()
        return None if static else entry

    def _flush(self) -> None:
        """Move buffered rows into an Arrow batch: compact columns instead of many small objects."""
        n = len(self.rows)
        if not n:
            return
        columns = zip(*self.rows, strict=True)
        arrays = [
            pa.repeat(pa.scalar(self.run, pa.string()), n),
            pa.repeat(pa.scalar(self.task_id, pa.int32()), n),
        ]
        for name, values in zip(_ROW_COLUMNS, columns, strict=True):
            arrays.append(_timestamps(values) if name == "started_at" else pa.array(values, _TYPES[name]))
        self.batches.append(pa.RecordBatch.from_arrays(arrays, schema=NETWORK_EVENTS_SCHEMA))
        self.flushed += n
        self.rows.clear()

    def table(self) -> pa.Table:
        self._flush()
        return pa.Table.from_batches(self.batches, schema=NETWORK_EVENTS_SCHEMA)


def network_events_table(run: str, task_id: int, entries: Iterable[Any]) -> pa.Table:
    """`network_events` rows of one task's trace as an Arrow table (seq = index of the entry)."""
    builder = NetworkEventsBuilder(run, task_id)
    for entry in entries:
        builder.add(entry)
    return builder.table()


class _SharedHeaders:
    """Identical header objects of a trace's kept entries become one shared object.

    Traces repeat the same headers in every request (user agent, accept, server, ...); sharing them keeps
    the entries held for scoring small. The engine only reads entries, so sharing is invisible to it.
    """

    def __init__(self, limit: int = 65536):
        self.cache: dict[tuple[str, str], dict] = {}
        self.limit = limit

    def _headers(self, headers: Any) -> Any:
        if type(headers) is not list:
            return headers
        out = []
        for header in headers:
            if type(header) is dict and len(header) == 2:
                name, value = header.get("name"), header.get("value")
                if type(name) is str and type(value) is str:
                    key = (name, value)
                    cached = self.cache.get(key)
                    if cached is None:
                        if len(self.cache) < self.limit:
                            self.cache[key] = header
                        cached = header
                    header = cached
            out.append(header)
        return out

    def compact(self, entry: Any) -> Any:
        if type(entry) is not dict:
            return entry
        for part in ("request", "response"):
            section = entry.get(part)
            if type(section) is dict and "headers" in section:
                section["headers"] = self._headers(section["headers"])
        return entry


@dataclass
class ParsedTrace:
    """One task's trace, read once: its stored rows and what the scoring engine gets."""

    path: Path
    events: pa.Table
    # The entries the engine evaluates (static assets left out: it ignores them) and their seqs.
    # A trace of static assets only keeps its first entry, so the engine still sees a non-empty trace.
    scoring_entries: list[Any]
    scoring_seqs: list[int]
    malformed: dict[str, int]  # shape problems found in entries: {description: count}


def parse_trace(path: Path, run: str, task_id: int) -> ParsedTrace:
    """Read a trace file once (streaming): InputError if unusable, nothing partial returned."""
    path = Path(path)
    builder = NetworkEventsBuilder(run, task_id)
    # Sharing identical headers bounds memory only when entries are streamed from a large file; a small
    # file is parsed whole anyway, so there it would be pure cost on the hot path.
    keep = _SharedHeaders().compact if _is_streamed(path) else _as_is
    entries: list[Any] = []
    seqs: list[int] = []
    first = None
    with gc_paused():
        for seq, entry in enumerate(iter_trace_entries(path)):
            if seq == 0:
                first = entry
            if builder.add(entry) is not None:
                entries.append(keep(entry))
                seqs.append(seq)
        table = builder.table()
    if not entries and first is not None:
        entries, seqs = [first], [0]
    return ParsedTrace(path, table, entries, seqs, builder.malformed)


def _as_is(entry: Any) -> Any:
    return entry


def _is_streamed(path: Path) -> bool:
    try:
        return path.is_file() and path.stat().st_size > _WHOLE_FILE_MAX
    except OSError:
        return False
