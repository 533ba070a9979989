"""The request headers of a trace's entries as `network_events` stores them, computed once per distinct
header list: the shown object (names lower-cased, secret values replaced, URLs redacted), the referer,
and the official navigation predicate's header part; secret header values join the trace's `Secrets`."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from core.files import redaction
from core.files.redaction import REDACTED, Secrets, dumps

# Headers the official navigation predicate reads (it lower-cases their values).
_PREDICATE_HEADERS = frozenset({"accept", "sec-fetch-user", "sec-fetch-dest", "sec-fetch-mode"})
_MAX_NAMES_REMEMBERED = 4096  # distinct header names whose SECRET_HEADER verdict a trace keeps


class HeaderGroups:
    """The request headers of a batch, by distinct header list: shown object, navigation, referer, secrets.

    Each header list is keyed by the bytes of its (name, value) pair codes (the pair's name and value
    numbered by dictionary encoding), so two lists share a key only when they hold the same pairs in the
    same order; the rules of `_shown` run once per key. (A pair missing its name or value is skipped by
    `_shown`, so lists that differ only in those may take separate keys with the same result.)
    """

    def __init__(
        self, headers: pa.ListArray, texts: pa.Array, secrets: Secrets, secret_names: dict[str, bool]
    ):
        """`texts`: the values of `headers.values`, as stored (cut to the field limit); `secret_names`: the
        trace's memory of SECRET_HEADER's verdicts (lower-cased name -> verdict)."""
        names = pc.struct_field(headers.values, "name")
        name_codes = pc.dictionary_encode(names)
        text_codes = pc.dictionary_encode(texts)
        # One int64 per pair; -1 for a pair missing its name or value (nulls have no dictionary code).
        codes = pc.add(
            pc.multiply(pc.cast(name_codes.indices, pa.int64()), len(text_codes.dictionary) + 1),
            pc.cast(text_codes.indices, pa.int64()),
        )
        raw = pc.fill_null(codes, -1).to_numpy(zero_copy_only=False).astype(np.int64, copy=False).tobytes()
        start = headers.offsets.to_numpy()
        present = pc.is_valid(headers).to_numpy(zero_copy_only=False)
        bounds = (start * 8).tolist()
        group_of: dict[bytes, int] = {}
        first: list[int] = []
        indices = []
        for i, ok in enumerate(present.tolist()):
            key = raw[bounds[i] : bounds[i + 1]] if ok else b""
            group = group_of.get(key)
            if group is None:
                group = group_of[key] = len(first)
                first.append(i)
            indices.append(group)
        self.indices = pa.array(indices, pa.int32())
        listed = [
            (names[start[i] : start[i + 1]].to_pylist(), texts[start[i] : start[i + 1]].to_pylist())
            if present[i]
            else ([], [])
            for i in first
        ]
        # `_shown` adds the secret headers' values; a name's verdict is kept for the trace's later lists.
        shown = [_shown(n, v, secrets, secret_names) for n, v in listed]
        scrub = secrets.scrub_all
        self._shown = pa.array([scrub(dumps(s)) for s, _ in shown], pa.string())
        self._referer = pa.array([scrub(s.get("referer")) for s, _ in shown], pa.string())
        self._navigation = pa.array([nav for _, nav in shown], pa.bool_())

    def shown(self) -> pa.Array:
        return self._shown.take(self.indices)

    def referer(self) -> pa.Array:
        return self._referer.take(self.indices)

    def navigation(self) -> pa.Array:
        return self._navigation.take(self.indices)


def _shown(
    names: list, values: list, secrets: Secrets, secret_names: dict[str, bool]
) -> tuple[dict[str, str], bool]:
    """One header list as stored (lower-cased names, secret values replaced, repeated names joined with
    ', ', URLs redacted) and whether it passes the official navigation predicate (given a GET).
    `secret_names` remembers `SECRET_HEADER`'s verdict per lower-cased name (a search with backtracking)."""
    lowered: dict[str, str] = {}
    shown: dict[str, str] = {}
    for name, value in zip(names, values, strict=True):
        if name is None or value is None:
            continue
        key = name.lower()
        if key in _PREDICATE_HEADERS:
            lowered[key] = value.lower()
        secret = secret_names.get(key)
        if secret is None:
            secret = redaction.SECRET_HEADER.search(key) is not None
            if len(secret_names) < _MAX_NAMES_REMEMBERED:
                secret_names[key] = secret
        if secret or redaction.SECRET_VALUE.match(value):
            if key == "cookie":
                for v in redaction.cookie_values(value):
                    secrets.add(v)
            secrets.add(value)
            secrets.add(value.split(None, 1)[-1] if value.split() else value)
            shown[key] = REDACTED
        else:
            if "://" in value:  # a Referer carries the page's query (form keys, tokens)
                value = redaction.redact_url(value)
            shown[key] = f"{shown[key]}, {value}" if key in shown else value
    return shown, _navigation_headers(lowered)


def _navigation_headers(headers: dict[str, str]) -> bool:
    """The official navigation predicate's header part (`NetworkEvent.is_navigation_event`)."""
    if "sec-fetch-user" in headers:
        return (
            headers.get("sec-fetch-dest") == "document"
            and headers.get("sec-fetch-mode") == "navigate"
            and headers.get("sec-fetch-user") == "?1"
            and "text/html" in headers.get("accept", "")
        )
    return headers.get("accept", "").startswith("text/html")
