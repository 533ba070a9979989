"""Names in the demo database the tests build from the shipped set (conftest's `demo_db`)."""

from __future__ import annotations

from core.ingest.demo import GOLD_SETS

BABEL = "webarena-render-babelcloud"  # a tool-using agent: one step per tool call, verdicts from the logs
OPAGENT = "opagent"  # multi-step with stated actions; screenshots for a few tasks
WAV = "wav-demo"  # the official WebArena-Verified demo run: tasks 107 and 108 with network traces
NAV = "wav-navigation"  # network evaluators on the official two real HARs (157, 677) and the constructed 502 (374)
GOLD = GOLD_SETS["shipped"]  # our gold for 22 tasks (data/demo/gold)
