"""Benchmark: how fast the command line starts, ours vs the official CLI.

    ours      `trajreview --help`
    baseline  `webarena-verified --help` (the official CLI), in the same run, alternating
    floor     `python -c pass` (the interpreter alone), for reference

Each is a fresh process, timed from spawn to exit; 5 runs each (BENCH_STARTUP_REPEAT). The target of
issue 24 is `trajreview --help` in at most 0.5 s, best of 5.

Run: .venv/bin/python -m bench startup
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

TARGET_SECONDS = 0.5


def _time(cmd: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def main() -> None:
    repeat = int(os.environ.get("BENCH_STARTUP_REPEAT", "5"))
    bin_dir = Path(sys.executable).parent
    commands = {
        "trajreview --help": [str(bin_dir / "trajreview"), "--help"],
        "webarena-verified --help": [str(bin_dir / "webarena-verified"), "--help"],
        "python -c pass": [sys.executable, "-c", "pass"],
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(repeat):  # alternate, so all see the same load
        for name, cmd in commands.items():
            times[name].append(_time(cmd))
    ours, official = times["trajreview --help"], times["webarena-verified --help"]
    print(f"start-up, {repeat} runs each, alternating; load average {os.getloadavg()[0]:.1f}")
    print(f"{'command':<28}{'best s':>9}{'p50 s':>9}{'p95 s':>9}")
    for name, values in times.items():
        print(f"{name:<28}{min(values):>9.2f}{statistics.median(values):>9.2f}{_p95(values):>9.2f}")
    print(f"{'measure':<34}{'ours':>8}{'baseline':>10}{'ratio':>8}{'target':>12}")
    print(
        f"{'--help, best of ' + str(repeat) + ' (s)':<34}{min(ours):>8.2f}{min(official):>10.2f}"
        f"{min(official) / min(ours):>7.1f}x{f'<= {TARGET_SECONDS} s':>12}"
    )
    print(
        f"{'--help, p50 (s)':<34}{statistics.median(ours):>8.2f}{statistics.median(official):>10.2f}"
        f"{statistics.median(official) / statistics.median(ours):>7.1f}x{'':>12}"
    )


if __name__ == "__main__":
    main()
