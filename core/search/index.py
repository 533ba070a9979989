"""The full-text index of the runs' bulk text (tantivy), a directory beside the database file.

What it holds, per run: every step's thought, stated and executed action, readable sentence, answer,
typed value, error, tool outcome and page URL; every attempt's final answer and ending detail; the URL
of every network event that is not a static asset (one document per distinct URL of a task, at its
first `seq`). The rest of the searchable text (task intents, evaluator sentences, labels and notes,
failure-cause summaries) is small and changes after import, so `core.queries.search` scans it in
DuckDB at query time instead.

Consistency with the database (the contract): every document carries its run's generation, the run's
name and `runs.imported_at`. A search only accepts documents of the generations the database holds now,
so a replaced or deleted run never shows a hit, whatever the index still holds; a run whose generation
the index lacks is reported as not indexed. `index_written` (called by `core.ingest.writer.import_run`
once its transaction committed) replaces the run's documents from what the import wrote (the writer
decides the generation before its transaction and reads the tasks' sites inside it), without reopening
the database; `reindex` rebuilds the whole index from the database (`trajreview search --reindex`).
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.errors import StoreError
from core.progress import ProgressCallback

INDEX_VERSION = 2
_SEP = "\x1f"
_LOCK_WAIT_S = 60.0
_WRITER_HEAP = 64_000_000
# steps columns indexed, in the order their texts are stored, with the kind a hit shows.
STEP_TEXTS = (
    ("thought", "thought"), ("stated_action", "action"), ("executed_action", "action"),
    ("readable", "action"), ("answer", "answer"), ("value", "action"), ("error", "error"),
    ("outcome", "outcome"), ("url", "url"),
)  # fmt: skip


@dataclass(frozen=True)
class IndexedDoc:
    """One document of the index as a search returns it."""

    run: str
    task_id: int
    episode: str | None
    step: int | None
    seq: int | None
    kinds: list[str]
    texts: list[str]


def index_dir(db_path: str | Path) -> Path:
    """`data/x.duckdb` → `data/x.duckdb.search/`."""
    return Path(str(db_path) + ".search")


def generation(run: str, imported_at: Any) -> str:
    return f"{run}{_SEP}{imported_at}"


def task_key(run: str, task_id: int) -> str:
    return f"{run}{_SEP}{task_id}"


def _schema():
    import tantivy

    b = tantivy.SchemaBuilder()
    b.add_text_field("run", stored=True, tokenizer_name="raw", index_option="basic")
    b.add_text_field("gen", tokenizer_name="raw", index_option="basic")
    b.add_text_field("key", tokenizer_name="raw", index_option="basic")
    b.add_text_field("site", tokenizer_name="raw", index_option="basic")  # the task's sites (tasks.sites)
    b.add_unsigned_field("task_id", stored=True)
    b.add_text_field("episode", stored=True, tokenizer_name="raw", index_option="basic")
    b.add_integer_field("step", stored=True)
    b.add_integer_field("seq", stored=True)
    b.add_text_field("kinds", stored=True, tokenizer_name="raw", index_option="basic")
    b.add_text_field("text", stored=True)
    return b.build()


def manifest_path(db_path: str | Path) -> Path:
    """The runs the index holds, rewritten on every index write: the app's cache fingerprint includes it."""
    return index_dir(db_path) / "trajreview-runs.json"


def indexed_runs(db_path: str | Path) -> dict[str, str]:
    """{run: generation} the index holds (empty when there is no index, or one of another version)."""
    try:
        data = json.loads(manifest_path(db_path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data.get("runs", {}) if data.get("version") == INDEX_VERSION else {}


def _open(db_path: str | Path, *, create: bool):
    import tantivy

    where = index_dir(db_path)
    if create and indexed_runs(db_path) == {} and where.exists():
        shutil.rmtree(where)  # an index of another version, or one never finished: start afresh
    if create:
        where.mkdir(parents=True, exist_ok=True)
    elif not (where / "meta.json").exists():
        return None
    return tantivy.Index(_schema(), path=str(where))


def _writer(index):
    deadline = time.monotonic() + _LOCK_WAIT_S
    while True:
        try:
            return index.writer(heap_size=_WRITER_HEAP, num_threads=1)
        except ValueError as exc:  # another process holds the index's writer lock
            if time.monotonic() > deadline:
                raise StoreError(f"search index is locked by another process: {exc}") from None
            time.sleep(0.2)


_STEP_COLUMNS = ("task_id", "episode", "idx", *(c for c, _ in STEP_TEXTS))
_TRAJECTORY_COLUMNS = ("task_id", "episode", "final_answer", "termination_detail")
# The network_events columns `first_event_urls` reads.
_EVENT_COLUMNS = ("task_id", "seq", "url", "is_static_asset")


def _run_rows(store, run: str) -> tuple[str | None, dict[str, list[tuple]]]:
    """The run's generation and its text rows, read from the database (`reindex`)."""
    with store.reading() as cur:
        stamp = cur.execute("SELECT imported_at FROM runs WHERE name = ?", [run]).fetchall()
        if not stamp:
            return None, {}
        events = cur.sql(
            f"SELECT {', '.join(_EVENT_COLUMNS)} FROM network_events WHERE run = ?", params=[run]
        ).to_arrow_table()
        rows = {
            "sites": dict(cur.execute("SELECT task_id, sites FROM tasks").fetchall()),
            "events": first_event_urls(events),  # the rule an import applies to the rows it writes
        }
        for table, columns in (("steps", _STEP_COLUMNS), ("trajectories", _TRAJECTORY_COLUMNS)):
            rows[table] = cur.execute(
                f"SELECT {', '.join(columns)} FROM {table} WHERE run = ?", [run]
            ).fetchall()
    return generation(run, stamp[0][0]), rows


def written_rows(tables: dict, network_events) -> dict[str, list[tuple]]:
    """The text rows of a run from the Arrow tables its import writes (steps, trajectories and the
    `network_events` rows, or None): what `_run_rows` reads back, bar the tasks' sites."""
    rows = {table: _arrow_rows(tables.get(table), columns)
            for table, columns in (("steps", _STEP_COLUMNS), ("trajectories", _TRAJECTORY_COLUMNS))}  # fmt: skip
    rows["events"] = [] if network_events is None else first_event_urls(network_events)
    return rows


def first_event_urls(events) -> list[tuple]:
    """The network URLs the index holds, from an Arrow table of `network_events` rows (at least
    `_EVENT_COLUMNS`): (task_id, least seq, url) of each distinct URL of a task, leaving out static assets
    and rows whose `is_static_asset` or `url` is null, in no particular order. The one definition: an
    import applies it to the rows it writes, a rebuild to the rows it reads back. Arrow compute alone:
    pyarrow's group_by loads its Acero engine (56 MB more RSS in a bare process), an in-memory DuckDB
    costs a connection and a copy of the rows back into Python, and an array turned into numpy makes
    pyarrow import pandas (50 MB and 0.4 s more for a rebuild, which needs pandas nowhere else)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if events.num_rows == 0:
        return []
    # A null is_static_asset or url drops the row.
    keep = pc.and_(pc.invert(events.column("is_static_asset")), pc.is_valid(events.column("url")))
    kept = events.select(["task_id", "seq", "url"]).filter(keep).combine_chunks()
    if kept.num_rows == 0:
        return []
    coded = pc.dictionary_encode(kept.column("url").chunk(0))
    ordered = pa.Table.from_arrays(
        [kept.column("task_id"), pa.chunked_array([coded.indices]), kept.column("seq")],
        names=["task", "url", "seq"],
    ).sort_by([("task", "ascending"), ("url", "ascending"), ("seq", "ascending")])
    # Each (task, url) group's first row holds its least seq.
    n, task, url = ordered.num_rows, ordered.column("task"), ordered.column("url")
    starts = pc.or_(
        pc.not_equal(task.slice(1), task.slice(0, n - 1)), pc.not_equal(url.slice(1), url.slice(0, n - 1))
    )
    first = pa.concat_tables([ordered.slice(0, 1), ordered.slice(1).filter(starts)])
    return list(zip(first.column("task").to_pylist(), first.column("seq").to_pylist(),
                    coded.dictionary.take(first.column("url")).to_pylist(), strict=True))  # fmt: skip


def _arrow_rows(table, columns: tuple[str, ...]) -> list[tuple]:
    if table is None or table.num_rows == 0:
        return []
    return list(zip(*(table.column(c).to_pylist() for c in columns), strict=True))


def _documents(run: str, gen: str, rows: dict[str, list[tuple]]) -> Iterator[dict[str, Any]]:
    sites = rows["sites"]

    def doc(task_id, episode, step, seq, kinds, texts):
        return {"run": run, "gen": gen, "key": task_key(run, task_id), "site": sites.get(task_id) or [],
                "task_id": int(task_id),
                "episode": episode if episode is not None else "", "step": -1 if step is None else step,
                "seq": -1 if seq is None else seq, "kinds": kinds, "text": texts}  # fmt: skip

    for task_id, episode, idx, *values in rows["steps"]:
        pairs = [(kind, v) for (_, kind), v in zip(STEP_TEXTS, values, strict=True) if v]
        if pairs:
            yield doc(task_id, episode, idx, None, [k for k, _ in pairs], [v for _, v in pairs])
    for task_id, episode, answer, detail in rows["trajectories"]:
        pairs = [(k, v) for k, v in (("final answer", answer), ("ending", detail)) if v]
        if pairs:
            yield doc(task_id, episode, None, None, [k for k, _ in pairs], [v for _, v in pairs])
    for task_id, seq, url in rows["events"]:
        yield doc(task_id, None, None, seq, ["network url"], [url])


def _write(db_path: str | Path, runs: Iterable[tuple[str, str | None, dict]], *, clear: bool) -> None:
    import tantivy

    index = _open(db_path, create=True)
    manifest = {} if clear else indexed_runs(db_path)
    writer = _writer(index)
    try:
        if clear:
            writer.delete_all_documents()
        for run, gen, rows in runs:
            writer.delete_documents_by_term("run", run)
            manifest.pop(run, None)
            if gen is None:
                continue
            for fields in _documents(run, gen, rows):
                writer.add_document(tantivy.Document(**fields))
            manifest[run] = gen
        writer.commit()
        writer.wait_merging_threads()
    except BaseException:
        writer.rollback()
        raise
    path = manifest_path(db_path)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"version": INDEX_VERSION, "runs": manifest}), encoding="utf-8")
    tmp.replace(path)


def index_written(db_path: str | Path, run: str, gen: str, rows: dict[str, list[tuple]]) -> None:
    """Replace one run's documents with what its import just committed (`written_rows` and the tasks'
    sites): no read of the database. A failure here leaves the run imported and not indexed."""
    try:
        _write(db_path, [(run, gen, rows)], clear=False)
    except (OSError, ValueError) as exc:
        raise StoreError(
            f"run {run!r} was imported, but the search index beside the database was not updated ({exc});"
            " `trajreview search --reindex` rebuilds it"
        ) from None


def reindex(store, on_progress: ProgressCallback | None = None) -> int:
    """Rebuild the whole index from the database; returns the runs indexed."""
    runs = [r for (r,) in store.query("SELECT name FROM runs ORDER BY name")]

    def each() -> Iterator[tuple[str, str | None, dict]]:
        for i, run in enumerate(runs):
            yield (run, *_run_rows(store, run))
            if on_progress:
                on_progress(i + 1, len(runs))

    _write(store.path, each(), clear=True)
    return len(runs)


def move_index(source_db: str | Path, target_db: str | Path) -> None:
    """The index follows its database file when that file is moved into place (the demo build)."""
    source, target = index_dir(source_db), index_dir(target_db)
    remove_index(target_db)
    if source.exists():
        source.replace(target)


def remove_index(db_path: str | Path) -> None:
    shutil.rmtree(index_dir(db_path), ignore_errors=True)


def search_docs(
    db_path: str | Path,
    parts: list[list[str]],
    gens: list[str],
    *,
    keys: list[str] | None,
    run: str | None,
    site: str | None,
    limit: int,
) -> tuple[int, list[IndexedDoc]]:
    """(documents matching, the best `limit` of them) for every part (a word, or a phrase of words) in
    one document, among the given generations (and run, site and task keys, when given)."""
    import tantivy

    # No index, or one of another version (its manifest is not read): nothing is searched in it.
    index = _open(db_path, create=False) if indexed_runs(db_path) else None
    if index is None or not gens or not parts:
        return 0, []
    schema = index.schema
    must = tantivy.Occur.Must
    clauses = [(must, tantivy.Query.term_set_query(schema, "gen", gens))]
    if run is not None:
        clauses.append((must, tantivy.Query.term_query(schema, "run", run)))
    if site is not None:
        clauses.append((must, tantivy.Query.term_query(schema, "site", site)))
    if keys is not None:
        if not keys:
            return 0, []
        clauses.append((must, tantivy.Query.term_set_query(schema, "key", keys)))
    for words in parts:
        q = (tantivy.Query.term_query(schema, "text", words[0]) if len(words) == 1
             else tantivy.Query.phrase_query(schema, "text", words))  # fmt: skip
        clauses.append((must, q))
    searcher = index.searcher()
    result = searcher.search(tantivy.Query.boolean_query(clauses), limit, count=True)
    docs = []
    for _, address in result.hits:
        d = searcher.doc(address)
        step, seq = d.get_first("step"), d.get_first("seq")
        docs.append(
            IndexedDoc(
                run=d.get_first("run"), task_id=int(d.get_first("task_id")),
                episode=d.get_first("episode") or None, step=None if step < 0 else step,
                seq=None if seq < 0 else seq, kinds=d.get_all("kinds"), texts=d.get_all("text"),
            )
        )  # fmt: skip
    return result.count or 0, docs
