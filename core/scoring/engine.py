"""Running the official WebArena-Verified engine: config reading and checking, one engine per process, a
chunk of tasks scored in a worker pool.

We never re-implement an evaluator: each task goes through the installed engine's `evaluate_task`.
What we add is speed (one `WebArenaVerified` per process, traces parsed once and handed over as a
prebuilt `NetworkTrace`, both cores). The engine's result becomes our rows, with a sentence per failing
evaluator, in `core.scoring.score_rows`; the rows reach the database through `core.scoring.stored_scores`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sized
from functools import cached_property, lru_cache, partial
from pathlib import Path
from types import MappingProxyType
from typing import Any

import orjson
from pydantic import BaseModel, Field, ValidationError

from core.errors import InputError
from core.files.har import gc_paused
from core.files.parallel import SCORING_MODULES, WorkerPool, arrow_without_pandas
from core.progress import ProgressCallback
from core.scoring.score_rows import NETWORK_EVALUATOR, TaskScore, task_score

ENGINE_LOGGER = "WebArena-Verified"

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


# -- configuration --------------------------------------------------------------------------------
def _load_engine() -> None:
    """The engine imported in this process (once), its unit registry from the cache: called before any
    engine import here (the config check, the engine). `official_engine` imports pint, so it is imported
    here, not at the top: importing this module loads no pint."""
    from core.scoring.official_engine import load_engine

    load_engine()


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
    _load_engine()
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
        _load_engine()
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
        return task_score(item.task_id, official, context, trace, seqs)

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
