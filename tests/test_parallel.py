"""The ordered process map: order, in-process paths, and recovery from a pool that breaks."""

from __future__ import annotations

import os
from functools import partial

import pytest

from core.files.parallel import map_chunks


def square_chunk(chunk: list[int]) -> list[tuple[int, int]]:
    return [(x * x, os.getpid()) for x in chunk]


def die_in_worker(parent_pid: int, chunk: list[int]) -> list[int]:
    if os.getpid() != parent_pid:
        os._exit(3)  # a worker killed mid-chunk breaks the whole pool
    return [x + 1 for x in chunk]


@pytest.mark.slow
def test_results_keep_input_order_and_use_workers():
    progress = []
    out = map_chunks(square_chunk, range(50), workers=2, chunk_size=4, total=50,
                     on_progress=lambda d, t: progress.append((d, t)))  # fmt: skip
    assert [v for v, _ in out] == [x * x for x in range(50)]
    assert os.getpid() not in {pid for _, pid in out}
    assert progress[0] == (0, 50) and progress[-1] == (50, 50)


def test_one_worker_or_one_chunk_runs_here():
    assert {pid for _, pid in map_chunks(square_chunk, range(10), workers=1, chunk_size=3)} == {os.getpid()}
    assert {pid for _, pid in map_chunks(square_chunk, range(3), workers=2, chunk_size=8)} == {os.getpid()}
    assert map_chunks(square_chunk, [], workers=2, chunk_size=3) == []


@pytest.mark.slow
def test_broken_pool_falls_back_to_this_process():
    out = map_chunks(partial(die_in_worker, os.getpid()), range(40), workers=2, chunk_size=5)
    assert out == [x + 1 for x in range(40)]


_ARROW_POOL_SCRIPT = """
import os, pyarrow as pa
def rss():
    with open(f"/proc/{os.getpid()}/status") as f:
        return next(int(line.split()[1]) // 1024 for line in f if line.startswith("VmRSS"))
arrays = [pa.array([b"x" * 100] * 2000, pa.binary()) for _ in range(700)]  # ~300 MB in small buffers
full = rss()
del arrays
freed = rss()
from core.files.parallel import release_free_memory
release_free_memory()
print(full, freed, rss())
"""


@pytest.mark.slow
def test_free_memory_goes_back_from_arrows_pool_too():
    """Arrow's pool (mimalloc) keeps the pages of freed buffers: without `release_unused` the process's RSS
    stays at its high-water mark after a large trace's rows are dropped (bench large_har's peak)."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _ARROW_POOL_SCRIPT], capture_output=True, text=True, check=True
    )
    full, freed, released = map(int, done.stdout.split())
    assert freed > full * 0.8  # the pool kept what was freed ...
    assert released < full * 0.4  # ... and gave it back when asked
