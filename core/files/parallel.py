"""One way to use both cores: an ordered, chunked map over worker processes.

Workers are started with `spawn`, never `fork`: the parent holds a DuckDB connection and its threads.
At most `2 × workers` chunks are in flight, so a long input never sits in memory whole. When the pool
cannot run (a caller script without a `__main__` guard, a worker killed), the chunks it left undone are
processed in this process instead: slower, never a failed import.
"""

from __future__ import annotations

import itertools
import multiprocessing
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import TypeVar

from core.progress import ProgressCallback

T = TypeVar("T")
R = TypeVar("R")

Indexed = tuple[int, list]


def chunked(items: Iterable[T], size: int) -> Iterator[list[T]]:
    iterator = iter(items)
    while chunk := list(itertools.islice(iterator, size)):
        yield chunk


def map_chunks(
    fn: Callable[[list[T]], list[R]],
    items: Iterable[T],
    *,
    workers: int,
    chunk_size: int,
    total: int | None = None,
    on_progress: ProgressCallback | None = None,
) -> list[R]:
    """`fn` over chunks of `items`, results flattened in input order.

    `fn` must be a picklable module-level function (a `functools.partial` of one is fine) that sets
    up what it needs once per process itself (e.g. an `lru_cache`d engine).
    """
    progress = on_progress or (lambda done, total: None)
    done = 0

    def report(n: int) -> None:
        nonlocal done
        done += n
        progress(done, max(total or 0, done))

    progress(0, total or 0)
    indexed: Iterator[Indexed] = enumerate(chunked(items, chunk_size))
    results: dict[int, list[R]] = {}
    leftovers: list[Indexed] = []
    if workers > 1:
        head = list(itertools.islice(indexed, 2))
        indexed = itertools.chain(head, indexed)
        if len(head) > 1:  # one chunk is not worth starting processes for
            leftovers = _run_pool(fn, indexed, workers, results, report)
    for index, chunk in itertools.chain(leftovers, indexed):
        results[index] = fn(chunk)
        report(len(chunk))
    return [r for index in sorted(results) for r in results[index]]


def _run_pool(fn, indexed: Iterator[Indexed], workers: int, results: dict, report) -> list[Indexed]:
    """Run chunks in a pool until `indexed` is exhausted; on a broken pool return the undone chunks."""
    pending: dict = {}
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))
    try:
        for index, chunk in indexed:
            pending[pool.submit(fn, chunk)] = (index, chunk)
            while len(pending) >= 2 * workers:
                _collect(pending, results, report)
        while pending:
            _collect(pending, results, report)
    except BrokenProcessPool:
        pool.shutdown(wait=True)
        return sorted(pending.values(), key=lambda item: item[0])
    except BaseException:
        # Ctrl-C or SIGTERM (the CLI turns it into KeyboardInterrupt), or an error: stop the workers now
        # instead of waiting for the chunks they hold, so none outlives the command.
        pool.shutdown(wait=False, cancel_futures=True)
        for worker in multiprocessing.active_children():
            worker.terminate()
        raise
    pool.shutdown(wait=True)
    return []


def _collect(pending: dict, results: dict, report) -> None:
    finished, _ = wait(pending, return_when=FIRST_COMPLETED)
    for future in finished:
        chunk_results = future.result()  # a broken pool raises here, with `future` still pending
        index, _ = pending.pop(future)
        results[index] = chunk_results
        report(len(chunk_results))
