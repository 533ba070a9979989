"""`network_events` rows of a trace, built column by column (Arrow), never a Python call per entry.

A batch of entries becomes one Arrow struct array in a single C++ pass (`pa.array`); every column is then
derived with Arrow compute: URL paths, the static-asset and navigation predicates, sizes, times, and the
redaction of token shapes and of the trace's secret values (`core.files.redaction` rules, as RE2
expressions or literal replacements). The rules that Arrow cannot express run in Python once per
*distinct* value of the trace, not per entry: the request-header object of each distinct header list
(traces repeat the same few; `core.files.request_headers`), each URL with a query, fragment, user info
or anything unusual (when no URL of the batch can hold a token or a secret value, a plain URL costs one
RE2 match for the whole batch), each request body. Cookie values are read in Python (`_cookie_values`).
Entries of the wrong shape (a number where an object belongs, ...) are first reduced to
the fields we read, with the same type rules, so a hostile trace still imports.

Strings longer than `FIELD_LIMIT` (a URL, a header value, a request body) are cut to it with a marker
before redaction and storage, and counted (`Batch.truncated`), so one huge value cannot multiply the
import's memory.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime
from typing import Any
from urllib.parse import urlparse

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from core.files import redaction
from core.files.entry_shape import INT32, plain_entry
from core.files.redaction import Secrets, dumps
from core.files.request_headers import HeaderGroups

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

# The official suffix list (NetworkEvent.is_evaluation_event): these requests never count for evaluation.
STATIC_ASSET_SUFFIXES = (
    ".css", ".js", ".png", ".jpg", ".jpeg", ".gif", ".svg", ".woff", ".woff2", ".ttf", ".ico", ".webp",
)  # fmt: skip
MUTATION_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})

# The longest URL, header value or request body stored (characters); longer ones are cut with a marker.
FIELD_LIMIT = 1 << 20
TRUNCATED_MARKER = "…[truncated by trajreview: {n} characters in the file]"

_NAME_VALUE = pa.list_(pa.struct([("name", pa.string()), ("value", pa.string())]))
_COOKIES = pa.list_(pa.struct([("value", pa.string())]))
# The fields of an entry read column by column, typed as the rules read them. `postData` is only tested for
# presence: its body goes to the engine's own parser (`redaction.post_data_json`) from the original entry.
# Cookies are read in Python (`_cookie_values`: HARs mostly carry empty lists, which still cost Arrow a
# lookup per entry); FULL_ENTRY_TYPE, with them, reads a batch whose cookies have an unusual shape.
ENTRY_TYPE = pa.struct(
    [
        ("startedDateTime", pa.string()),
        ("time", pa.float64()),
        ("request", pa.struct([("method", pa.string()), ("url", pa.string()), ("headers", _NAME_VALUE),
                               ("postData", pa.struct([]))])),
        ("response", pa.struct([("status", pa.int64()), ("redirectURL", pa.string()), ("headers", _NAME_VALUE),
                                ("bodySize", pa.float64()),
                                ("content", pa.struct([("size", pa.float64()), ("mimeType", pa.string())]))])),
    ]
)  # fmt: skip
FULL_ENTRY_TYPE = pa.struct(
    [
        ("startedDateTime", pa.string()),
        ("time", pa.float64()),
        ("request", pa.struct([("method", pa.string()), ("url", pa.string()), ("headers", _NAME_VALUE),
                               ("cookies", _COOKIES), ("postData", pa.struct([]))])),
        ("response", pa.struct([("status", pa.int64()), ("redirectURL", pa.string()), ("headers", _NAME_VALUE),
                                ("cookies", _COOKIES), ("bodySize", pa.float64()),
                                ("content", pa.struct([("size", pa.float64()), ("mimeType", pa.string())]))])),
    ]
)  # fmt: skip

# A URL whose path this expression gives exactly as `urlparse(url).path` does: http(s), printable ASCII,
# no query, fragment, parameters, user info, brackets or backslash; nothing in it for `redact_url`.
PLAIN_URL = re.compile(
    r"[Hh][Tt][Tt][Pp][Ss]?://[^/?#;@\[\]\\\x00-\x20\x7f-\U0010ffff]*(?P<path>(?:/[^?#;@\[\]\\\x00-\x20\x7f-\U0010ffff]*)?)\Z"
)
# `PLAIN_URL` for Arrow's RE2, run once per batch over the distinct URLs: the same language, its classes
# written as the printable ASCII they allow (tests/test_har.py compares the two on every character).
_URL_CHAR = r'!"$-.0-:<=>A-Z^-~'  # 0x21-0x7e without / ? # ; @ [ \ ]
PLAIN_URL_RE2 = rf"^[Hh][Tt][Tt][Pp][Ss]?://[{_URL_CHAR}]*(?P<path>(?:/[/{_URL_CHAR}]*)?)$"
_UTC = datetime.fromisoformat("2000-01-01T00:00:00+00:00").tzinfo
_UTC_TIMESTAMP = pa.timestamp("us", tz="UTC")


def network_events_table(run: str, task_id: int, entries: Iterable[Any]) -> pa.Table:
    """`network_events` rows of one task's trace as an Arrow table (seq = index of the entry)."""
    builder = EventsBuilder(run, task_id)
    builder.add(list(entries))
    return builder.table()


class EventsBuilder:
    """The `network_events` rows of one task's trace, batch by batch (a streamed trace comes in batches).

    Secrets found in a batch (cookies, auth headers) are scrubbed from that batch and every later one.
    """

    def __init__(self, run: str, task_id: int):
        self.run = run
        self.task_id = task_id
        self.secrets = Secrets()
        self.secret_names: dict[str, bool] = {}  # header name (lower case) -> matches SECRET_HEADER
        self.malformed: dict[str, int] = {}
        self.truncated: dict[str, int] = {}  # kind of value -> how many were cut to FIELD_LIMIT
        self.batches: list[pa.RecordBatch] = []
        self.n = 0

    def __len__(self) -> int:
        return self.n

    def _count(self, counts: dict[str, int], what: str, n: int) -> None:
        if n:
            counts[what] = counts.get(what, 0) + n

    def add(self, entries: list) -> np.ndarray:
        """Add a batch of entries (seq continues from the previous batch); returns its static-asset mask."""
        if not entries:
            return np.zeros(0, dtype=bool)
        arr, entries, cookies = self._arrow(entries)
        n = len(arr)
        request, response = pc.struct_field(arr, "request"), pc.struct_field(arr, "response")
        whole_url = pc.struct_field(request, "url")
        url = self._cut(whole_url, "URLs")
        method = pc.struct_field(request, "method")
        headers = pc.struct_field(request, "headers")
        headers = headers.combine_chunks() if isinstance(headers, pa.ChunkedArray) else headers

        self._collect_secrets(cookies, response)
        texts = self._cut(pc.struct_field(headers.values, "value"), "header values")
        groups = HeaderGroups(headers, texts, self.secrets, self.secret_names)
        url_col, path, query, static = self._urls(url)
        static = pc.fill_null(static, False)
        redirect_col = self._redirect_urls(
            self._cut(pc.struct_field(response, "redirectURL"), "redirect URLs")
        )
        if url is not whole_url:  # a cut URL: which entries the engine gets is decided on the whole one
            cut = pc.fill_null(pc.greater(pc.utf8_length(whole_url), FIELD_LIMIT), False)
            whole = [is_static_asset(u) for u in whole_url.filter(cut).to_pylist()]
            static = pc.replace_with_mask(static, cut, pa.array(whole, pa.bool_()))
        navigation = pc.and_(pc.fill_null(pc.equal(method, "GET"), False), groups.navigation())
        event_type = pc.if_else(
            navigation,
            "navigation",
            pc.if_else(
                pc.fill_null(pc.is_in(method, pa.array(sorted(MUTATION_METHODS))), False), "mutation", "other"
            ),
        )
        content = pc.struct_field(response, "content")
        size = pc.struct_field(content, "size")
        size = pc.if_else(
            pc.fill_null(pc.greater_equal(size, 0), False), size, pc.struct_field(response, "bodySize")
        )
        size_ok = pc.and_(pc.greater_equal(size, 0), pc.less(size, float(1 << 63)))
        size = pc.if_else(size_ok, pc.cast(size, pa.int64(), safe=False), pa.scalar(None, pa.int64()))
        status = pc.struct_field(response, "status")
        status_ok = pc.and_(pc.greater_equal(status, INT32[0]), pc.less_equal(status, INT32[1]))
        status = pc.if_else(status_ok, status, pa.scalar(None, pa.int64())).cast(pa.int32())

        columns = {
            "run": pa.repeat(pa.scalar(self.run, pa.string()), n),
            "task_id": pa.repeat(pa.scalar(self.task_id, pa.int32()), n),
            "seq": pa.array(np.arange(self.n, self.n + n, dtype=np.int32)),
            "started_at": _timestamps(pc.struct_field(arr, "startedDateTime")),
            "time_ms": pc.struct_field(arr, "time"),
            "method": method,
            "url": url_col,
            "url_path": path,
            "query": query,
            "status": status,
            "mime_type": pc.struct_field(content, "mimeType"),
            "size": size,
            "referer": groups.referer(),
            "redirect_url": redirect_col,
            "post_data": self._post_data(request, entries),
            "is_static_asset": static,
            "is_navigation": navigation,
            "event_type": event_type,
            "request_headers": groups.shown(),
        }
        self.batches.append(pa.RecordBatch.from_arrays(list(columns.values()), schema=NETWORK_EVENTS_SCHEMA))
        self.n += n
        return static.to_numpy(zero_copy_only=False)

    def table(self) -> pa.Table:
        return pa.Table.from_batches(self.batches, schema=NETWORK_EVENTS_SCHEMA)

    # -- reading the batch --------------------------------------------------------------------------------
    def _arrow(self, entries: list) -> tuple[pa.StructArray, list, list[str]]:
        """The batch as one struct array and its cookie values (request cookies, then response cookies,
        each in order of first appearance); entries of an unexpected shape are reduced first
        (`core.files.entry_shape`)."""
        try:
            arr = pa.array(entries, type=ENTRY_TYPE)
            cookies = _cookie_values(entries)
            if cookies is None:  # a shape only Arrow's conversion reads as it does: read them all there
                arr = pa.array(entries, type=FULL_ENTRY_TYPE)
                cookies = _arrow_cookie_values(arr)
        except (pa.ArrowException, TypeError, ValueError, OverflowError):
            entries = [plain_entry(entry, self.malformed) for entry in entries]
            arr = pa.array(entries, type=FULL_ENTRY_TYPE)
            return arr, entries, _arrow_cookie_values(arr)
        request = pc.struct_field(arr, "request")
        self._count(self.malformed, "entries without a request", request.null_count)
        self._count(self.malformed, "entries without a response", pc.struct_field(arr, "response").null_count)
        self._count(
            self.malformed, "entries without request headers", pc.struct_field(request, "headers").null_count
        )
        return arr, entries, cookies

    def _cut(self, values: pa.Array, what: str) -> pa.Array:
        """Values longer than FIELD_LIMIT cut to it, with a marker saying how long they were."""
        if values.nbytes <= FIELD_LIMIT:  # no value can be longer than all of them together
            return values
        lengths = pc.utf8_length(values)
        long = pc.fill_null(pc.greater(lengths, FIELD_LIMIT), False)
        count = pc.sum(long).as_py() or 0
        if not count:
            return values
        self._count(self.truncated, what, count)
        marks = [TRUNCATED_MARKER.format(n=n) for n in pc.filter(lengths, long).to_pylist()]
        cut = pc.binary_join_element_wise(
            pc.utf8_slice_codeunits(pc.filter(values, long), 0, FIELD_LIMIT), pa.array(marks), ""
        )
        return pc.replace_with_mask(values, long, cut)

    def _collect_secrets(self, cookies: list[str], response) -> None:
        """Cookie values and Set-Cookie values of the batch (the header rules add theirs in HeaderGroups)."""
        for value in cookies:
            self.secrets.add(value)
        flat = pc.list_flatten(pc.struct_field(response, "headers"))
        names = pc.struct_field(flat, "name")
        set_cookie = pc.fill_null(pc.equal(pc.utf8_lower(names), "set-cookie"), False)
        for value in pc.unique(pc.struct_field(flat, "value").filter(set_cookie).drop_null()).to_pylist():
            for line in value.splitlines():
                self.secrets.add(line.split(";", 1)[0].partition("=")[2].strip())

    # -- columns ------------------------------------------------------------------------------------------
    def _urls(self, url: pa.Array) -> tuple[pa.Array, pa.Array, pa.Array, pa.Array]:
        """(redacted URL, path, query JSON, static asset?), by the rules of `_url_columns`, computed once per
        distinct URL of the batch (urlparse is the engine's own rule: no expression stands in for it)."""
        encoded = pc.dictionary_encode(url)
        types = (pa.string(), pa.string(), pa.string(), pa.bool_())
        rows = self._url_rows(encoded.dictionary, paths=True)
        if not rows:  # no URL at all
            return tuple(pa.nulls(len(url), kind) for kind in types)  # type: ignore[return-value]
        columns = [pa.array(list(c), kind) for c, kind in zip(zip(*rows, strict=True), types, strict=True)]
        return tuple(column.take(encoded.indices) for column in columns)  # type: ignore[return-value]

    def _redirect_urls(self, url: pa.Array) -> pa.Array:
        """Redirect URLs as stored: redacted by the rules of `_url_columns`; an empty one is none."""
        encoded = pc.dictionary_encode(url)
        rows = self._url_rows(encoded.dictionary, paths=False)
        shown = [
            None if v == "" else row[0] for v, row in zip(encoded.dictionary.to_pylist(), rows, strict=True)
        ]
        return pa.array(shown, pa.string()).take(encoded.indices)

    def _url_rows(self, distinct: pa.Array, paths: bool) -> list[tuple]:
        """`_url_columns` of each distinct URL. Two tests over all of them joined together tell when no URL
        can hold a token shape and when no secret value occurs in any: then a plain URL (`PLAIN_URL`) is
        stored as it is, with the path the expression gives, and costs one RE2 match for the batch."""
        values = distinct.to_pylist()
        joined = "\n".join(values)
        if not values or redaction.may_hold_token(joined) or self.secrets.occur_in(joined):
            return [self._url_columns(v, paths) for v in values]
        # a plain URL is stored as it is; the others by the whole rule
        plain = pc.struct_field(pc.extract_regex(distinct, PLAIN_URL_RE2), "path").to_pylist()
        return [
            self._url_columns(v, paths)
            if p is None
            else (v, p, None, p.endswith(STATIC_ASSET_SUFFIXES))
            if paths
            else (v, None, None, False)
            for v, p in zip(values, plain, strict=True)
        ]

    def _url_columns(self, url: str, paths: bool) -> tuple[str | None, str | None, str | None, bool]:
        """One URL: redacted for storage, its path, its query as JSON, whether the engine ignores it."""
        plain = PLAIN_URL.match(url)
        if plain is not None and not redaction.may_hold_token(url):
            # Only the trace's secret values to redact, and the path is what urlparse gives (tests/test_har.py).
            scrub_secrets = self.secrets.scrub
            if not paths:
                return scrub_secrets(url), None, None, False
            path = plain.group("path")
            return scrub_secrets(url), scrub_secrets(path), None, path.endswith(STATIC_ASSET_SUFFIXES)
        scrub = self.secrets.scrub_all
        shown = scrub(redaction.redact_url(url))
        if not paths:
            return shown, None, None, False
        try:
            path = url_path(url)
        except ValueError:  # urlparse refuses it (a bad IPv6 host): stored without path and query
            return shown, None, None, False
        query = scrub(redaction.query_json(url)) if "?" in url else None
        return shown, scrub(path), query, path.endswith(STATIC_ASSET_SUFFIXES)

    def _post_data(self, request, entries: list) -> pa.Array:
        """Request bodies, parsed by the engine's parser and redacted: Python for each entry that has one."""
        present = pc.is_valid(pc.struct_field(request, "postData"))
        n = len(present)
        if not pc.any(present).as_py():
            return pa.nulls(n, pa.string())
        scrub = self.secrets.scrub_all
        at = np.flatnonzero(present.to_numpy(zero_copy_only=False))
        bodies = []
        for i in at.tolist():
            post = entries[i]["request"]["postData"]
            body = post.get("text")
            if isinstance(body, str) and len(body) > FIELD_LIMIT:  # measured before it is parsed
                self._count(self.truncated, "request bodies", 1)
                bodies.append(dumps(TRUNCATED_MARKER.format(n=len(body))))
            else:
                bodies.append(scrub(redaction.post_data_json(post)))
        return pc.replace_with_mask(pa.nulls(n, pa.string()), present, pa.array(bodies, pa.string()))


def _cookie_values(entries: list) -> list[str] | None:
    """The batch's cookie values as FULL_ENTRY_TYPE's conversion reads them, in Python; None when a
    cookie (or the object holding it) has a shape other than JSON's object, list, text or null where
    the conversion expects one: that conversion then reads them."""
    request_values: dict[str, None] = {}
    response_values: dict[str, None] = {}
    for entry in entries:
        if type(entry) is not dict:
            return None
        for part, values in (("request", request_values), ("response", response_values)):
            section = entry.get(part)
            if section is None:
                continue
            if type(section) is not dict:
                return None
            cookies = section.get("cookies")
            if not cookies:
                if cookies is None or type(cookies) is list:
                    continue
                return None
            if type(cookies) is not list:
                return None
            for cookie in cookies:
                if type(cookie) is dict:
                    value = cookie.get("value")
                    if type(value) is str:
                        values[value] = None
                    elif value is not None:
                        return None
                elif cookie is not None:
                    return None
    return [*request_values, *response_values]


def _arrow_cookie_values(arr: pa.StructArray) -> list[str]:
    values: dict[str, None] = {}
    for part in ("request", "response"):
        cookies = pc.struct_field(
            pc.list_flatten(pc.struct_field(pc.struct_field(arr, part), "cookies")), "value"
        )
        values.update(dict.fromkeys(pc.unique(cookies.drop_null()).to_pylist()))
    return list(values)


def url_path(url: str) -> str:
    """The path component exactly as the official engine computes it (`urlparse(url).path`)."""
    return urlparse(url).path


def is_static_asset(url: str) -> bool:
    """True when the official engine ignores the request (not an evaluation event)."""
    try:
        return url_path(url).endswith(STATIC_ASSET_SUFFIXES)
    except ValueError:
        return False


def _timestamps(values: pa.Array) -> pa.Array:
    """HAR `startedDateTime` strings as naive UTC timestamps: Arrow's ISO parser, per value if any is odd."""
    try:
        aware = values.cast(_UTC_TIMESTAMP)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        aware = pa.array([_parse_time(v) for v in values.to_pylist()], _UTC_TIMESTAMP)
    return aware.cast(pa.timestamp("us"))  # same instants, time zone dropped (the schema stores UTC)


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    try:
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=_UTC)
    except (OverflowError, ValueError):
        return None
