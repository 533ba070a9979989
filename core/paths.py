"""Where things live: the repository, the default database, the shared real data."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DB = REPO_ROOT / "data" / "trajreview.duckdb"
PROMPTS_DIR = REPO_ROOT / "prompts"


def default_db_path() -> Path:
    """`TRAJREVIEW_DB` wins over the repository default."""
    env = os.environ.get("TRAJREVIEW_DB")
    return Path(env) if env else DEFAULT_DB


def shared_data_dir() -> Path:
    """The real public data kept beside the repository (`../shared/data`); fails loudly if absent."""
    env = os.environ.get("TRAJREVIEW_SHARED_DATA")
    path = Path(env) if env else REPO_ROOT.parent / "shared" / "data"
    if not path.is_dir():
        raise FileNotFoundError(
            f"shared data not found at {path}: clone the project with ../shared beside it "
            "or set TRAJREVIEW_SHARED_DATA"
        )
    return path
