"""Run the hostile corpus against a checkout and print the table (tried, clean, problem, traceback, ...).

    .venv/bin/python tests/hostile/run_corpus.py [--repo CHECKOUT] [--jobs 2] [--only SUBSTRING]

`--repo` runs another checkout's CLI (e.g. the base commit in a second worktree) on the same cases, to
count "before" and "after" side by side. Inputs are generated under a temporary directory.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE.parent.parent)]

from hostile.cases import all_cases  # noqa: E402
from hostile.runner import make_template, run_case, table  # noqa: E402

from core.paths import has_shared_data  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=HERE.parent.parent)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--only", default="")
    parser.add_argument("--timeout", type=float, default=60.0)
    args = parser.parse_args()
    cases = [c for c in all_cases() if args.only in c.name]
    if not has_shared_data():
        print("../shared/data is absent: the cases built on AgentLab episodes are left out")
        cases = [c for c in cases if not c.needs_shared]
    with tempfile.TemporaryDirectory(prefix="trajreview-hostile-") as tmp:
        template = make_template(args.repo.resolve(), Path(tmp) / "template" / "tasks.duckdb")

        def one(item):
            i, case = item
            return run_case(case, Path(tmp) / f"case{i:03d}", template, args.repo.resolve(), args.timeout)

        with ThreadPoolExecutor(args.jobs) as pool:
            results = []
            for result in pool.map(one, enumerate(cases)):
                results.append(result)
                bad = result.failures()
                flag = "ok " if not bad else "BAD"
                print(f"{flag} {result.outcome:17} {result.elapsed_s:6.1f}s {result.peak_rss_mb:7.0f}MB "
                      f"{result.case.name}" + (f"  -- {bad[0][:300]}" if bad else ""), flush=True)  # fmt: skip
    print()
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
