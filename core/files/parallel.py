"""One way to use both cores: worker processes started once per run, and an ordered, chunked map over them.

Workers are forked from a fork server (`forkserver`), never from this process: the parent holds a DuckDB
connection and its threads. The fork server imports the modules a run needs once (`preload`, e.g. the
scoring engine, which takes a second to import), and every worker is a fork of it, so no worker imports
them again and none pays an interpreter teardown when it exits. The server is started as soon as the pool
is opened, so its imports run while this process reads the run's files.

At most `2 × workers` chunks are in flight, so a long input never sits in memory whole. When the pool
cannot run (a caller script without a `__main__` guard, a worker killed), the chunks it left undone are
processed in this process instead: slower, never a failed import.
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import multiprocessing
import multiprocessing.forkserver
import signal
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

from core.progress import ProgressCallback

T = TypeVar("T")
R = TypeVar("R")

Indexed = tuple[int, list]


# Tasks per worker job of a run: small enough for a smooth progress bar, large enough to amortise pickling.
TASKS_PER_CHUNK = 8
TAPER_CHUNKS = 2  # whole chunks per worker, at the end of a run, sent as small ones (`tapered`)


def tasks_per_chunk(n_tasks: int, workers: int) -> int:
    """`TASKS_PER_CHUNK`, or fewer when a run has too few tasks to give every worker a whole chunk: the
    tasks of a small run are shared out instead of all going to one worker while the others wait."""
    return max(1, min(TASKS_PER_CHUNK, -(-n_tasks // max(1, workers))))


def chunked(items: Iterable[T], size: int) -> Iterator[list[T]]:
    iterator = iter(items)
    while chunk := list(itertools.islice(iterator, size)):
        yield chunk


def tapered(items: Iterable[T], size: int, total: int | None, workers: int) -> Iterator[list[T]]:
    """Chunks of `size`; the last `TAPER_CHUNKS` chunks' worth of tasks per worker (when `total` is known),
    in chunks a quarter that size. A worker that ends its last whole chunk then finds small ones left
    instead of waiting while the other finishes a whole one: at 8 tasks of about 30 ms, a quarter of a
    second at the end of a run on two workers (`bench scoring`)."""
    iterator = iter(items)
    remaining = total
    small = max(1, size // 4)
    while True:
        tail = remaining is not None and workers > 1 and remaining <= TAPER_CHUNKS * workers * size
        chunk = list(itertools.islice(iterator, small if tail else size))
        if not chunk:
            return
        if remaining is not None:
            remaining -= len(chunk)
        yield chunk


# What the workers of a run import and score need (the engine takes about a second to import): the
# worker side of an import, never DuckDB or pandas (`arrow_without_pandas`), imported by one module that
# also keeps the GC off them (`core.ingest.scoring_preload`). Named here, as text, so the command line can
# start the fork server before it imports any of them itself. ENGINE_MODULE is the official engine's own
# module, named once here (`core.scoring.official_engine.load_engine` imports it, the scoring bench's floor too).
ENGINE_MODULE = "webarena_verified.api.webarena_verified"
SCORING_MODULES = ("core.ingest.scoring_preload",)


class _NoPandas:
    """A meta-path finder that refuses pandas (installed only for the moment of `arrow_without_pandas`)."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)


def arrow_without_pandas() -> None:
    """Spare this process the pandas import (0.5-1 s and 35 MB) that pyarrow's first conversion of Python
    values makes only to ask whether a value is a pandas object.

    For processes that never hand pyarrow pandas objects: a scoring worker, the `import wav-run` command.
    pyarrow is told once that pandas is absent; an explicit `to_pandas()` or `from_pandas()` still imports
    it (and restores pyarrow's pandas checks). Nothing changes in a process that already imported pandas
    or whose pyarrow already looked for it.
    """
    if "pandas" in sys.modules:
        return
    import pyarrow as pa

    finder = _NoPandas()
    sys.meta_path.insert(0, finder)
    try:
        pa.array([0])  # pyarrow looks for pandas here, once per process
    finally:
        sys.meta_path.remove(finder)


def start_fork_server(preload: Sequence[str]) -> None:
    """Start this process's fork server now; it imports `preload` in the background and every later
    `WorkerPool` forks its workers from it. Once it runs, later calls change nothing."""
    multiprocessing.get_context("forkserver").set_forkserver_preload(list(preload))
    multiprocessing.forkserver.ensure_running()


def release_free_memory() -> None:
    """Hand free pages back to the system, Arrow's memory pool's (mimalloc or jemalloc keep freed pages for
    reuse) and the C heap's (glibc `malloc_trim`; nothing elsewhere): after a large trace is parsed its
    freed buffers would otherwise stay in this process's RSS while the next stage allocates its own."""
    if "pyarrow" in sys.modules:  # a process that never loaded Arrow has no pool to trim
        sys.modules["pyarrow"].default_memory_pool().release_unused()
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass


class WorkerPool:
    """`workers` processes for one run (none when `workers` is 1: everything runs here).

    `fn`s given to `call` and `map_chunks` must be picklable module-level functions (a
    `functools.partial` of one is fine) that set up what they need once per process themselves
    (e.g. an `lru_cache`d engine).
    """

    def __init__(
        self, workers: int, preload: Sequence[str] = (), initializer: Callable[[], None] | None = None
    ):
        self.workers = workers
        self.preload = list(preload)
        self.initializer = initializer  # run once in each worker when it starts
        self.executor: ProcessPoolExecutor | None = None

    def __enter__(self) -> WorkerPool:
        if self.workers > 1:
            start_fork_server(self.preload)
            self.executor = ProcessPoolExecutor(
                max_workers=self.workers,
                mp_context=multiprocessing.get_context("forkserver"),
                initializer=self.initializer,
            )
            # Start the server and the workers now, from a thread: the first start waits for the server's
            # imports, which then overlap this process's own work instead of delaying it.
            threading.Thread(target=_start, args=(self.executor,), daemon=True).start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        if self.executor is not None:
            executor, self.executor = self.executor, None
            if exc_type is None:
                # Every result is in; forked workers exit at once, nothing to wait for.
                executor.shutdown(wait=False, cancel_futures=True)
                return
            # Ctrl-C or SIGTERM (the CLI turns it into KeyboardInterrupt), or an error: stop the workers now
            # instead of letting them finish the chunks they hold, so none outlives the command.
            for worker in multiprocessing.active_children():
                worker.terminate()
            # Then wait for the pool's manager thread to see them gone and end (`shutdown(wait=True)` joins
            # it; a worker still starting gets no work and exits). Left running, it closes its wake-up pipe
            # while CPython 3.11's exit handler writes to it, unlocked, and a command that had failed in one
            # line printed "OSError: Bad file descriptor" after it (seen under load in
            # tests/test_cli_start.py and test_cli.py). A `shutdown(wait=False)` first would drop the
            # executor's reference to that thread, and the join would then wait for nothing.
            executor.shutdown(wait=True, cancel_futures=True)

    def call(self, fn: Callable[..., R], *args: Any) -> R:
        """`fn(*args)` in a worker (whose imports are then done), or here without workers."""
        if self.executor is not None:
            try:
                return _submit(self.executor, fn, *args).result()
            except BrokenProcessPool:
                self.executor = None
        return fn(*args)

    def map_chunks(
        self,
        fn: Callable[[list[T]], list[R]],
        items: Iterable[T],
        *,
        chunk_size: int,
        total: int | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> list[R]:
        """`fn` over chunks of `items` in the workers, results flattened in input order."""
        progress = on_progress or (lambda done, total: None)
        done = 0

        def report(n: int) -> None:
            nonlocal done
            done += n
            progress(done, max(total or 0, done))

        progress(0, total or 0)
        indexed: Iterator[Indexed] = enumerate(tapered(items, chunk_size, total, self.workers))
        results: dict[int, list[R]] = {}
        leftovers: list[Indexed] = []
        if self.executor is not None:
            leftovers = self._run(fn, indexed, results, report)
        for index, chunk in itertools.chain(leftovers, indexed):
            results[index] = fn(chunk)
            report(len(chunk))
        return [r for index in sorted(results) for r in results[index]]

    def _run(self, fn, indexed: Iterator[Indexed], results: dict, report) -> list[Indexed]:
        """Run chunks in the workers until `indexed` is exhausted; on a broken pool return the undone chunks."""
        assert self.executor is not None
        pending: dict[Future, Indexed] = {}
        try:
            for index, chunk in indexed:
                pending[_submit(self.executor, fn, chunk)] = (index, chunk)
                while len(pending) >= 2 * self.workers:
                    _collect(pending, results, report)
            while pending:
                _collect(pending, results, report)
        except BrokenProcessPool:
            self.executor = None
            return sorted(pending.values(), key=lambda item: item[0])
        return []


def map_chunks(
    fn: Callable[[list[T]], list[R]],
    items: Iterable[T],
    *,
    workers: int,
    chunk_size: int,
    total: int | None = None,
    on_progress: ProgressCallback | None = None,
) -> list[R]:
    """`fn` over chunks of `items`, results flattened in input order, in a pool of its own (one chunk
    alone is not worth starting processes for: it runs here)."""
    iterator = enumerate(chunked(items, chunk_size))
    head = list(itertools.islice(iterator, 2))
    chunks = (chunk for _, chunk in itertools.chain(head, iterator))
    flat = (item for chunk in chunks for item in chunk)
    with WorkerPool(workers if len(head) > 1 else 1) as pool:
        return pool.map_chunks(fn, flat, chunk_size=chunk_size, total=total, on_progress=on_progress)


# The signals the command turns into KeyboardInterrupt (Ctrl-C, and SIGTERM: see core.cli.main).
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def _stop_signals_held() -> Iterator[None]:
    """Hold Ctrl-C and SIGTERM in the main thread until the block ends, then deliver them.

    A `submit` may start a worker: the fork server forks it, then this process reads its pid and records
    it. Interrupted between the two, the worker was forked but is known to no one, so the pool's exit
    cannot stop it; it outlives the command and, reading the pool's queues the command has since removed,
    prints "FileNotFoundError" to the command's stderr (seen under load in
    tests/test_signals.py::test_a_signal_stops_an_import_and_its_worker_processes). Held, the signal
    arrives once the worker is recorded, and the pool's exit stops it.
    """
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread receives Python's signal handlers
        return
    held: list[int] = []
    previous = {
        signum: signal.signal(signum, lambda signum, _: held.append(signum)) for signum in _STOP_SIGNALS
    }
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)
        if held:
            signal.raise_signal(held[0])


def _submit(executor: ProcessPoolExecutor, fn: Callable[..., R], *args: Any) -> Future[R]:
    with _stop_signals_held():
        return executor.submit(fn, *args)


def _start(executor: ProcessPoolExecutor) -> None:
    with contextlib.suppress(BrokenProcessPool, OSError, RuntimeError):  # `call`/`map_chunks` then see it
        executor.submit(int)


def _collect(pending: dict, results: dict, report) -> None:
    finished, _ = wait(pending, return_when=FIRST_COMPLETED)
    for future in finished:
        chunk_results = future.result()  # a broken pool raises here, with `future` still pending
        index, _ = pending.pop(future)
        results[index] = chunk_results
        report(len(chunk_results))
