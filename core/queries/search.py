"""Search across every trajectory of every run: words and "quoted phrases" over task intents, agent
thoughts, actions, answers and tool outcomes, evaluator sentences, reviewer labels and notes,
failure-cause summaries and network URLs, filtered by run, site, outcome and primary cause.

Every part of the query (a word, or a phrase: a quoted one, or a chunk with punctuation such as
`/customer/address`) must occur in one text, as whole words, in any case. The runs' bulk text is looked
up in the full-text index beside the database (`core.search.index`); the small texts that change after
import (intents, evaluator sentences, labels and notes, cause summaries) are scanned in DuckDB with the
same word rule, so they are always current.
"""

from __future__ import annotations

import re

from core.diagnose.taxonomy import ORDER, cause_name, cause_rank
from core.errors import InputError, NotFound
from core.queries.records import Record
from core.search import index as search_index
from core.store import Store

OUTCOMES = ("success", "failure", "error", "unscored")
CONTEXT = 70  # characters of context on each side of the match

_WORD = re.compile(r"[^\W_]+")
_PHRASE = re.compile(r'"([^"]*)"?|(\S+)')
_SPACE = re.compile(r"\s+")


class Snippet(Record):
    """The matching words in their context, as three plain texts (never markup)."""

    before: str
    """Context before the match (`…` where cut)."""
    match: str
    """The matching words, as written."""
    after: str
    """Context after the match."""


class SearchHit(Record):
    run: str
    """The run."""
    task_id: int
    """The task."""
    episode: str | None
    """The attempt, for a step or answer hit."""
    step: int | None
    """The step (`steps.idx`), for a step hit."""
    event_seq: int | None
    """The network event (`network_events.seq`), for a URL hit."""
    kind: str
    """What matched: intent, thought, action, answer, outcome, error, url, final answer, ending,
    network url, evaluator, label, note, cause."""
    snippet: Snippet
    """The matching words in context."""
    site: str | None
    """The task's sites (`tasks.site_key`)."""
    outcome: str
    """The task's verdict (`evaluations.status`), `unscored` without one."""
    cause: str | None
    """The task's primary failure cause (`failure_causes`), null when none."""
    diagnosed: bool
    """The run has been diagnosed (`trajreview diagnose`): without it no task has a cause."""

    def cause_text(self) -> str:
        """The cause as a hit shows it, on the Search page and in `trajreview search`: in the taxonomy's
        words (`gave up early`), `not diagnosed` for a failed task without one, empty for any other task."""
        if self.cause:
            return cause_name(self.cause)
        return cause_name(None) if self.outcome in ("failure", "error") else ""


class SearchResult(Record):
    query: str
    """The query as given."""
    hits: list[SearchHit]
    """The hits, ordered by run, task, step: the first `limit` of the scanned texts (in run and task
    order) and the `limit` most relevant indexed texts (BM25), cut to `limit`."""
    total: int
    """Texts matching in all (the hits are the first `limit` of them)."""
    not_indexed: list[str]
    """Runs of the database the full-text index does not hold as they are now: their steps, answers and
    URLs are not searched until `trajreview search --reindex`."""
    undiagnosed: list[str]
    """Runs (among those searched) without any diagnosis: a cause filter never matches their tasks."""


def parse_query(query: str) -> list[list[str]]:
    """The query's parts, each a list of lowercased words: a quoted phrase or a whitespace-separated
    chunk (a chunk with punctuation is the phrase of its words)."""
    parts = []
    for quoted, bare in _PHRASE.findall(query):
        words = [w.lower() for w in _WORD.findall(quoted or bare)]
        if words:
            parts.append(words)
    return parts


def _python_pattern(words: list[str]) -> re.Pattern:
    return re.compile(r"(?<![^\W_])" + r"[\W_]+".join(map(re.escape, words)) + r"(?![^\W_])", re.IGNORECASE)


def _sql_pattern(words: list[str]) -> str:
    # ASCII letter and digit classes: RE2 compiles Unicode classes under (?i) many times slower.
    return r"(?i)(^|[^0-9a-z])" + r"[^0-9a-z]+".join(map(re.escape, words)) + r"([^0-9a-z]|$)"


def snippet(text: str, parts: list[list[str]]) -> Snippet | None:
    """The first match of any part in `text`, with CONTEXT characters around it on one line."""
    return _snippet(text, [_python_pattern(p) for p in parts])


def _snippet(text: str, compiled: list[re.Pattern]) -> Snippet | None:
    found = [m for p in compiled if (m := p.search(text))]
    if not found:
        return None
    m = min(found, key=lambda m: m.start())
    start, end = max(0, m.start() - CONTEXT), min(len(text), m.end() + CONTEXT)
    return Snippet(
        before=("…" if start else "") + _one_line(text[start : m.start()]),
        match=_one_line(text[m.start() : m.end()]),
        after=_one_line(text[m.end() : end]) + ("…" if end < len(text) else ""),
    )


def _one_line(text: str) -> str:
    return _SPACE.sub(" ", text)


# What a hit shows of its task, and the filters, joined onto any rows with (run, task_id): `{rows}`.
_FACTS = """
    SELECT m.*, tk.site_key AS site, coalesce(e.status, 'unscored') AS outcome, fc.cause,
           m.run IN (SELECT run FROM failure_causes) AS diagnosed
    FROM ({rows}) m
    LEFT JOIN tasks tk USING (task_id)
    LEFT JOIN evaluations e USING (run, task_id)
    LEFT JOIN failure_causes fc ON fc.run = m.run AND fc.task_id = m.task_id AND fc.is_primary
    WHERE (? IS NULL OR m.run = ?) AND (? IS NULL OR list_contains(tk.sites, ?))
      AND (? IS NULL OR coalesce(e.status, 'unscored') = ?) AND (? IS NULL OR fc.cause = ?)
"""

# The small texts, scanned, each matched (`{m}`, on `text`) before anything is joined:
# (run, task_id, episode, step, seq, kind, text).
_SCANNED = """
    SELECT DISTINCT t.run, t.task_id, NULL::VARCHAR AS episode, NULL::INTEGER AS step_idx,
           NULL::INTEGER AS seq, 'intent' AS kind, i.text
    FROM trajectories t JOIN (SELECT task_id, intent AS text FROM tasks WHERE {m}) i USING (task_id)
    UNION ALL
    SELECT run, task_id, NULL, NULL, NULL, 'evaluator', text
    FROM (SELECT run, task_id, explanation AS text FROM evaluations) WHERE {m}
    UNION ALL
    SELECT run, task_id, NULL, NULL, NULL, 'cause', text
    FROM (SELECT run, task_id, summary AS text FROM failure_causes) WHERE {m}
    UNION ALL
    SELECT run, task_id, episode, step_idx, event_seq, kind, text
    FROM (SELECT * FROM annotations WHERE target IN ('task', 'step', 'event')
          QUALIFY row_number() OVER (PARTITION BY target, run, task_id, episode, step_idx, event_seq
                                     ORDER BY id DESC) = 1)
    CROSS JOIN LATERAL (VALUES ('label', label), ('note', note)) v(kind, text)
    WHERE {m}
"""


def search(
    store: Store,
    query: str,
    *,
    run: str | None = None,
    site: str | None = None,
    outcome: str | None = None,
    cause: str | None = None,
    limit: int = 50,
) -> SearchResult:
    """The texts matching every part of `query`, with the filters applied, as hits."""
    parts = parse_query(query)
    if not parts:
        raise InputError("query", "give at least one word to search for")
    if outcome is not None and outcome not in OUTCOMES:
        raise InputError("--outcome", f"{outcome!r} is not one of {', '.join(OUTCOMES)}")
    if cause is not None and cause not in ORDER:
        raise InputError("--cause", f"{cause!r} is not one of {', '.join(ORDER)}")
    if limit < 1:
        raise InputError("--limit", "must be at least 1")
    filters = [run, run, site, site, outcome, outcome, cause, cause]
    # ILIKE on each word first (DuckDB's fast substring search), the word-boundary pattern on what passes.
    match = " AND ".join(["text ILIKE ?"] * sum(map(len, parts)) + ["regexp_matches(text, ?)"] * len(parts))
    patterns = [f"%{w}%" for p in parts for w in p] + [_sql_pattern(p) for p in parts]
    with store.reading() as cur:
        runs = {name: (stamp, diagnosed) for name, stamp, diagnosed in cur.execute(
            "SELECT name, imported_at, name IN (SELECT run FROM failure_causes) FROM runs").fetchall()}  # fmt: skip
        if run is not None and run not in runs:
            raise NotFound("run", run)
        scanned = cur.execute(
            "SELECT *, count(*) OVER () FROM (" + _FACTS.format(rows=_SCANNED.format(m=match))
            + ") ORDER BY run, task_id, step_idx NULLS FIRST LIMIT ?",
            [*patterns * 4, *filters, limit],
        ).fetchall()  # fmt: skip
        keys = _task_keys(cur, run, outcome, cause)
    gens = [search_index.generation(r, stamp) for r, (stamp, _) in runs.items()]
    n_indexed, docs = search_index.search_docs(
        store.path, parts, gens, keys=keys, run=run, site=site, limit=limit
    )
    compiled = [_python_pattern(p) for p in parts]
    hits = [_hit(row[:7], row[7:11], compiled) for row in scanned]
    found = []
    for d in docs:
        pairs = list(zip(d.kinds, d.texts, strict=False))
        kind, text = next(((k, t) for k, t in pairs if any(p.search(t) for p in compiled)), pairs[0])
        found.append((d.run, d.task_id, d.episode, d.step, d.seq, kind, text))
    by_key = _facts_of(store, sorted({(r[0], r[1]) for r in found}), filters)
    hits += [_hit(row, by_key[row[:2]], compiled) for row in found if row[:2] in by_key]
    hits.sort(key=lambda h: (h.run, h.task_id, -1 if h.step is None else h.step, h.kind))
    searched = [run] if run is not None else sorted(runs)
    indexed = search_index.indexed_runs(store.path)
    return SearchResult(
        query=query, hits=hits[:limit], total=(scanned[0][-1] if scanned else 0) + n_indexed,
        not_indexed=[r for r in searched if indexed.get(r) != search_index.generation(r, runs[r][0])],
        undiagnosed=[r for r in searched if not runs[r][1]],
    )  # fmt: skip


def _task_keys(cur, run: str | None, outcome: str | None, cause: str | None) -> list[str] | None:
    """The index's task keys the outcome and cause filters keep (None: no such filter)."""
    if outcome is None and cause is None:
        return None
    tasks = "SELECT DISTINCT run, task_id FROM trajectories WHERE (? IS NULL OR run = ?)"
    if outcome is not None:
        tasks = (
            f"SELECT t.* FROM ({tasks}) t ANTI JOIN evaluations USING (run, task_id)" if outcome == "unscored"
            else "SELECT run, task_id FROM evaluations WHERE (? IS NULL OR run = ?) AND status = ?"
        )  # fmt: skip
    params = [run, run] + ([outcome] if outcome not in (None, "unscored") else [])
    if cause is not None:
        # One primary row per task: the join repeats no task.
        tasks = (
            f"SELECT t.run, t.task_id FROM ({tasks}) t JOIN failure_causes f USING (run, task_id)"
            " WHERE f.is_primary AND f.cause = ?"
        )
        params.append(cause)
    return [search_index.task_key(r, t) for r, t in cur.execute(tasks, params).fetchall()]


def _facts_of(store: Store, keys: list[tuple[str, int]], filters: list) -> dict[tuple[str, int], tuple]:
    """(site, outcome, cause, diagnosed) of each task, among those the filters keep."""
    if not keys:
        return {}
    values = ", ".join("(?, ?)" for _ in keys)
    rows = store.query(
        f"SELECT * FROM ({_FACTS.format(rows=f'SELECT * FROM (VALUES {values}) v(run, task_id)')})",
        [*(v for k in keys for v in k), *filters],
    )
    return {(r[0], r[1]): r[2:] for r in rows}


def _hit(row: tuple, fact: tuple, compiled: list[re.Pattern]) -> SearchHit:
    run, task_id, episode, step, seq, kind, text = row
    site, outcome, cause, diagnosed = fact
    found = _snippet(text, compiled) or Snippet(before="", match="", after=_one_line(text[: 2 * CONTEXT]))
    return SearchHit(
        run=run, task_id=task_id, episode=episode, step=step, event_seq=seq, kind=kind, snippet=found,
        site=site, outcome=outcome, cause=cause, diagnosed=diagnosed,
    )  # fmt: skip


def search_filters(store: Store) -> dict[str, list[str]]:
    """The values each filter can take in this database: runs, sites, outcomes, causes (codes, in the
    taxonomy's order as every page lists them)."""
    runs = [r for (r,) in store.query("SELECT name FROM runs ORDER BY name")]
    sites = [s for (s,) in store.query("SELECT DISTINCT unnest(sites) AS s FROM tasks ORDER BY s")]
    causes = sorted(
        (c for (c,) in store.query("SELECT DISTINCT cause FROM failure_causes WHERE is_primary")),
        key=lambda c: (cause_rank(c), c),
    )
    return {"run": runs, "site": sites, "outcome": list(OUTCOMES), "cause": causes}
