"""The ordered process map: order, in-process paths, and recovery from a pool that breaks."""

from __future__ import annotations

import os
import signal
from functools import partial

import pytest

from core.files.parallel import map_chunks


def square_chunk(chunk: list[int]) -> list[tuple[int, int]]:
    return [(x * x, os.getpid()) for x in chunk]


def chunk_sizes(chunk: list[int]) -> list[tuple[int, int]]:
    return [(x, len(chunk)) for x in chunk]


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
    # The workers get the run's last tasks (two chunks' worth per worker) in quarter chunks (`tapered`).
    sizes = map_chunks(chunk_sizes, range(50), workers=2, chunk_size=4, total=50)
    assert [x for x, _ in sizes] == list(range(50))
    assert [n for _, n in sizes] == [4] * 36 + [1] * 14


def test_the_last_chunks_of_a_run_are_small():
    """The last two chunks' worth of tasks per worker go in quarter chunks, so no worker waits a whole
    chunk for the other at the end of a run; every task once, in order."""
    from core.files.parallel import tapered

    sizes = [len(c) for c in tapered(range(200), 8, 200, 2)]
    assert sizes == [8] * 21 + [2] * 16 and sum(sizes) == 200
    assert [x for c in tapered(range(37), 8, 37, 2) for x in c] == list(range(37))
    assert [len(c) for c in tapered(range(20), 8, None, 2)] == [8, 8, 4]  # no total: whole chunks
    assert [len(c) for c in tapered(range(20), 8, 20, 1)] == [8, 8, 4]  # one worker: nobody waits


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


# The fork server's workers wait a second before reading what the command sent them, and the command is
# interrupted after the server forked a worker but before it learnt the worker's pid: the moment a
# Ctrl-C under load once hit in tests/test_signals.py. The worker then read the pool's queues after the
# command had removed them and printed a FileNotFoundError traceback to the command's stderr.
_LATE_WORKER_PRELOAD = """
import multiprocessing.spawn, time
_main = multiprocessing.spawn._main
def late_main(*args, **kwargs):
    time.sleep(1.0)
    return _main(*args, **kwargs)
multiprocessing.spawn._main = late_main
"""

_INTERRUPTED_SPAWN_SCRIPT = """
import multiprocessing.forkserver, os, signal, sys, threading, time
from core.files import parallel
from core.files.parallel import WorkerPool

parallel._start = lambda executor: None  # no worker started ahead: the first chunk's submit starts one

read_signed = multiprocessing.forkserver.read_signed
def interrupted_read(fd):  # the worker is forked; its pid is not read yet
    if threading.current_thread() is threading.main_thread():
        os.kill(os.getpid(), signal.SIGINT)
    return read_signed(fd)
multiprocessing.forkserver.read_signed = interrupted_read

def slow_chunk(chunk):
    time.sleep(0.05)
    return chunk

if __name__ == "__main__":
    try:
        with WorkerPool(2, preload=["late_worker"]) as pool:
            pool.map_chunks(slow_chunk, range(40), chunk_size=1)
    except KeyboardInterrupt:
        sys.exit(130)
    sys.exit(0)
"""


def test_a_stop_while_a_worker_starts_leaves_no_worker_behind(tmp_path, repo_root):
    import subprocess
    import sys

    (tmp_path / "late_worker.py").write_text(_LATE_WORKER_PRELOAD)
    script = tmp_path / "interrupted.py"
    script.write_text(_INTERRUPTED_SPAWN_SCRIPT)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(repo_root), str(tmp_path)])}
    # communicate() returns once every holder of stderr has exited, a worker left behind included.
    # SIGINT back to its default in the child: a suite started in the background (`make test &`) runs with
    # it ignored, and a child inherits that (tests/test_signals.py::_as_from_a_terminal).
    done = subprocess.run([sys.executable, str(script)], env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=60, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # fmt: skip
    assert done.returncode == 130, done.stderr[-2000:]
    assert "Traceback" not in done.stderr, done.stderr[-2000:]


def _manager_threads() -> list:
    import threading

    return [t for t in threading.enumerate() if type(t).__name__ == "_ExecutorManagerThread" and t.is_alive()]


def test_a_pool_left_on_an_error_has_ended_its_manager_thread():
    """Left running, the pool's manager thread closes its wake-up pipe while CPython 3.11's exit handler
    writes to it: a failed command printed 'OSError: Bad file descriptor' after its one line."""
    from core.files.parallel import WorkerPool

    before = _manager_threads()
    with pytest.raises(RuntimeError), WorkerPool(2) as pool:
        assert pool.map_chunks(square_chunk, range(8), chunk_size=1)  # the workers are up
        raise RuntimeError("the command failed")
    assert _manager_threads() == before
