"""Search across every run (`trajreview search`, core/queries/search.py, core/search/index.py) on the
shipped demo's real runs: phrases from agent thoughts and URL fragments from network traces are found at
their task and step, filters keep only their tasks, and a replaced run never shows a hit."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from cause_support import forget_diagnosis
from cli_support import run_cli
from typer.testing import CliRunner

from core.cli.main import app
from core.ingest.records import RunMeta
from core.ingest.writer import replace_run
from core.queries.search import parse_query, search, snippet
from core.review.annotations import annotate
from core.search import index as search_index
from core.store import Store


@pytest.fixture
def demo(demo_db: Path, tmp_path: Path) -> Path:
    """A writable copy of the shipped demo with its search index beside it."""
    path = tmp_path / "demo.duckdb"
    shutil.copy(demo_db, path)
    shutil.copytree(search_index.index_dir(demo_db), search_index.index_dir(path))
    return path


def _cli(db: Path, *args: str) -> dict:
    result = CliRunner().invoke(app, ["--db", str(db), "search", *args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def _a_thought_phrase(store: Store, run: str) -> tuple[int, int, str]:
    """(task, step, five words from the middle of a real thought) of the run."""
    for task_id, idx, thought in store.query(
        "SELECT task_id, idx, thought FROM steps WHERE run = ? AND length(thought) > 200 ORDER BY task_id, idx",
        [run],
    ):
        words = thought.split()
        phrase = " ".join(words[len(words) // 2 : len(words) // 2 + 5])
        if len(parse_query(f'"{phrase}"')[0]) == 5:
            return task_id, idx, phrase
    raise AssertionError("no long thought")


def test_cli_finds_a_phrase_of_an_opagent_thought_at_its_task_and_step(demo):
    with Store(demo, read_only=True) as store:
        task_id, idx, phrase = _a_thought_phrase(store, "opagent")
    out = _cli(demo, f'"{phrase}"', "--run", "opagent", "--limit", "500")
    assert out["total"] >= 1 and out["not_indexed"] == []
    at = [(h["task_id"], h["step"]) for h in out["hits"] if h["kind"] == "thought"]
    assert (task_id, idx) in at
    hit = next(h for h in out["hits"] if (h["task_id"], h["step"]) == (task_id, idx))
    assert " ".join(hit["snippet"]["match"].split()).lower() == " ".join(phrase.split()).lower() or (
        parse_query(hit["snippet"]["match"]) == parse_query(phrase)
    )
    assert {h["run"] for h in out["hits"]} == {"opagent"}


def test_cli_finds_a_url_fragment_of_a_wav_network_event(demo):
    with Store(demo, read_only=True) as store:
        task_id, seq, url = store.query(
            "SELECT task_id, min(seq), url FROM network_events WHERE run = 'wav-demo' AND NOT is_static_asset"
            " AND url LIKE '%/%/%/%/%' GROUP BY task_id, url ORDER BY task_id, min(seq) LIMIT 1"
        )[0]
    fragment = "/" + "/".join(url.split("?")[0].rstrip("/").split("/")[-2:])
    out = _cli(demo, fragment, "--run", "wav-demo", "--limit", "500")
    events = [(h["task_id"], h["event_seq"]) for h in out["hits"] if h["kind"] == "network url"]
    assert (task_id, seq) in events


def test_words_match_whole_words_in_any_case():
    assert parse_query('Search "Shipping  address" /customer/address') == [
        ["search"], ["shipping", "address"], ["customer", "address"],
    ]  # fmt: skip
    found = snippet("Let me click on the SEARCH-box now", parse_query('"search box"'))
    assert (found.before, found.match, found.after) == ("Let me click on the ", "SEARCH-box", " now")
    assert snippet("researching boxes", parse_query("search")) is None


def test_filters_keep_only_their_tasks(demo):
    with Store(demo, read_only=True) as store:
        every = search(store, "the", limit=2000)
        failed = search(store, "the", outcome="failure", limit=2000)
        shopping = search(store, "the", site="shopping", limit=2000)
        sites = dict(store.query("SELECT task_id, sites FROM tasks"))
    assert failed.hits and {h.outcome for h in failed.hits} == {"failure"}
    assert failed.total < every.total
    assert shopping.hits and all("shopping" in sites[h.task_id] for h in shopping.hits)


def test_cause_filter_and_cause_summaries(demo):
    """Causes as `trajreview diagnose` stored them in the demo build; wav-demo's forgotten stands for a run
    not diagnosed yet."""
    with Store(demo) as store:
        forget_diagnosis(store, "wav-demo")
        gave_up = set(
            store.query("SELECT run, task_id FROM failure_causes WHERE is_primary AND cause = 'gave_up'")
        )
        by_cause = search(store, "the", cause="gave_up", limit=2000)
        summary = search(store, '"got HTTP 502"', limit=50)  # the constructed 502's cause sentence
        not_diagnosed = search(store, "expected", run="wav-demo", limit=5)  # its evaluator sentence
    assert gave_up and by_cause.hits and {(h.run, h.task_id) for h in by_cause.hits} <= gave_up
    assert {h.cause for h in by_cause.hits} == {"gave_up"}
    assert ("wav-navigation", 374, "cause") in {(h.run, h.task_id, h.kind) for h in summary.hits}
    assert "opagent" not in by_cause.undiagnosed and "wav-demo" in by_cause.undiagnosed
    failed = [h for h in not_diagnosed.hits if h.outcome == "failure"]
    assert failed and all(h.cause_text() == "not diagnosed" for h in failed)


def test_labels_and_notes_are_searched_latest_row_only(demo):
    with Store(demo) as store:
        task_id, idx, _ = _a_thought_phrase(store, "opagent")
        annotate(store, "step", "tester", run="opagent", task_id=task_id, episode="0", step_idx=idx,
                 note="Flibbertigibbet clicked the wrong tab")  # fmt: skip
        found = search(store, "flibbertigibbet", limit=10)
        annotate(
            store, "step", "tester", run="opagent", task_id=task_id, episode="0", step_idx=idx, note=None
        )
        cleared = search(store, "flibbertigibbet", limit=10)
    assert [(h.run, h.task_id, h.step, h.kind) for h in found.hits] == [("opagent", task_id, idx, "note")]
    assert cleared.hits == []


def test_a_replaced_run_never_shows_a_hit_until_reindexed(demo):
    with Store(demo) as store:
        task_id, idx, phrase = _a_thought_phrase(store, "opagent")
        assert any(h.run == "opagent" for h in search(store, f'"{phrase}"', limit=50).hits)
        # The run replaced in the database behind the index's back (as a crash between the import's
        # commit and its index write would leave it): the index still holds the old documents.
        with store.transaction() as cur:
            replace_run(
                cur, RunMeta(name="opagent", source_format="opagent", paradigm="unknown", source_path="x")
            )
        stale = search(store, f'"{phrase}"', limit=50)
        assert not any(h.run == "opagent" and h.kind != "intent" for h in stale.hits)
        assert "opagent" in stale.not_indexed
        search_index.reindex(store)
        fresh = search(store, f'"{phrase}"', limit=50)
        # A deleted run: its row gone, its documents still in the index.
        assert search(store, "admin", run="wav-demo", limit=5).hits
        with store.transaction() as cur:
            cur.execute("DELETE FROM runs WHERE name = 'wav-demo'")
        assert not [h for h in search(store, "admin", limit=500).hits if h.run == "wav-demo"]
    assert fresh.not_indexed == [] and not any(h.run == "opagent" and h.step is not None for h in fresh.hits)


@pytest.mark.slow
def test_import_indexes_the_run_and_a_reimport_replaces_its_documents(tasks_store, shipped_data):
    from core.ingest.opagent import import_opagent

    import_opagent(tasks_store, shipped_data / "oagent-run", "op")
    task_id, idx, phrase = _a_thought_phrase(tasks_store, "op")
    first = search(tasks_store, f'"{phrase}"', limit=500)
    assert first.not_indexed == [] and (task_id, idx) in [(h.task_id, h.step) for h in first.hits]
    import_opagent(tasks_store, shipped_data / "oagent-run", "op")
    again = search(tasks_store, f'"{phrase}"', limit=500)
    assert again.total == first.total and again.not_indexed == []
    # What the import indexed from the rows it wrote is what a rebuild from the database indexes.
    frequent = search(tasks_store, "the", run="op", limit=5).total
    search_index.reindex(tasks_store)
    rebuilt = search(tasks_store, f'"{phrase}"', limit=500)
    assert rebuilt.total == first.total and rebuilt.hits == first.hits
    assert search(tasks_store, "the", run="op", limit=5).total == frequent


def test_a_failed_reimport_leaves_the_index_as_it_was(tasks_store, shipped_data, monkeypatch):
    """The index of an import is written after its transaction committed (core.ingest.writer.import_run):
    when the network events' insert fails, the run's old documents stay searchable, no new one appears,
    the manifest is unchanged, and the next import indexes at once (no writer lock left behind)."""
    from core.ingest import writer
    from core.ingest.wav_run import import_wav_run

    wav = shipped_data / "webarena-verified"

    def reimport():
        import_wav_run(tasks_store, wav / "demo-run", "w", config=wav / "config.demo.json", workers=1)

    reimport()
    word = tasks_store.query(
        "SELECT split_part(split_part(split_part(url, '//', 2), ':', 1), '.', 1) FROM network_events"
        " WHERE run = 'w' AND NOT is_static_asset LIMIT 1"
    )[0][0]
    before = search(tasks_store, word, run="w", limit=10_000)
    runs_before = search_index.indexed_runs(tasks_store.path)
    assert before.not_indexed == [] and any(h.kind == "network url" for h in before.hits)
    real = writer.insert_rows
    staged = []

    def failing(cur, table, rows, **kwargs):
        if table == "network_events":
            staged.append(tasks_store.path)
            raise RuntimeError("disk full")
        return real(cur, table, rows, **kwargs)

    monkeypatch.setattr(writer, "insert_rows", failing)
    with pytest.raises(RuntimeError, match="disk full"):
        reimport()
    assert staged and search_index.indexed_runs(tasks_store.path) == runs_before
    after = search(tasks_store, word, run="w", limit=10_000)
    assert after.not_indexed == [] and (after.total, after.hits) == (before.total, before.hits)
    monkeypatch.setattr(writer, "insert_rows", real)
    started = time.monotonic()
    reimport()
    assert time.monotonic() - started < search_index._LOCK_WAIT_S / 2
    again = search(tasks_store, word, run="w", limit=10_000)
    assert search_index.indexed_runs(tasks_store.path) != runs_before and again.not_indexed == []
    assert (again.total, again.hits) == (before.total, before.hits)


def test_first_event_urls_keeps_each_urls_least_seq_and_drops_nulls_and_assets():
    """The one rule of the index's URL documents (`first_event_urls`, applied by an import and by a
    rebuild): a null static flag or URL drops the row, a static asset is left out, a URL's seq is its least
    even when a later row comes first, an empty URL is a URL; chunks do not change the result."""
    import pyarrow as pa

    from core.files.network_events import NETWORK_EVENTS_SCHEMA

    rows = [  # (task_id, seq, url, is_static_asset)
        (1, 5, "http://a/x", False), (1, 2, "http://a/x", False), (1, 3, "http://a/y", None),
        (1, 4, None, False), (1, 6, "http://a/s.css", True), (2, 1, "http://a/x", False),
        (2, 0, "http://a/z", False), (2, 7, "http://a/z", False), (3, 9, "", False),
    ]  # fmt: skip
    columns = dict(zip(("task_id", "seq", "url", "is_static_asset"), zip(*rows, strict=True), strict=True))
    table = pa.table(
        {f.name: pa.array(columns.get(f.name, [None] * len(rows)), f.type) for f in NETWORK_EVENTS_SCHEMA},
        schema=NETWORK_EVENTS_SCHEMA,
    )
    got = search_index.first_event_urls(table)
    assert sorted(got) == [(1, 2, "http://a/x"), (2, 0, "http://a/z"), (2, 1, "http://a/x"), (3, 9, "")]
    assert search_index.first_event_urls(table.slice(0, 0)) == []
    assert search_index.first_event_urls(pa.concat_tables([table.slice(0, 4), table.slice(4)])) == got


def test_cli_bad_filter_is_one_line_and_exit_2(demo):
    bad = run_cli("search", "order", "--outcome", "passed", db=demo)
    assert bad.returncode == 2 and bad.stderr.strip().startswith("error: --outcome: 'passed' is not one of")
    assert len(bad.stderr.strip().splitlines()) == 1


def test_cli_reindex_rebuilds_a_missing_index(demo):
    shutil.rmtree(search_index.index_dir(demo))
    with Store(demo, read_only=True) as store:
        assert search(store, "order", limit=5).not_indexed != []
    result = CliRunner().invoke(app, ["--db", str(demo), "search", "--reindex"])
    assert result.exit_code == 0, result.output
    with Store(demo, read_only=True) as store:
        runs = [r for (r,) in store.query("SELECT name FROM runs")]
        assert search(store, "order", limit=5).not_indexed == []
    assert sorted(search_index.indexed_runs(demo)) == sorted(runs)


def test_whole_words_in_any_case_no_stemming_and_intents_once_per_run(tasks_store, tmp_path):
    from core.ingest.jsonl import import_jsonl

    steps = [{"thought": "Let me click on the SEARCH-box now", "executed_action": "click('1')"},
             {"thought": "researching the page", "executed_action": "click('2')"},
             {"thought": "two searches later", "executed_action": "click('3')"}]  # fmt: skip
    lines = [{"agent": "a", "model": "m", "paradigm": "step_by_step"},
             {"task_id": 21, "steps": steps, "final_answer": "x", "reward": 0.0, "termination": "answered"}]  # fmt: skip
    path = tmp_path / "words.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines), encoding="utf-8")
    for run in ("words-a", "words-b"):
        import_jsonl(tasks_store, path, run)
    found = search(tasks_store, "search", run="words-a")
    assert [(h.step, h.snippet.match) for h in found.hits if h.kind == "thought"] == [(0, "SEARCH")]
    assert [h.step for h in search(tasks_store, "searches", run="words-a").hits if h.kind == "thought"] == [2]
    (intent,) = tasks_store.query("SELECT intent FROM tasks WHERE task_id = 21")[0]
    phrase = " ".join(w for part in parse_query(intent)[:4] for w in part)
    intents = [h for h in search(tasks_store, f'"{phrase}"', limit=100).hits if h.kind == "intent"]
    assert sorted(h.run for h in intents if h.task_id == 21) == ["words-a", "words-b"]


def test_each_hit_opens_the_task_page_where_it_is(demo):
    from dashboard.components.search_hits import task_link_params

    with Store(demo, read_only=True) as store:
        task_id, idx, phrase = _a_thought_phrase(store, "opagent")
        step = next(h for h in search(store, f'"{phrase}"', run="opagent", limit=500).hits if h.step == idx)
        event = search(store, "admin", run="wav-demo", limit=500).hits
        failed = search(store, "the", run="opagent", outcome="failure", limit=2000).hits
    assert task_link_params(step) == {
        "run": "opagent",
        "task": str(task_id),
        "episode": "0",
        "step": str(idx),
    }
    ev = next(h for h in event if h.kind == "network url")
    assert task_link_params(ev) == {"run": "wav-demo", "task": str(ev.task_id), "tab": "Network",
                                    "ev": str(ev.event_seq)}  # fmt: skip
    sentence = next(h for h in failed if h.kind == "evaluator")
    assert task_link_params(sentence) == {
        "run": "opagent",
        "task": str(sentence.task_id),
        "tab": "Evaluation",
    }


def test_a_reindex_changes_the_apps_cache_fingerprint(demo):
    """The page's cached hits are keyed by the database fingerprint: a reindex, which leaves the database
    file alone, must change it too, or the page would show the old index's hits."""
    from dashboard import db

    before = db.fingerprint(demo)
    time.sleep(0.01)
    assert CliRunner().invoke(app, ["--db", str(demo), "search", "--reindex"]).exit_code == 0
    assert db.fingerprint(demo) != before


def test_an_empty_search_page_offers_the_same_search_without_each_filter(open_page, demo: Path):
    """Nothing found: the page says what to try, and each filter in use is a link to the same search without
    it; following the one without the cause filter finds the run's texts. Counts say text or texts."""
    from urllib.parse import parse_qs

    from dashboard.components.search_hits import count_text

    wanted = {"query": "customer", "run": "wav-demo", "cause": "gave_up"}
    at = open_page(demo, "views/search.py", **wanted)
    assert [c.value for c in at.caption] == ["0 matching texts; 0 shown."]
    assert any("Drop a filter" in i.value and "broaden the words" in i.value for i in at.info)
    links = {
        link.proto.label.replace("\\", ""): parse_qs(link.proto.query_string) for link in at.get("page_link")
    }
    assert links == {
        "Same search, every run (not only wav-demo)": {"query": ["customer"], "cause": ["gave_up"], "limit": ["50"]},
        "Same search, any primary cause (not only gave up early)": {"query": ["customer"], "run": ["wav-demo"],
                                                                    "limit": ["50"]},
    }  # fmt: skip
    with Store(demo, read_only=True) as store:
        found = search(store, "customer", run="wav-demo", limit=50)
    assert 0 < found.total < 50
    params = {k: v[0] for k, v in links["Same search, any primary cause (not only gave up early)"].items()}
    at = open_page(demo, "views/search.py", **params)
    plural = "text" if found.total == 1 else "texts"
    assert at.caption[0].value == f"{found.total} matching {plural}; {found.total} shown." and not at.info
    assert count_text(1, 1) == "1 matching text; 1 shown."
    assert count_text(120, 50) == "120 matching texts; 50 shown (raise the limit for more)."


def test_triage_finding_nothing_offers_each_filter_dropped_and_every_run(open_page, demo: Path):
    """Triage of wav-demo for words only other runs have, among its failures: not a dead end. Each filter in
    use is a link to the same list without it (the words too), and the words are a link to Search over every
    run; following them finds the run's failures, and the other runs' texts."""
    from urllib.parse import parse_qs

    with Store(demo, read_only=True) as store:
        sql = "SELECT count(*) FROM evaluations WHERE run = 'wav-demo' AND status = 'failure'"
        (failed,) = store.query(sql)[0]
        elsewhere = search(store, "repository", limit=50)
    assert failed > 0 and elsewhere.total > 0 and "wav-demo" not in {h.run for h in elsewhere.hits}
    at = open_page(demo, "views/triage.py", run="wav-demo", verdict="failure", q="repository")
    assert any(i.value.startswith("No task matches these filters. Drop one") for i in at.info)
    links = {
        link.proto.label.replace("\\", ""): (link.proto.page, parse_qs(link.proto.query_string))
        for link in at.get("page_link")
        if link.proto.label.startswith(("Same list", "Search every run"))
    }
    same_list = {label: query for label, (page, query) in links.items() if page == "triage"}
    without_words = "Same list without the words “repository”"
    assert same_list == {
        "Same list, any verdict (not only failure)": {"run": ["wav-demo"], "q": ["repository"]},
        without_words: {"run": ["wav-demo"], "verdict": ["failure"]},
    }
    page, query = links["Search every run for “repository”"]
    assert page == "search" and query == {"query": ["repository"]}
    at = open_page(demo, "views/triage.py", **{k: v[0] for k, v in same_list[without_words].items()})
    assert not at.info and any(c.value.startswith(f"**{failed}** of ") for c in at.caption)
    at = open_page(demo, "views/search.py", query="repository")
    assert at.caption[0].value.startswith(f"{elsewhere.total} matching texts")


def test_a_wav_import_indexes_its_network_urls_as_a_rebuild_does(tasks_store, shipped_data):
    """The URLs `import wav-run` indexes from its Arrow table (first seq of each distinct non-static URL
    of a task) are the documents `search --reindex` builds from the stored network events."""
    from core.ingest.wav_run import import_wav_run

    wav = shipped_data / "webarena-verified"
    import_wav_run(tasks_store, wav / "demo-run", "w", config=wav / "config.demo.json", workers=1)
    host = tasks_store.query(
        "SELECT split_part(split_part(url, '//', 2), ':', 1) FROM network_events WHERE run = 'w'"
        " AND NOT is_static_asset LIMIT 1"
    )[0][0]
    word = host.split(".")[0]

    def hits():
        found = search(tasks_store, word, run="w", limit=10_000)
        return found.total, sorted(
            (h.task_id, h.event_seq or -1, h.kind, h.snippet.before, h.snippet.match, h.snippet.after)
            for h in found.hits
        )

    imported = hits()
    (distinct,) = tasks_store.query(
        "SELECT count(DISTINCT (task_id, url)) FROM network_events WHERE run = 'w' AND NOT is_static_asset"
        " AND url IS NOT NULL"
    )[0]
    assert sum(1 for h in imported[1] if h[2] == "network url") == distinct > 0
    search_index.reindex(tasks_store)
    assert hits() == imported


def test_an_import_and_a_rebuild_index_the_same_network_urls_of_the_real_trace(
    tasks_store, shipped_data, monkeypatch
):
    """One rule, two inputs: the URL documents `import wav-run` writes from its Arrow table and those
    `search --reindex` builds from the stored rows are the same, and are the first seq of each distinct
    non-static URL of a task by a query over the stored events (the demo run's real HAR traces, where a URL
    recurs at later seqs)."""
    from core.ingest.wav_run import import_wav_run

    written = []
    real = search_index.index_written
    monkeypatch.setattr(search_index, "index_written", lambda db, run, gen, rows: (
        written.append(rows["events"]), real(db, run, gen, rows)))  # fmt: skip
    wav = shipped_data / "webarena-verified"
    import_wav_run(tasks_store, wav / "demo-run", "w", config=wav / "config.demo.json", workers=1)
    rebuilt = []
    monkeypatch.setattr(search_index, "_write", lambda db, runs, clear: rebuilt.extend(
        rows["events"] for _, _, rows in runs))  # fmt: skip
    search_index.reindex(tasks_store)
    expected = tasks_store.query(
        "SELECT task_id, min(seq), url FROM network_events WHERE run = 'w' AND NOT is_static_asset"
        " AND url IS NOT NULL GROUP BY task_id, url"
    )
    (recurring,) = tasks_store.query(
        "SELECT count(*) FROM (SELECT 1 FROM network_events WHERE run = 'w' AND NOT is_static_asset"
        " GROUP BY task_id, url HAVING count(*) > 1)"
    )[0]
    assert len(written) == 1 and len(rebuilt) == 1 and recurring > 0
    assert sorted(written[0]) == sorted(rebuilt[0]) == sorted(expected)


def test_causes_read_as_the_taxonomys_words_and_travel_as_codes(open_page, demo: Path):
    """Search's cause filter and its hits' links say a cause as every other page does (`gave up early`, in the
    taxonomy's order), while the URL keeps the code (`cause=gave_up`)."""
    from core.diagnose.taxonomy import CAUSE_NAME, PRECEDENCE, UNDECIDED
    from core.queries.search import search_filters

    with Store(demo, read_only=True) as store:
        codes = search_filters(store)["cause"]
        found = search(store, "page", run="opagent", cause="gave_up", limit=50)
    order = (*PRECEDENCE, UNDECIDED)
    assert len(codes) >= 3 and codes == sorted(codes, key=order.index)
    at = open_page(demo, "views/search.py", query="page", run="opagent", cause="gave_up")
    box = next(b for b in at.selectbox if b.label == "Primary cause")
    assert box.options == [CAUSE_NAME[c] for c in codes] and box.value == "gave_up"
    labels = [link.proto.label.replace("\\", "") for link in at.get("page_link")]
    assert found.total and len(labels) == len(found.hits)
    assert all(label.endswith("· cause: gave up early") for label in labels), labels[:3]


def test_the_cli_and_the_page_say_a_hits_cause_in_the_same_words(open_page, demo: Path):
    """One rule (`SearchHit.cause_text`) for both: the taxonomy's words (`gave up early`, never the code
    `gave_up` the filter takes), and `not diagnosed` for a failed task of a diagnosed run whose primary cause
    is gone (as after a re-score that failed it)."""
    from core.diagnose.taxonomy import CAUSE_NAME, NOT_DIAGNOSED

    with Store(demo) as store:
        found = search(store, "the", run="opagent", outcome="failure", limit=2000)
        causes = {(h.task_id, h.cause) for h in found.hits}
        task_id, cause = min((t, c) for t, c in causes if c is not None)
        with store.transaction() as cur:
            cur.execute("DELETE FROM failure_causes WHERE run = 'opagent' AND task_id = ?", [task_id])
        after = search(store, "the", run="opagent", outcome="failure", limit=2000)
    assert {h.cause_text() for h in after.hits if h.task_id == task_id} == {NOT_DIAGNOSED}
    assert {h.cause_text() for h in after.hits if h.task_id != task_id} == {
        CAUSE_NAME[c] for t, c in causes if t != task_id
    }
    table = run_cli("search", "page", "--run", "opagent", "--cause", "gave_up", db=demo, check=True).stdout
    hits = _cli(demo, "page", "--run", "opagent", "--cause", "gave_up")["hits"]
    assert hits and {h["cause"] for h in hits} == {"gave_up"}  # JSON keeps the code
    assert table.count("gave up early") == len(hits) and "gave_up" not in table
    at = open_page(demo, "views/search.py", query="the", run="opagent", outcome="failure", limit="500")
    labels = [link.proto.label.replace("\\", "") for link in at.get("page_link")]
    mine = [label for label in labels if f"· task {task_id} ·" in label]
    assert mine and all(label.endswith(f"· cause: {NOT_DIAGNOSED}") for label in mine)
    assert CAUSE_NAME[cause] != NOT_DIAGNOSED


def test_a_rebuild_reads_the_events_as_arrow_without_loading_pandas(demo: Path):
    """`search --reindex` runs `first_event_urls` over the stored events (Arrow) yet loads no pandas: an
    array turned into numpy makes pyarrow import it (50 MB more RSS, 0.4 s), which the SQL it replaced never
    did."""
    import subprocess
    import sys

    code = (
        "import sys\nfrom core.store import Store\nfrom core.search.index import reindex\n"
        f"with Store({str(demo)!r}, read_only=True) as s:\n    n = reindex(s)\n"
        "print(n, 'pyarrow' in sys.modules, 'pandas' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    with Store(demo, read_only=True) as store:
        (runs,) = store.query("SELECT count(*) FROM runs")[0]
        (events,) = store.query("SELECT count(*) FROM network_events")[0]
    assert events > 0 and out == [str(runs), "True", "False"]
