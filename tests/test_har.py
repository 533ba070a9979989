"""HAR / Playwright trace loading and network_events rows, checked against the official engine's types."""

from __future__ import annotations

import copy
import json
import zipfile
from pathlib import Path
from types import MappingProxyType

import orjson
import pytest
from webarena_verified.core.utils.network_event_utils import load_playwright_trace
from webarena_verified.types.tracing import NetworkEvent, NetworkTrace

from core.errors import InputError
from core.files import network_events
from core.files.har import TraceTooLarge, iter_har_entries, load_trace_entries, parse_trace
from core.files.network_events import is_static_asset, network_events_table
from core.files.redaction import REDACTED


def _event_rows(run: str, task_id: int, entries) -> list[dict]:
    """`network_events` rows of one task's trace as dicts (seq = index of the entry)."""
    return network_events_table(run, task_id, entries).to_pylist()


HARS = ("webarena-verified/demo-run/107/network.har", "webarena-verified/test-assets/network.har")


@pytest.fixture(scope="session", params=HARS, ids=["demo-run", "test-assets"])
def real_har(request, shipped_data: Path) -> Path:
    return shipped_data / request.param


@pytest.fixture(scope="session")
def demo_har(shipped_data: Path) -> Path:
    return shipped_data / HARS[0]


def _entries(path: Path) -> list[dict]:
    return json.loads(path.read_text())["log"]["entries"]


def _write_har(path: Path, entries: list, **dump) -> Path:
    path.write_text(json.dumps({"log": {"version": "1.2", "entries": entries}}, **dump))
    return path


# -- loading ---------------------------------------------------------------------------------------
def test_entries_are_exactly_the_files(real_har: Path):
    assert load_trace_entries(real_har) == _entries(real_har)


@pytest.mark.slow
@pytest.mark.parametrize("block_size", [1, 7, 64, 4093])
def test_streaming_is_exact_across_block_boundaries(demo_har: Path, tmp_path: Path, block_size: int):
    """Strings with brackets, escaped quotes and backslash runs must not confuse the scanner."""
    entries = _entries(demo_har)[:20]
    tricky = ['{"a": [1, 2]}', 'say \\"hi\\" ]}', "\\", "\\\\", '\\\\"', "}{][", "ünïcødé ✓ \u2028"]
    for i, entry in enumerate(entries):
        entry["request"]["headers"].append({"name": "x-tricky", "value": tricky[i % len(tricky)]})
        entry["comment"] = tricky[(i + 3) % len(tricky)] * (i % 4)
    for indent in (None, 2):
        path = _write_har(tmp_path / f"tricky-{indent}.har", entries, indent=indent, ensure_ascii=False)
        got = list(iter_har_entries(path, block_size=block_size))
        assert got == entries


def test_keys_around_the_entries_array(demo_har: Path, tmp_path: Path):
    entries = _entries(demo_har)[:5]
    har = {"log": {"pages": [{"id": "p", "title": "[{]}"}], "entries": entries, "comment": "]"}, "x": []}
    path = tmp_path / "keys.har"
    path.write_bytes(orjson.dumps(har))
    assert load_trace_entries(path) == entries
    # entries under another key than log are not a HAR
    path.write_bytes(orjson.dumps({"other": {"entries": entries}}))
    with pytest.raises(InputError, match="no log"):
        load_trace_entries(path)


def _broken(demo_har: Path, tmp_path: Path, kind: str) -> Path:
    raw = demo_har.read_bytes()
    path = tmp_path / f"{kind}.har"
    if kind == "empty":
        path.write_bytes(b"")
    elif kind == "truncated":
        path.write_bytes(raw[: len(raw) // 2])
    elif kind == "truncated_after_entries":
        path.write_bytes(raw[: raw.rindex(b"]") + 1])
    elif kind == "no_log":
        path.write_bytes(orjson.dumps({"entries": _entries(demo_har)}))
    elif kind == "no_entries":
        path.write_bytes(orjson.dumps({"log": {"version": "1.2"}}))
    elif kind == "entries_not_list":
        path.write_bytes(orjson.dumps({"log": {"entries": {"0": _entries(demo_har)[0]}}}))
    elif kind == "entry_not_object":
        path.write_bytes(orjson.dumps({"log": {"entries": [_entries(demo_har)[0], 5]}}))
    elif kind == "non_utf8":
        at = raw.index(b'"url": "') + 8
        path.write_bytes(raw[:at] + b"\xff\xfe" + raw[at:])
    elif kind == "garbage_between":
        first = raw.index(b"},", raw.index(b'"entries"')) + 2
        path.write_bytes(raw[:first] + b" nonsense " + raw[first:])
    return path


@pytest.mark.parametrize(
    ("kind", "reason"),
    [
        ("empty", "empty file"),
        ("truncated", "truncated JSON"),
        ("truncated_after_entries", "invalid JSON"),
        ("no_log", "no log"),
        ("no_entries", "no log.entries"),
        ("entries_not_list", "no log.entries"),
        ("entry_not_object", "not an object"),
        ("non_utf8", "UTF-8"),
        ("garbage_between", "invalid JSON"),
    ],
)
def test_unusable_files_raise_one_line_input_errors(demo_har: Path, tmp_path: Path, kind: str, reason: str):
    path = _broken(demo_har, tmp_path, kind)
    with pytest.raises(InputError) as info:
        load_trace_entries(path)
    message = str(info.value)
    assert message.startswith(f"{path}: ") and reason in message and "\n" not in message
    # the official loader rejects the same files
    with pytest.raises((ValueError, KeyError, TypeError, UnicodeDecodeError, AttributeError)):
        for event in NetworkTrace.from_har(path).events:
            _ = event.url_path


def test_missing_file(tmp_path: Path):
    with pytest.raises(InputError, match="cannot read"):
        load_trace_entries(tmp_path / "nope.har")


def test_playwright_trace_zip_and_network_file(shipped_data: Path, tmp_path: Path):
    template = json.loads(
        (shipped_data / "webarena-verified/test-assets/playwright-trace-nav-template.json").read_text()
    )
    lines = [{"type": "before", "callId": "x"}]
    for i, url in enumerate(["http://localhost:7780/admin", "http://localhost:7780/static/app.js"]):
        event = copy.deepcopy(template)
        event["snapshot"]["request"]["url"] = url
        event["snapshot"]["time"] = float(i)
        lines.append(event)
    text = "\n".join(json.dumps(line) for line in lines) + "\n"
    network = tmp_path / "trace.network"
    network.write_text(text)
    archive = tmp_path / "trace.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("trace.network", text)
        zf.writestr("trace.trace", "{}\n")
    official = [dict(e.data) for e in load_playwright_trace(archive)]
    assert len(official) == 2
    assert load_trace_entries(archive) == official
    assert load_trace_entries(network) == official
    assert load_trace_entries(tmp_path) == official  # a directory holding trace.network
    rows = _event_rows("r", 1, official)
    assert [r["is_static_asset"] for r in rows] == [False, True]
    assert rows[0]["is_navigation"] is True  # the template is a document navigation

    empty = tmp_path / "other.zip"
    with zipfile.ZipFile(empty, "w") as zf:
        zf.writestr("trace.trace", "{}\n")
    with pytest.raises(InputError, match="no trace.network"):
        load_trace_entries(empty)


def _odd_playwright_traces(template: dict) -> dict[str, bytes]:
    line = json.dumps(template).encode()
    in_string = copy.deepcopy(template)
    in_string["snapshot"]["request"]["url"] += "?q=a\u2028b"  # a raw U+2028 inside a JSON string
    return {
        "plain": line + b"\n",
        "no final newline": line,
        "CRLF lines": line + b"\r\n" + line + b"\r\n",
        "blank line in the middle": line + b"\n\n" + line + b"\n",
        "line without a type": b'{"callId": 1}\n' + line + b"\n",
        "line that is a list": b"[1]\n" + line + b"\n",
        "snapshot missing": b'{"type": "resource-snapshot"}\n',
        "raw U+2028 inside a string": json.dumps(in_string, ensure_ascii=False).encode() + b"\n",
        "undecodable byte between lines": line + b"\n\xff" + line + b"\n",
        "BOM": b"\xef\xbb\xbf" + line + b"\n",
        "not JSON": b"{\n",
    }


def _official_playwright(path: Path) -> list[dict] | None:
    try:
        return [dict(e.data) for e in load_playwright_trace(path)]
    except Exception:
        return None


def _ours(path: Path) -> list[dict] | None:
    try:
        return load_trace_entries(path)
    except InputError:
        return None


def test_odd_playwright_traces_read_as_the_engine_reads_them(shipped_data: Path, tmp_path: Path):
    template = json.loads(
        (shipped_data / "webarena-verified/test-assets/playwright-trace-nav-template.json").read_text()
    )
    differences, outcomes = [], set()
    for n, (case, data) in enumerate(_odd_playwright_traces(template).items()):
        network = tmp_path / f"{n}.network"
        network.write_bytes(data)
        archive = tmp_path / f"{n}.zip"
        with zipfile.ZipFile(archive, "w") as zf:
            zf.writestr("trace.network", data)
        for path in (network, archive):
            official = _official_playwright(path)
            outcomes.add(official is None)
            if _ours(path) != official:
                differences.append((case, path.suffix))
    assert differences == []
    assert outcomes == {True, False}


def test_a_zipped_trace_bomb_is_refused_without_inflating_it(tmp_path: Path, monkeypatch):
    monkeypatch.setattr("core.files.har.MAX_ZIPPED_TRACE", 1 << 20)
    archive = tmp_path / "trace.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("trace.network", b" " * (2 << 20))
    assert archive.stat().st_size < 64 << 10
    with pytest.raises(TraceTooLarge, match="inflates"):
        load_trace_entries(archive)


# -- rows ------------------------------------------------------------------------------------------
def test_rows_follow_the_official_event_model(real_har: Path):
    trace = NetworkTrace.from_har(real_har)
    rows = _event_rows("r", 7, load_trace_entries(real_har))
    assert len(rows) == len(trace.events)
    assert [r["seq"] for r in rows] == list(range(len(rows)))
    assert {(r["run"], r["task_id"]) for r in rows} == {("r", 7)}
    for row, event in zip(rows, trace.events, strict=True):
        assert row["is_static_asset"] is (not event.is_evaluation_event)
        assert row["is_navigation"] is event.is_navigation_event
        assert row["method"] == event.http_method
        assert row["status"] == event.request_status
        assert row["url_path"] == event.url_path
        assert row["redirect_url"] == event.redirect_url
        if event.is_navigation_event:
            assert row["event_type"] == "navigation"
        elif event.http_method in ("POST", "PUT", "PATCH", "DELETE"):
            assert row["event_type"] == "mutation"
        else:
            assert row["event_type"] == "other"
        assert (
            row["started_at"].isoformat().startswith(event.data["startedDateTime"][:19])
        )  # UTC in these HARs
    # both real HARs have navigations and static assets
    assert any(r["is_navigation"] for r in rows) and any(r["is_static_asset"] for r in rows)


def test_navigation_predicate_on_header_variants(demo_har: Path):
    """Our predicate agrees with the official one on every sec-fetch/accept combination."""
    base = next(e for e in _entries(demo_har) if e["request"]["method"] == "GET")
    variants = []
    for accept in ("text/html,application/xhtml+xml", "application/json", "*/*, text/html", None):
        for user in ("?1", "?0", None):
            for dest in ("document", "empty"):
                for method in ("GET", "POST"):
                    entry = copy.deepcopy(base)
                    headers = [
                        h
                        for h in entry["request"]["headers"]
                        if not h["name"].lower().startswith(("accept", "sec-fetch"))
                    ]
                    if accept is not None:
                        headers.append({"name": "Accept", "value": accept})
                    if user is not None:
                        headers.append({"name": "Sec-Fetch-User", "value": user})
                    headers += [
                        {"name": "Sec-Fetch-Dest", "value": dest},
                        {"name": "Sec-Fetch-Mode", "value": "navigate"},
                    ]
                    entry["request"]["headers"] = headers
                    entry["request"]["method"] = method
                    variants.append(entry)
    rows = _event_rows("r", 1, variants)
    official = [NetworkEvent(data=MappingProxyType(e)).is_navigation_event for e in variants]
    assert [r["is_navigation"] for r in rows] == official
    assert any(official) and not all(official)


def test_static_asset_rule_matches_official_on_odd_urls(demo_har: Path):
    base = _entries(demo_har)[0]
    urls = [
        "http://h/a.js", "http://h/a.JS", "http://h/a.js?v=1", "http://h/a.js#x", "http://h/a.js;jsessionid=1",
        "http://h/a.json", "http://h/font.woff2", "http://h/dir.png/", "data:image/png;base64,AAAA",
        "http://h/x.webp?download=1.css", "/relative/y.svg", "http://h/%2E.css",
    ]  # fmt: skip
    entries = []
    for url in urls:
        entry = copy.deepcopy(base)
        entry["request"]["url"] = url
        entries.append(entry)
    rows = _event_rows("r", 1, entries)
    official = [not NetworkEvent(data=MappingProxyType(e)).is_evaluation_event for e in entries]
    assert [r["is_static_asset"] for r in rows] == official


def _cookie_values(entries: list[dict]) -> set[str]:
    values = set()
    for e in entries:
        for c in e["request"].get("cookies", []) + e["response"].get("cookies", []):
            values.add(c["value"])
        for h in e["request"]["headers"]:
            if h["name"].lower() == "cookie":
                values.update(p.split("=", 1)[1].strip() for p in h["value"].split(";") if "=" in p)
    return {v for v in values if len(v) >= 6}


def test_redaction_of_cookies_tokens_and_passwords(real_har: Path):
    entries = _entries(real_har)
    secrets = _cookie_values(entries)
    assert secrets, "the real HARs carry session cookies"
    probe = copy.deepcopy(next(e for e in entries if e["request"]["method"] == "GET"))
    probe["request"]["headers"] += [
        {"name": "Authorization", "value": "Bearer sk-live-abcdef123456"},
        {"name": "X-CSRF-Token", "value": "csrf-value-987654"},
        {"name": "X-Api-Key", "value": "apikey-value-55555"},
    ]
    probe["request"]["url"] = "http://h/api/v4/projects?private_token=glpat-secret-xyz&page=2"
    probe["request"]["method"] = "POST"
    probe["request"]["postData"] = {
        "mimeType": "application/x-www-form-urlencoded",
        "text": "form_key=formkey-secret-1&login%5Bpassword%5D=hunter2-pass&title=Hello",
    }
    cookie_secret = sorted(secrets)[0]
    probe["request"]["url"] += f"&echo={cookie_secret}"
    rows = _event_rows("r", 1, [*entries, probe])
    text = json.dumps(rows, default=str)
    for secret in [*secrets, "sk-live-abcdef123456", "csrf-value-987654", "apikey-value-55555", "glpat-secret-xyz",
                   "formkey-secret-1", "hunter2-pass"]:  # fmt: skip
        assert secret not in text, secret
    last = rows[-1]
    headers = json.loads(last["request_headers"])
    assert headers["authorization"] == headers["x-csrf-token"] == headers["x-api-key"] == REDACTED
    assert json.loads(last["query"])["page"] == "2"
    assert json.loads(last["post_data"])["title"] == "Hello"
    assert last["event_type"] == "mutation"
    assert "user-agent" in headers and headers["user-agent"] != REDACTED


def test_malformed_entries_are_counted_not_fatal(demo_har: Path, tmp_path: Path):
    entries = _entries(demo_har)[:4]
    del entries[1]["request"]["headers"]
    del entries[2]["response"]
    path = _write_har(tmp_path / "m.har", entries)
    parsed = parse_trace(path, "r", 3)
    assert parsed.events.num_rows == 4
    assert parsed.malformed == {"entries without request headers": 1, "entries without a response": 1}
    assert parsed.events.column("status").to_pylist()[2] is None


def test_the_engine_gets_exactly_the_evaluation_events_with_their_seqs(demo_har: Path, tmp_path: Path):
    parsed = parse_trace(demo_har, "r", 1)
    official = NetworkTrace.from_har(demo_har)
    ours = NetworkTrace.from_content(parsed.scoring_entries)
    assert [e.data for e in ours.evaluation_events] == [e.data for e in official.evaluation_events]
    assert [official.events[s].data for s in parsed.scoring_seqs] == parsed.scoring_entries
    static = parsed.events.filter(parsed.events.column("is_static_asset")).column("seq").to_pylist()
    assert static and not set(static) & set(parsed.scoring_seqs)
    # a trace of static assets only still reaches the engine as a non-empty trace
    only_static = [e for e in _entries(demo_har) if e["request"]["url"].endswith(".js")][:3]
    parsed = parse_trace(_write_har(tmp_path / "static.har", only_static), "r", 1)
    assert (
        parsed.scoring_seqs == [0]
        and NetworkTrace.from_content(parsed.scoring_entries).evaluation_events == ()
    )


def test_url_paths_and_static_flags_follow_urlparse_on_every_url_shape(demo_har: Path):
    """Plain http(s) URLs get their path from an expression, all others from urlparse: both must give
    exactly `urlparse(url).path` and the official static-asset flag."""
    from urllib.parse import urlparse

    base = _entries(demo_har)[0]
    urls = [
        "http://h", "http://h/", "https://h:8080/a/b.css", "HTTP://H/A.JS", "http://h/a.js/", "http://h//x.png",
        "http://h/a;b.js", "http://h/a.js;b", "http://h/a?b.js", "http://h/a#b.js", "http://u:p@h/x.js",
        "http://h/%7Ea.js", "http://h/ä.js", "http://h/a b.js", "ftp://h/a.js", "h/a.js", "//h/a.js", "",
        "http://h/a\\b.js", "http://[::1]/a.js", "https://h/assets/app-1f2e.woff2?v=3",
    ]  # fmt: skip
    entries = []
    for url in urls:
        entry = copy.deepcopy(base)
        entry["request"]["url"] = url
        entries.append(entry)
    rows = _event_rows("r", 1, entries)
    assert [r["url_path"] for r in rows] == [urlparse(u).path for u in urls]
    official = [not NetworkEvent(data=MappingProxyType(e)).is_evaluation_event for e in entries]
    assert [r["is_static_asset"] for r in rows] == official
    assert any(official) and not all(official)


@pytest.mark.parametrize("n_secrets", [3, 12])  # literal replacements (<= 8 values) and one RE2 alternation
def test_secret_values_in_plain_urls_are_scrubbed_as_the_python_rule_does(demo_har: Path, n_secrets: int):
    """Plain URLs are redacted in Arrow: every stored URL, path and redirect must be what `Secrets.scrub_all`
    gives on the same secrets (overlapping values, regex characters and non-ASCII among them)."""
    from urllib.parse import urlparse

    from core.files.redaction import Secrets, redact_url

    values = ["abc.def+gh", "def+ghijkl", "s3cr(e)t*[x]", "ünïcødé-val"] + [
        f"tok{i:03d}xyz" for i in range(20)
    ]
    values = values[:n_secrets]
    base = _entries(demo_har)[0]
    urls = [f"http://h/{v}/a.js" for v in values] + [
        "http://h/abc.def+ghijkl/x",
        "http://h/q?k=abc.def+gh",
        "http://h/plain/path.css",
        "http://h/",
    ]
    entries = []
    for url in urls:
        entry = copy.deepcopy(base)
        entry["request"]["url"] = url
        entry["request"]["cookies"] = [{"name": f"c{i}", "value": v} for i, v in enumerate(values)]
        entry["response"]["redirectURL"] = url
        entries.append(entry)
    secrets = Secrets()
    for v in values:
        secrets.add(v)
    rows = _event_rows("r", 1, entries)
    assert [r["url"] for r in rows] == [secrets.scrub_all(redact_url(u)) for u in urls]
    assert [r["redirect_url"] for r in rows] == [secrets.scrub_all(redact_url(u)) for u in urls]
    assert [r["url_path"] for r in rows] == [secrets.scrub_all(urlparse(u).path) for u in urls]
    assert all(v not in str(r) for r in rows for v in values)


def test_values_over_the_field_limit_are_cut_for_storage_only(
    demo_har: Path, tmp_path: Path, tasks_store, monkeypatch
):
    """A URL, a header value or a body longer than FIELD_LIMIT is stored cut, with a marker naming its
    length, and the import records a problem; the engine still gets the whole entry."""
    from core.ingest.wav_run import import_wav_run

    monkeypatch.setattr("core.files.network_events.FIELD_LIMIT", 2000)
    entries = _entries(demo_har)[:6]
    navigation = next(i for i, e in enumerate(entries) if not is_static_asset(e["request"]["url"]))
    long_url = entries[navigation]["request"]["url"] + "?q=" + "x" * 5000
    entries[navigation]["request"]["url"] = long_url
    header, body = [i for i in range(len(entries)) if i != navigation][:2]
    entries[header]["request"]["headers"].append({"name": "X-Long", "value": "y" * 7000})
    entries[body]["request"]["method"] = "POST"
    entries[body]["request"]["postData"] = {
        "mimeType": "application/json",
        "text": '{"a": "' + "z" * 9000 + '"}',
    }
    har = _write_har(tmp_path / "network.har", entries)

    parsed = parse_trace(har, "r", 1)
    rows = parsed.events.to_pylist()
    assert parsed.truncated == {"URLs": 1, "header values": 1, "request bodies": 1}
    url = rows[navigation]["url"]
    assert url.startswith(long_url[:2000]) and f"{len(long_url)} characters" in url and len(url) < 2100
    assert (
        "y" * 2000 in rows[header]["request_headers"] and "7000 characters" in rows[header]["request_headers"]
    )
    assert "y" * 2001 not in rows[header]["request_headers"]
    assert (
        "characters in the file" in json.loads(rows[body]["post_data"])
        and "z" * 100 not in rows[body]["post_data"]
    )
    whole = dict(zip(parsed.scoring_seqs, parsed.scoring_entries, strict=True))
    assert whole[navigation]["request"]["url"] == long_url  # the engine judges the whole value

    run = tmp_path / "run" / "108"
    run.mkdir(parents=True)
    (run / "network.har").write_bytes(har.read_bytes())
    (run / "agent_response.json").write_text(
        '{"task_type": "RETRIEVE", "status": "SUCCESS", "retrieved_data": []}'
    )
    summary = import_wav_run(tasks_store, run.parent, "cut", score=False, workers=1)
    assert [p.kind for p in summary.problems] == ["truncated_values"]
    assert "1 URLs, 1 header values, 1 request bodies" in summary.problems[0].message


def test_the_re2_plain_url_expression_is_the_python_one():
    """`_urls` finds plain URLs with PLAIN_URL_RE2 (one Arrow call per batch) and the per-URL rule with
    `PLAIN_URL`: both must accept the same URLs and give the same path, on every character in every
    position that matters (scheme, host, path) and on real URL shapes."""

    import pyarrow as pa
    import pyarrow.compute as pc

    from core.files.network_events import PLAIN_URL, PLAIN_URL_RE2

    chars = [chr(c) for c in [*range(0x00, 0x100), 0x2028, 0x3000, 0xFEFF, 0x1F600, 0x10FFFF]]
    urls = [f"{head}{c}{tail}" for c in chars for head, tail in (
        ("http://h", "/p"), ("http://h/", ""), ("http://h/a", "b.js"), ("", "ttp://h/"), ("http:/", "/h/"),
    )]  # fmt: skip
    urls += ["HtTpS://H:80/a//b/", "http://", "https://h", "http://h/a?b", "ftp://h/", "http://h\n/x"]
    python = [m.group("path") if (m := PLAIN_URL.match(u)) else None for u in urls]
    ours = pc.struct_field(pc.extract_regex(pa.array(urls), PLAIN_URL_RE2), "path").to_pylist()
    assert ours == python
    assert 0 < sum(p is not None for p in python) < len(urls)  # both kinds present


def test_secret_values_are_looked_for_once_per_batch():
    """`Secrets.occur_in` over URLs joined together: False only when no value occurs in any (then `scrub`
    is the identity on each), for a few values (substring tests) and many (one expression)."""
    from core.files.redaction import Secrets

    urls = ["http://h/a/tok005xyz/b", "http://h/c", "http://h/ab.cd+ef"]
    for n in (3, 12):
        secrets = Secrets()
        for i in range(n):
            secrets.add(f"tok{i:03d}xyz")
        joined = "\n".join(urls)
        assert secrets.occur_in(joined) == (n > 5)
        assert secrets.occur_in(joined) == any(secrets.scrub(u) != u for u in urls)
        secrets.add("ab.cd+ef")
        assert secrets.occur_in(joined) and secrets.scrub(urls[2]) == f"http://h/{REDACTED}"
    assert not Secrets().occur_in("anything")


def test_cookies_of_an_unusual_shape_take_the_path_they_took_in_arrow(demo_har: Path):
    """Cookie values are read in Python; a cookie the Arrow conversion refuses (a number, a list where
    the object belongs) sends the batch, as before, to the reduced shapes (`entry_shape`): its other
    cookies still count as secrets, and the malformed entries are counted in the order they come."""
    secret = "s3cretCookieValue42"
    base = _entries(demo_har)[0]
    base["request"]["url"] = f"http://h/x?q={secret}"
    as_list = copy.deepcopy(base)
    as_list["request"]["cookies"] = [[secret]]  # not an object: no cookie value
    refused = copy.deepcopy(base)
    refused["response"]["cookies"] = [{"name": "n", "value": 7}]
    plain = copy.deepcopy(base)
    plain["response"]["cookies"] = [{"name": "n", "value": secret}]
    assert [r["url"] for r in _event_rows("r", 1, [as_list])] == [base["request"]["url"]]
    for entries in ([plain], [refused, plain], [as_list, plain]):
        assert [r["url"] for r in _event_rows("r", 1, entries)] == [f"http://h/x?q={REDACTED}"] * len(entries)
    no_headers = copy.deepcopy(base)
    del no_headers["request"]["headers"]
    no_request = {k: v for k, v in base.items() if k != "request"}
    counts = []
    for batch in ([no_headers, no_request], [no_headers, no_request, refused]):
        builder = network_events.EventsBuilder("r", 1)
        builder.add(copy.deepcopy(batch))
        counts.append(list(builder.malformed.items()))
    assert counts == [
        [("entries without a request", 1), ("entries without request headers", 2)],  # Arrow's null counts
        [("entries without request headers", 2), ("entries without a request", 1)],  # reduced one by one
    ]


def test_header_lists_are_grouped_only_when_equal(demo_har: Path):
    """Header lists are keyed by their pairs' codes: lists whose concatenated text is the same but whose
    pairs differ, or whose order differs, are separate groups with their own stored object."""
    base = _entries(demo_har)[0]
    lists = [
        [("a", "bc")], [("ab", "c")], [("x", "1"), ("y", "2")], [("y", "2"), ("x", "1")],
        [("x", "1y"), ("", "2")], [("x", "1")], [("x", "1"), ("x", "1")],
    ]  # fmt: skip
    entries = []
    for pairs in lists:
        entry = copy.deepcopy(base)
        entry["request"]["headers"] = [{"name": n, "value": v} for n, v in pairs]
        entries.append(entry)
    rows = _event_rows("r", 1, entries * 2)
    shown = [json.loads(r["request_headers"]) for r in rows]
    assert shown[:7] == [
        {"a": "bc"}, {"ab": "c"}, {"x": "1", "y": "2"}, {"y": "2", "x": "1"}, {"x": "1y", "": "2"},
        {"x": "1"}, {"x": "1, 1"},
    ]  # fmt: skip
    assert list(shown[3]) == ["y", "x"] and shown[7:] == shown[:7]
