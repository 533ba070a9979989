"""Recut the demo set shipped in data/demo from the real public data in ../shared/data.

    python data/demo/recut.py            # copy the slice below from ../shared/data into data/demo
    python data/demo/recut.py --check    # say whether data/demo holds exactly those bytes (exit 1 if not)

The shared data's location is `TRAJREVIEW_SHARED_DATA` or `../shared/data` beside the repository, as for
the rest of the project. Every data file here is a byte-for-byte copy of the file with the same relative
path there; the layout is the same, so importers and tests read either root alike. Only Apache-2.0
sources are cut: the WebArena-Verified examples, OpAgent's run and babelcloud's render run. The LICENSE
and README files beside them, and our own gold in gold/, are written by hand and never touched here.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

# Task ids cut from both the OpAgent run and the babelcloud run, so that Compare and the HTML report
# pair them: successes and failures of each site, failures of each hand-labelled cause (wrong answer,
# gave up, step limit, looped, drifted, wrong element, environment, evaluator stricter than the task),
# early stops, answer-only N/A answers, flips in both directions, and tasks 107/108 of the
# WebArena-Verified demo run.
BOTH_RUNS = (
    2, 8, 22, 25, 26, 28, 33, 44, 51, 55, 64, 99, 107, 108, 148, 158, 166, 170, 259, 335, 340, 375, 399,
    414, 427, 529, 530, 555, 560, 603, 671, 746, 769,
)  # fmt: skip
# OpAgent published no file for task 782: babelcloud's is cut alone, the one task Compare cannot pair.
BABELCLOUD_ONLY = (782,)
# OpAgent tasks whose screenshots are cut too (JPEGs; the rest of the run has steps without images).
SCREENSHOT_TASKS = (26, 28, 99, 399, 414)

WAV = "webarena-verified"
OPAGENT = "oagent-run"
BABELCLOUD = "webarena-render/babelcloud__webarena/gbox/trajectories"
WAV_FILES = (
    "config.demo.json",
    *(f"demo-run/{task}/{name}" for task in (107, 108) for name in (
        "agent_response.json", "eval_result.json", "network.har",
    )),
    *(f"test-assets/{name}" for name in (
        "e2e_test_navigation_data.json", "e2e_test_retrieved_data.json", "har_entry_template.json",
        "network.har", "playwright-trace-nav-template.json",
    )),
)  # fmt: skip
# The slice's own folders: recut owns every file in them except these hand-written ones.
CUT_ROOTS = (WAV, OPAGENT, "webarena-render")
HAND_WRITTEN = {"LICENSE", "README.md"}


def shared_data() -> Path:
    env = os.environ.get("TRAJREVIEW_SHARED_DATA")
    return Path(env) if env else HERE.parent.parent.parent / "shared" / "data"


def slice_files(shared: Path) -> list[str]:
    """Every relative path of the slice, read against the shared data (log names carry a timestamp)."""
    files = [f"{WAV}/{name}" for name in WAV_FILES]
    for task in BOTH_RUNS:
        files.append(f"{OPAGENT}/final_results/{task}.json")
    for task in SCREENSHOT_TASKS:
        folder = shared / OPAGENT / "final_visual_results" / f"val_{task}"
        files += sorted(p.relative_to(shared).as_posix() for p in folder.rglob("*") if p.is_file())
    for task in BOTH_RUNS + BABELCLOUD_ONLY:
        files.append(f"{BABELCLOUD}/results_full/render_{task}.html")
        (log,) = (shared / BABELCLOUD / "log_files").glob(f"task_{task}_*.log")
        files.append(log.relative_to(shared).as_posix())
    return sorted(files)


def shipped_files(root: Path = HERE) -> list[str]:
    """The cut files present under root (hand-written files excluded)."""
    found = []
    for top in CUT_ROOTS:
        for path in (root / top).rglob("*"):
            if path.is_file() and path.name not in HAND_WRITTEN:
                found.append(path.relative_to(root).as_posix())
    return sorted(found)


def differences(shared: Path, root: Path = HERE) -> list[str]:
    """What differs between root and a fresh cut from shared: one line per file, empty when identical."""
    wanted = slice_files(shared)
    lines = [f"extra: {name}" for name in sorted(set(shipped_files(root)) - set(wanted))]
    for name in wanted:
        target = root / name
        if not target.is_file():
            lines.append(f"missing: {name}")
        elif target.read_bytes() != (shared / name).read_bytes():
            lines.append(f"differs: {name}")
    return lines


def recut(shared: Path, root: Path = HERE) -> int:
    wanted = slice_files(shared)
    for name in sorted(set(shipped_files(root)) - set(wanted)):
        (root / name).unlink()
    for name in wanted:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shared / name, root / name)
    return len(wanted)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare only; exit 1 on any difference")
    parser.add_argument("--shared", type=Path, default=None, help="the shared data folder")
    args = parser.parse_args(argv)
    shared = args.shared or shared_data()
    if not shared.is_dir():
        print(f"no shared data at {shared}: nothing to cut from", file=sys.stderr)
        return 2
    if args.check:
        lines = differences(shared)
        print(
            "\n".join(lines) if lines else f"data/demo matches {len(slice_files(shared))} files of {shared}"
        )
        return 1 if lines else 0
    print(f"cut {recut(shared)} files from {shared}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
