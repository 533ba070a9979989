"""Run every benchmark (or the named ones) in one process tree, side by side with its baseline."""

from __future__ import annotations

import importlib
import pkgutil
import sys
import time
from pathlib import Path


def available() -> list[str]:
    here = Path(__file__).parent
    return sorted(
        m.name.removeprefix("bench_")
        for m in pkgutil.iter_modules([str(here)])
        if m.name.startswith("bench_")
    )


def main(argv: list[str]) -> int:
    names = argv or available()
    unknown = sorted(set(names) - set(available()))
    if unknown:
        print(
            f"unknown benchmark(s): {', '.join(unknown)}; available: {', '.join(available())}",
            file=sys.stderr,
        )
        return 2
    for name in names:
        print(f"\n=== bench {name} ===", flush=True)
        started = time.perf_counter()
        # Each benchmark sees the argv it would see when run alone (some take optional arguments).
        sys.argv = [f"bench.bench_{name}"]
        importlib.import_module(f"bench.bench_{name}").main()
        print(f"(bench {name} took {time.perf_counter() - started:.1f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
