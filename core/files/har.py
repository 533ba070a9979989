"""Network traces (HAR files, Playwright traces): read once, into `network_events` rows and the engine's entries.

A trace is read as a stream of entries (memory stays bounded for huge HARs), each entry exactly as in
the file. Its rows are built column by column (`core.files.network_events`, which mirrors the official
static-asset rule and navigation predicate and redacts secrets before anything is stored); the entries
the engine evaluates are kept as they are in the file.
"""

from __future__ import annotations

import gc
import re
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pyarrow as pa

from core.errors import InputError
from core.files.network_events import EventsBuilder
from core.files.parallel import chunked
from core.files.safe_files import LIMITS

PLAYWRIGHT_NETWORK_FILE = "trace.network"
# Trace files looked for in a task directory of a run, in order of preference.
TRACE_FILES = ("network.har", "trace.zip", PLAYWRIGHT_NETWORK_FILE)

_BLOCK_SIZE = 4 << 20
# Byte classes for the structural scan of a HAR.
_QUOTE, _BACKSLASH, _OPEN, _CLOSE = 1, 2, 3, 4
_CLASS_TABLE = bytes(
    {0x22: _QUOTE, 0x5C: _BACKSLASH, 0x7B: _OPEN, 0x5B: _OPEN, 0x7D: _CLOSE, 0x5D: _CLOSE}.get(b, 0)
    for b in range(256)
)  # bytes scanned per step when streaming a HAR
_WHITESPACE = b" \t\r\n"
_STREAMED_MARKER = b'"trajreview:streamed-entries:5f1c9e"'


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
    if isinstance(entries, list) and set(map(type, entries)) <= {dict}:  # C-level: no Python call per entry
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
    truncated: dict[str, int]  # values cut to FIELD_LIMIT before storage: {kind of value: count}


# Entries per batch of a streamed trace: its rows are built column by column, a batch at a time.
_STREAM_BATCH = 512


def parse_trace(path: Path, run: str, task_id: int) -> ParsedTrace:
    """Read a trace file once: InputError if unusable, nothing partial returned.

    A HAR up to 32 MiB is parsed whole; a larger one is streamed and its rows built a batch at a time,
    keeping only the engine's entries (identical headers shared), so memory follows the batch, not the file.
    """
    path = Path(path)
    builder = EventsBuilder(run, task_id)
    entries: list[Any] = []
    seqs: list[int] = []
    first: list[Any] = []
    with gc_paused():
        if _is_streamed(path):
            keep = _SharedHeaders().compact
            for batch in chunked(iter_trace_entries(path), _STREAM_BATCH):
                _keep_scoring(builder, batch, entries, seqs, first, keep)
        else:
            _keep_scoring(builder, list(iter_trace_entries(path)), entries, seqs, first, _as_is)
        table = builder.table()
    if not entries and first:  # only static assets: the engine still gets a non-empty trace
        entries, seqs = first, [0]
    return ParsedTrace(path, table, entries, seqs, builder.malformed, builder.truncated)


def _keep_scoring(builder: EventsBuilder, batch: list, entries: list, seqs: list, first: list, keep) -> None:
    """Add a batch's rows; keep the entries the engine evaluates (and the trace's first entry)."""
    start = len(builder)
    if start == 0 and batch:
        first.append(batch[0])
    static = builder.add(batch)
    for i in np.flatnonzero(~static).tolist():
        entries.append(keep(batch[i]))
        seqs.append(start + i)


def _as_is(entry: Any) -> Any:
    return entry


def _is_streamed(path: Path) -> bool:
    try:
        return path.is_file() and path.stat().st_size > _WHOLE_FILE_MAX
    except OSError:
        return False
