"""Where things live: the repository, the default database, the real public data.

Real data comes from two roots with the same layout: `../shared/data` beside the repository (every run
whole, plus sources we may not redistribute) and the compact demo set shipped in `data/demo` (slices of
the Apache-2.0 sources, and our own gold). Whatever reads one reads the other alike.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DB = REPO_ROOT / "data" / "trajreview.duckdb"
PROMPTS_DIR = REPO_ROOT / "prompts"
SHIPPED_DATA = REPO_ROOT / "data" / "demo"

DemoSource = Literal["shared", "shipped"]


def default_db_path() -> Path:
    """`TRAJREVIEW_DB` wins over the repository default."""
    env = os.environ.get("TRAJREVIEW_DB")
    return Path(env) if env else DEFAULT_DB


def shared_data_path() -> Path:
    """Where the shared data is looked for (`TRAJREVIEW_SHARED_DATA`, else `../shared/data`); it may be
    absent, as in a clone on its own."""
    env = os.environ.get("TRAJREVIEW_SHARED_DATA")
    return Path(env) if env else REPO_ROOT.parent / "shared" / "data"


def has_shared_data() -> bool:
    return shared_data_path().is_dir()


def shared_data_dir() -> Path:
    """The shared data, for what needs whole runs or files we do not ship; fails loudly if absent."""
    path = shared_data_path()
    if not path.is_dir():
        raise FileNotFoundError(
            f"shared data not found at {path}: clone the project with ../shared beside it "
            "or set TRAJREVIEW_SHARED_DATA"
        )
    return path


def demo_source() -> DemoSource:
    """The demo's data: the shared data where it exists (whole runs), else the shipped set."""
    return "shared" if has_shared_data() else "shipped"
