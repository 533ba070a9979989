"""The agent paradigms a run may declare.

A module of its own so that the command line lists them (`--paradigm`) without loading the run model
and pydantic: `trajreview --help` must start fast (bench/bench_startup.py).
"""

from __future__ import annotations

from typing import Literal

Paradigm = Literal["step_by_step", "tree_search", "full_plan", "human", "unknown"]
