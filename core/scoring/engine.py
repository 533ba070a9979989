"""Official WebArena-Verified scoring of parsed runs, with explanations, into `evaluations`.

We never re-implement an evaluator: each task goes through the installed engine's `evaluate_task`.
What we add is speed (one `WebArenaVerified` per process, traces parsed once and handed over as a
prebuilt `NetworkTrace`, both cores), storage, and a sentence per failing evaluator
(`core.scoring.explanations`) with the trace event it matched or the nearest one.

Only a few engine internals are touched, and only to *locate* events for explanations, never to decide
a status: the evaluator's own filter/normalise steps (pinned engine version, see pyproject).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence, Sized
from functools import cached_property, lru_cache, partial
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

import orjson
from pydantic import BaseModel, Field, ValidationError

from core.errors import InputError, NotFound
from core.files.har import TRACE_FILES, gc_paused
from core.files.parallel import SCORING_MODULES, WorkerPool, arrow_without_pandas
from core.files.redaction import redact_report
from core.files.submission import run_directory
from core.progress import ProgressCallback
from core.scoring import explanations

if TYPE_CHECKING:  # a scoring worker never loads DuckDB: the store is the parent's
    from core.store import ShortLivedStore, Store

SOURCE = "webarena-verified"
ENGINE_LOGGER = "WebArena-Verified"

# Tasks whose own expected answer the engine rejects under webarena-verified 1.2.3: they cannot pass,
# whatever the agent does. Evidence and the derivation: docs/cannot-pass.md; re-derived by
# tests/test_scoring_store.py::test_cannot_pass_set_is_rederived.
CANNOT_PASS: frozenset[int] = frozenset({319, 699, 700, 811})

Status = Literal["success", "failure", "error"]
# The one official evaluator that reads a task's network trace.
NETWORK_EVALUATOR = "NetworkEventEvaluator"

# Inputs per pool job: small enough for a smooth progress bar, large enough to amortise pickling.
_CHUNK = 16


class ScoringInput(BaseModel):
    """One task of a run as the engine needs it: the raw response text and the HAR entries.

    Give `har_path` instead of entries to let the scoring process read the trace itself (with
    `core.files.har.load_trace_entries`): the parent then never holds or pickles the entries.
    """

    task_id: int
    # The text, or the file when we could not decode it: the engine then reads it (and reports why).
    agent_response: str | Path | None
    har_entries: list[dict] = Field(default_factory=list)
    har_path: Path | None = None
    # network_events.seq of each entry when har_entries leaves some out (static assets, which the
    # engine ignores); None means entry i has seq i.
    event_seqs: list[int] | None = None


class EvaluatorScore(BaseModel):
    """An `evaluator_results` row without `run`. JSON columns hold serialised JSON text."""

    idx: int
    evaluator: str
    status: Status
    score: float | None
    assertions: str | None = None
    expected: str | None = None
    actual: str | None = None
    expected_normalized: str | None = None
    actual_normalized: str | None = None
    error: str | None = None
    explanation: str | None = None
    matched_event_seq: int | None = None
    nearest_event_seq: int | None = None


class TaskScore(BaseModel):
    """An `evaluations` row without `run`, its evaluator rows, and the official per-task result."""

    task_id: int
    status: Status
    score: float | None
    source: str = SOURCE
    engine_version: str | None = None
    evaluator_checksum: str | None = None
    data_checksum: str | None = None
    error: str | None = None
    explanation: str | None = None
    cannot_pass: bool = False
    evaluator_results: list[EvaluatorScore] = Field(default_factory=list)
    # `TaskEvalResult.model_dump(mode="json", exclude_none=True)`: what the official CLI writes.
    eval_result: dict[str, Any]


# -- configuration --------------------------------------------------------------------------------
def read_config(config: Path | dict | None) -> str:
    """An environment config (file, mapping or None) as canonical JSON text, read without the engine.

    Plain text crosses process boundaries and keys each process's engine cache; the engine's own checks
    run where the engine is loaded (`config_problem`, through `check_config`).
    """
    if config is None:
        return "null"
    if isinstance(config, (str, Path)):
        path = Path(config)
        try:
            raw = orjson.loads(path.read_bytes())
        except FileNotFoundError:
            raise InputError(path, "no such config file") from None
        except (OSError, orjson.JSONDecodeError) as exc:
            raise InputError(path, f"not a JSON config: {str(exc).splitlines()[0]}") from None
        if not isinstance(raw, dict):
            raise InputError(path, "config must be a JSON object")
    else:
        raw = config
        if not isinstance(raw, dict):
            raise InputError("config", "config must be a JSON object")
    return orjson.dumps(raw, option=orjson.OPT_SORT_KEYS).decode()


def config_problem(config_json: str) -> str | None:
    """Why the engine rejects this config, in one line; None when it accepts it."""
    from core.scoring.official_engine import load_engine

    load_engine()  # its unit registry from the cache, before any engine import here
    from webarena_verified.types.config import WebArenaVerifiedConfig

    raw = orjson.loads(config_json)
    if raw is None:
        return None
    try:
        WebArenaVerifiedConfig.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "config"
        return f"invalid webarena-verified config at {where}: {first['msg']}"
    return None


def check_config(pool: WorkerPool, config_json: str, source: str | Path) -> None:
    """InputError naming `source` when the engine rejects the config: checked in a worker of `pool`
    (whose engine import is then done), before any task is read."""
    problem = pool.call(config_problem, config_json)
    if problem is not None:
        raise InputError(source, problem)


# -- the per-process engine -----------------------------------------------------------------------
def _hash_the_dataset_once() -> None:
    """The engine hashes its whole dataset file (SHA-256 of 1.5 MB, about 1 ms) for every task it
    evaluates, to report `webarena_verified_data_checksum`: hash each version of the file once per
    process instead (a version: the same size and modification time)."""
    from webarena_verified.api.internal import evaluator

    if not isinstance(evaluator.compute_data_file_checksum, OncePerFileVersion):
        evaluator.compute_data_file_checksum = OncePerFileVersion(evaluator.compute_data_file_checksum)


class OncePerFileVersion:
    """`compute(path)` remembered per (path, size, modification time): a file rewritten is computed anew."""

    def __init__(self, compute: Callable[[Any], str]):
        self.compute = compute
        self.seen: dict[tuple[str, int, int], str] = {}

    def __call__(self, path: Any) -> str:
        try:
            stat = Path(path).stat()
        except OSError:
            return self.compute(path)  # the engine's own error
        key = (str(path), stat.st_size, stat.st_mtime_ns)
        if key not in self.seen:
            self.seen[key] = self.compute(path)
        return self.seen[key]


class _Engine:
    """One `WebArenaVerified` (dataset loaded once) and the task configs it scores against."""

    def __init__(self, config: dict | None):
        from core.scoring.official_engine import load_engine

        load_engine()  # its unit registry from the cache, before any engine import here
        from webarena_verified.api.webarena_verified import WebArenaVerified
        from webarena_verified.types.config import WebArenaVerifiedConfig

        # The engine logs every auto-corrected config and every failing evaluator with a traceback;
        # results carry the same information, so keep terminals and workers quiet.
        logging.getLogger(ENGINE_LOGGER).setLevel(logging.CRITICAL)
        # Validated (and defaults filled in) here, where the engine lives; `check_config` already
        # turned a rejected config into a one-line error.
        cfg = WebArenaVerifiedConfig.model_validate(config) if config is not None else None
        self.wa = WebArenaVerified(config=cfg)
        _hash_the_dataset_once()

    def score(self, item: ScoringInput) -> TaskScore:
        from webarena_verified.types.eval import TaskEvalContext

        entries = item.har_entries or _read_entries(item.har_path)
        seqs = item.event_seqs
        if entries and not self.reads_trace(item.task_id):
            # The engine will not look at the trace (it only needs one given): one event stands for
            # it, so the task pays for no NetworkEvent beyond the first.
            entries, seqs = entries[:1], (seqs[:1] if seqs is not None else None)
        trace = _network_trace(entries) if entries is not None else None
        result = self.wa.evaluate_task(
            task_id=item.task_id,
            agent_response=item.agent_response,
            # A file our reader refused, or a trace we could not build, goes to the engine as it is:
            # it reads (or rejects) it by its own rules and reports the error itself.
            network_trace=trace if trace is not None else (item.har_path if entries is None else entries),
        )
        official = result.model_dump(mode="json", exclude_none=True)
        context = None
        if trace is not None:
            try:
                task = self.wa.get_task(item.task_id)
                context = TaskEvalContext(
                    task=task,
                    agent_response_raw=item.agent_response,
                    network_trace=trace,
                    config=self.wa.config,
                )
                context = context.model_copy(
                    update={"config": self.wa._evaluator._validate_config_for_eval(context=context)}
                )
            except Exception:  # the engine already reported the problem as an error result
                context = None
        return _task_score(item.task_id, official, context, trace, seqs)

    def reads_trace(self, task_id: int) -> bool:
        """Whether the engine reads the task's network trace: an evaluator of the task does (only
        `NetworkEventEvaluator`), or the config lacks a URL for one of the task's sites (the engine then
        takes the sites' URLs from the trace's evaluation events, `_validate_config_for_eval`).
        True for a task the engine does not know (it reports that itself)."""
        try:
            task = self.wa.get_task(task_id)
        except Exception:
            return True
        environments = self.wa.config.environments
        if not environments or not all(
            site in environments and environments[site].urls for site in task.sites
        ):
            return True
        return any(cfg.evaluator == NETWORK_EVALUATOR for cfg in task.eval)


def _read_entries(path: Path | None) -> list[dict] | None:
    """Entries of a trace file with our reader; None when it refuses the file (the engine then reads
    the file itself, so its verdict on odd files stays its own)."""
    if path is None:
        return []
    from core.files.har import TraceTooLarge, load_trace_entries

    try:
        return load_trace_entries(path)
    except TraceTooLarge:  # a zip bomb: an empty trace (error), never inflated by the engine
        return []
    except Exception:
        return None


@lru_cache(maxsize=1)
def _cached_trace_class():
    """`NetworkTrace` whose `evaluation_events` is computed once: the engine recomputes this pure
    filter (a URL parse per event) on every access, several times per task."""
    from webarena_verified.types.tracing import NetworkTrace

    class _CachedNetworkTrace(NetworkTrace):
        @cached_property
        def evaluation_events(self):  # same filter as the engine's property, kept once
            return tuple(event for event in self.events if event.is_evaluation_event)

    return _CachedNetworkTrace


def _network_trace(entries: list[dict]):
    """A `NetworkTrace` built exactly as `NetworkTrace.from_har` builds it, minus the file read."""
    from webarena_verified.types.tracing import NetworkEvent

    try:
        if not entries:
            return None
        # model_construct: the data is a MappingProxyType by construction, so validating it is moot.
        events = tuple(NetworkEvent.model_construct(data=MappingProxyType(entry)) for entry in entries)
    except Exception:
        return None
    return _cached_trace_class().model_construct(
        is_playwright=False, src_file=Path("<parsed>"), events=events
    )


@lru_cache(maxsize=4)
def _engine_for(config_json: str) -> _Engine:
    # One engine per process and config; keyed by JSON text because dicts are not hashable.
    return _Engine(orjson.loads(config_json))


def score_chunk(config_json: str, chunk: list[ScoringInput]) -> list[TaskScore]:
    """Score a chunk with this process's engine (built once per process and config)."""
    engine = _engine_for(config_json)
    # Parsed traces are large acyclic trees: cyclic GC passes over them are pure cost. (A caller that
    # paused the GC itself keeps it paused: see core.ingest.wav_tasks.)
    with gc_paused():
        return [engine.score(item) for item in chunk]


def score_inputs(
    inputs: Iterable[ScoringInput],
    *,
    config: Path | dict | None = None,
    workers: int = 2,
    on_progress: ProgressCallback | None = None,
    total: int | None = None,
) -> list[TaskScore]:
    """Score tasks with the official engine; results in input order.

    `workers=1` scores in this process; more use worker processes forked from one that loaded the engine
    (`core.files.parallel`), each building its engine once. Inputs are consumed lazily, so a generator of
    inputs never sits in memory whole. A bad config raises `InputError` before any work; a bad task
    gives status `error`.
    """
    config_json = read_config(config)
    if total is None and isinstance(inputs, Sized):
        total = len(inputs)
    with WorkerPool(workers, preload=SCORING_MODULES, initializer=arrow_without_pandas) as pool:
        check_config(pool, config_json, config if isinstance(config, (str, Path)) else "config")
        return pool.map_chunks(
            partial(score_chunk, config_json), inputs, chunk_size=_CHUNK, total=total, on_progress=on_progress
        )


# -- turning engine results into rows ---------------------------------------------------------------
def _json(value: Any) -> str | None:
    if value is None:
        return None
    try:
        return orjson.dumps(value, default=str, option=orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:  # a lone surrogate from the agent's JSON (`"\ud800"`): kept as its escape
        return orjson.dumps(
            _valid_strings(value), default=_valid_str, option=orjson.OPT_NON_STR_KEYS
        ).decode()


def _valid_str(value: Any) -> str:
    from core.measure.action_grammar.webarena import valid_text

    return valid_text(str(value))


def _valid_strings(value: Any) -> Any:
    if isinstance(value, str):
        return _valid_str(value)
    if isinstance(value, dict):
        return {_valid_strings(k) if isinstance(k, str) else k: _valid_strings(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_valid_strings(v) for v in value]
    return value


def _task_score(
    task_id: int, official: dict, context, trace, event_seqs: list[int] | None = None
) -> TaskScore:
    official = _redact_network_reports(official)
    status: Status = (
        official["status"] if official["status"] in ("success", "failure", "error") else "failure"
    )
    task_cfgs = context.task.eval if context is not None else ()
    seq_of = {}
    if trace is not None:
        seqs = event_seqs if event_seqs is not None else range(len(trace.events))
        seq_of = {id(event): seq for seq, event in zip(seqs, trace.events, strict=False)}
    rows = []
    # The trace's events as explanations show them: built at most once per task, only if needed.
    briefs = lru_cache(maxsize=1)(lambda: _event_briefs(context, seq_of))
    for idx, er_json in enumerate(official["evaluators_results"]):
        cfg = task_cfgs[idx] if idx < len(task_cfgs) else None
        rows.append(_evaluator_row(idx, er_json, cfg, context, seq_of, briefs))
    # An evaluator that errored leaves the task's own error_msg empty: surface the first one.
    error = official.get("error_msg") or next((r.error for r in rows if r.error), None)
    for row in rows:  # sentences quote trace events (URLs, post data)
        row.explanation = redact_report(row.explanation)
        row.error = redact_report(row.error)
    error = redact_report(error)
    return TaskScore(
        task_id=task_id,
        status=status,
        score=None if status == "error" else float(official["score"]),
        engine_version=official.get("webarena_verified_version"),
        evaluator_checksum=official.get("webarena_verified_evaluator_checksum"),
        data_checksum=official.get("webarena_verified_data_checksum"),
        error=error,
        explanation=explanations.task_sentence(status, [r.explanation for r in rows if r.explanation], error),
        cannot_pass=task_id in CANNOT_PASS,
        evaluator_results=rows,
        eval_result=official,
    )


def _redact_network_reports(official: dict) -> dict:
    """The engine's result with what network evaluators quote from the trace (`actual`, errors)
    redacted: the stored result must not carry a HAR's secrets. Verdicts are untouched."""
    official = {k: redact_report(v) if k == "error_msg" else v for k, v in official.items()}
    results = official.get("evaluators_results") or []
    if not any(r.get("evaluator_name") == NETWORK_EVALUATOR for r in results):
        return official
    redacted = [
        {
            **r,
            **{k: redact_report(r.get(k)) for k in ("actual", "actual_normalized", "error_msg") if k in r},
        }
        if r.get("evaluator_name") == NETWORK_EVALUATOR
        else r
        for r in results
    ]
    return {**official, "evaluators_results": redacted}


def _evaluator_row(idx: int, er: dict, cfg, context, seq_of: dict[int, int], briefs) -> EvaluatorScore:
    status: Status = er["status"] if er["status"] in ("success", "failure", "error") else "failure"
    expected_raw = cfg.expected.model_dump(mode="json", exclude_none=True) if cfg is not None else None
    row = EvaluatorScore(
        idx=idx,
        evaluator=er["evaluator_name"],
        status=status,
        score=None if status == "error" else er.get("score"),
        assertions=_json(er.get("assertions")),
        expected=_json(expected_raw),
        actual=_json(er.get("actual")),
        expected_normalized=_json(er.get("expected")),
        actual_normalized=_json(er.get("actual_normalized")),
        error=er.get("error_msg"),
    )
    try:
        if er["evaluator_name"] == NETWORK_EVALUATOR and cfg is not None and context is not None:
            _locate_network_events(row, er, cfg, context, seq_of, briefs)
        elif status != "success":
            row.explanation = explanations.explain_evaluator(_with_alternatives(er, cfg, context))
    except Exception as exc:  # an explanation must never cost a score
        row.explanation = explanations.fallback(er, exc)
    return row


def _with_alternatives(er: dict, cfg, context) -> dict:
    """The result with every expected retrieved_data item listing all its normalised alternatives.

    The engine reports only the first alternative; the sentence must not call an accepted one missing.
    """
    if er["evaluator_name"] != "AgentResponseEvaluator" or cfg is None or context is None:
        return er
    from webarena_verified.core.evaluation.data_types import NormalizedType
    from webarena_verified.core.evaluation.evaluators.agent_response_evaluator import AgentResponseEvaluator

    expected = AgentResponseEvaluator()._normalized_expected_value(cfg.expected, config=cfg, context=context)
    items = expected.get("retrieved_data")
    if not items or not isinstance(er.get("expected"), dict):
        return er
    shown = [
        _as_reported(list(item.alternatives))
        if isinstance(item, NormalizedType) and len(item.alternatives) > 1
        else _as_reported(item)
        for item in items
    ]
    return {**er, "expected": {**er["expected"], "retrieved_data": shown}}


def _locate_network_events(
    row: EvaluatorScore, er: dict, cfg, context, seq_of: dict[int, int], briefs: Callable[[], list]
) -> None:
    """Find the event a network evaluator matched, or the nearest one, and explain a failure."""
    from webarena_verified.core.evaluation.evaluators.network_event_evaluator import NetworkEventEvaluator

    if er["status"] == "error":
        row.explanation = explanations.explain_evaluator(er)
        return
    evaluator = NetworkEventEvaluator()
    expected_norm = evaluator._normalized_expected_value(cfg.expected, config=cfg, context=context)
    candidates: list[explanations.Candidate] = []
    if er.get("actual"):  # the engine found events passing its method/path/referer filter
        events = evaluator._filter_events_by_criteria(context.network_trace.evaluation_events, context, cfg)
        if cfg.last_event_only:
            events = events[-1:]
        for event in events:
            data = evaluator._extract_event_data(event, cfg, context)
            actual = evaluator._normalized_actual_value([data], expected_norm, config=cfg, context=context)[0]
            mismatch = evaluator.value_comparator.compare(
                actual=actual,
                expected=expected_norm,
                ordered=False,
                value_name="network_event",
                ignore_extra_keys=True,
            )
            candidates.append(
                explanations.Candidate(
                    seq=seq_of.get(id(event), -1),
                    normalized=_as_reported(actual),
                    matches=not mismatch,
                )
            )
    matched = next((c for c in candidates if c.matches), None)
    if cfg.should_not_exist:
        row.matched_event_seq = candidates[0].seq if candidates else None
    elif matched is not None:
        row.matched_event_seq = matched.seq
    if er["status"] == "success":
        return
    expected_json = er.get("expected")
    if not isinstance(expected_json, dict):
        expected_json = _as_reported(expected_norm)
    navigate_last = bool(context.task.is_navigate_task and cfg.expected.http_method == "GET")
    explained = explanations.explain_network(
        expected=expected_json,
        candidates=candidates,
        events=briefs(),
        should_not_exist=bool(cfg.should_not_exist),
        navigate_last=navigate_last,
    )
    row.explanation = explained.sentence
    row.nearest_event_seq = explained.nearest_seq


def _as_reported(normalized: Any) -> Any:
    """A normalised value serialised exactly as the engine reports `actual_normalized`."""
    from webarena_verified.types.eval import EvaluatorResult

    holder = EvaluatorResult(evaluator_name="-", status="success", score=1.0, actual_normalized=normalized)
    return holder.model_dump(mode="json")["actual_normalized"]


def _event_briefs(context, seq_of: dict[int, int]) -> list[explanations.EventBrief]:
    """The trace's evaluation events, URLs shown with site placeholders as the task writes them.

    Derendering is the engine's rule (`EnvironmentConfig.derender_url`: replace the site URL by its
    placeholder) done as plain string replacement, since it runs on every event of the trace.
    """
    prefixes = []
    for site in context.task.sites:
        env = (context.config.environments or {}).get(site)
        for site_url in env.urls if env else ():
            prefixes.append((site_url, site_url.rstrip("/"), site.url_name_template))
    briefs = []
    for event in context.network_trace.evaluation_events:
        try:
            url = event.url
            shown = next((url.replace(bare, tpl) for full, bare, tpl in prefixes if full in url), url)
            status = event.request_status
            briefs.append(
                explanations.EventBrief(
                    seq=seq_of.get(id(event), -1),
                    method=str(event.http_method).upper(),
                    url=shown,
                    status=status if isinstance(status, int) else None,
                )
            )
        except Exception:  # a malformed entry: the engine judged it; we just cannot point at it
            continue
    return briefs


# -- storage ----------------------------------------------------------------------------------------
def write_scores(cur, run: str, scores: Sequence[TaskScore]) -> None:
    """Replace the run's evaluations and evaluator results (inside the caller's transaction)."""
    from core.store import insert_rows, utcnow

    cur.execute("DELETE FROM evaluator_results WHERE run = ?", [run])
    cur.execute("DELETE FROM evaluations WHERE run = ?", [run])
    now = utcnow()
    task_rows, evaluator_rows = [], []
    for s in scores:
        row = s.model_dump(exclude={"evaluator_results", "eval_result"})
        task_rows.append({"run": run, **row, "eval_result": _json(s.eval_result), "evaluated_at": now})
        evaluator_rows.extend(
            {"run": run, "task_id": s.task_id, **r.model_dump()} for r in s.evaluator_results
        )
    insert_rows(cur, "evaluations", task_rows)
    insert_rows(cur, "evaluator_results", evaluator_rows)


def evaluate_run(
    store: Store | ShortLivedStore,
    run: str,
    *,
    config: Path | dict | None = None,
    workers: int = 2,
    on_progress: ProgressCallback | None = None,
) -> list[TaskScore]:
    """Re-score a stored run from its agent responses and its original HAR files.

    Traces come from re-reading `runs.source_path` (the stored network events are a redacted view,
    not the engine's input). The config defaults to the run's stored environment config.
    """
    found = store.query("SELECT source_path, config FROM runs WHERE name = ?", [run])
    if not found:
        raise NotFound("run", run)
    source_path, run_config = found[0]
    if config is None and run_config:
        stored = orjson.loads(run_config)
        config = stored if isinstance(stored, dict) and stored.get("environments") else None
    source = Path(source_path)
    if not source.exists():
        raise InputError(source, "run source not found; re-import the run from its new location")
    responses = store.query(
        "SELECT task_id, raw_text FROM agent_responses WHERE run = ? ORDER BY task_id", [run]
    )
    # A run directory is read in place; a submission .tar.gz is read again the same safe way as at import.
    with run_directory(source) as (root, _):
        # Each scoring process reads its tasks' traces itself (a HAR or a Playwright trace, as at import);
        # a missing or broken one scores as the engine scores it.
        inputs = [
            ScoringInput(task_id=task_id, agent_response=text, har_path=_trace_file(root / str(task_id)))
            for task_id, text in responses
        ]
        scores = score_inputs(inputs, config=config, workers=workers, on_progress=on_progress)
    with store.transaction() as cur:
        write_scores(cur, run, scores)
    return scores


def _trace_file(task_dir: Path) -> Path:
    return next((task_dir / n for n in TRACE_FILES if (task_dir / n).is_file()), task_dir / TRACE_FILES[0])


# -- export in the official shapes ----------------------------------------------------------------------
def export_eval(store: Store, run: str, out: Path) -> int:
    """Write `<out>/<task_id>/eval_result.json` per task and the summary `<out>/eval_results.json`.

    The per-task files are the engine's own results as stored at scoring time; the summary is computed
    by the engine's `TasksEvalResults` (overall and `per_site` buckets), written with its serializer.
    """
    from webarena_verified.core.utils.immutable_obj_helper import serialize_to_json
    from webarena_verified.types.eval import TaskEvalResult, TasksEvalResults

    from core.store import require_runs

    require_runs(store, [run])
    rows = store.query(
        "SELECT task_id, eval_result FROM evaluations WHERE run = ? AND source = ? AND eval_result IS NOT NULL"
        " ORDER BY task_id",
        [run, SOURCE],
    )
    if not rows:
        raise InputError(run, "no official evaluations stored; run `trajreview evaluate --run` first")
    if out.exists() and not out.is_dir():
        raise InputError(out, "exists and is not a directory")
    results = [(task_id, orjson.loads(text)) for task_id, text in rows]
    # Validate everything before writing anything.
    models = [TaskEvalResult.model_validate(result) for _, result in results]
    data_checksum = results[0][1].get("webarena_verified_data_checksum", "")
    summary = TasksEvalResults.create(task_results=models, data_checksum=data_checksum)
    for task_id, result in results:
        task_dir = out / str(task_id)
        task_dir.mkdir(parents=True, exist_ok=True)
        (task_dir / "eval_result.json").write_text(serialize_to_json(result, indent=2))
    (out / "eval_results.json").write_text(
        serialize_to_json(
            summary.model_dump(mode="json", exclude_none=True, exclude={"task_results"}), indent=2
        )
    )
    return len(results)


# -- tasks that cannot pass (evidence for docs/cannot-pass.md) -----------------------------------------------
def expected_answer(task_eval: list[dict]) -> str | None:
    """The task's own expected agent response (first alternative of each value), as response text."""
    for cfg in task_eval:
        if cfg.get("evaluator") == "AgentResponseEvaluator":
            # An agent following the response schema always sends retrieved_data (null when none).
            expected = {"retrieved_data": None, **(cfg.get("expected") or {})}
            data = expected.get("retrieved_data")
            if isinstance(data, list):
                expected["retrieved_data"] = [v[0] if isinstance(v, list) and v else v for v in data]
            return orjson.dumps(expected).decode()
    return None


def cannot_pass_evidence(scores: Sequence[TaskScore]) -> dict[int, str]:
    """Tasks the engine rejects when fed their own expected answer: the agent-response evaluator fails,
    or any evaluator errors on the task's own config (whatever the trace). Task id -> the engine's reason."""
    found = {}
    for s in scores:
        for r in s.evaluator_results:
            broken_answer = r.evaluator == "AgentResponseEvaluator" and r.status != "success"
            if broken_answer or r.status == "error":
                found[s.task_id] = r.explanation or r.error or r.status
                break
    return found
