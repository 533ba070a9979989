"""Suggested causes on the shipped demo, by the real engine: the demo build diagnosed every run with rules
only; `diagnose_with_model` asks a fake OpenAI-compatible server about what the rules left open, so one
task carries a model's suggestion; `forget_diagnosis` leaves a run as if imported after the diagnosis."""

from __future__ import annotations

import json

from demo_support import OPAGENT
from fake_openai import FakeOpenAI

from core.diagnose.run import diagnose_run
from core.measure.llm.config import LLMConfig
from core.store import Store

# The shipped OpAgent slice's one failed task no rule decides (it ended without an answer): undecided in
# the demo as built, the model's in `diagnose_with_model`.
OPEN_TASK = (OPAGENT, 99)
MODEL_REASONING = "The agent typed into the search box where the filter field was expected."


def open_tasks(store: Store, run: str = OPAGENT) -> list[int]:
    return [t for (t,) in store.query(
        "SELECT task_id FROM failure_causes WHERE run = ? AND is_primary AND cause = 'undecided' ORDER BY 1", [run]
    )]  # fmt: skip


def diagnose_with_model(store: Store, reasoning: str = MODEL_REASONING, cause: str = "wrong_element") -> None:
    """Re-diagnose the OpAgent run with a model that answers `cause` with `reasoning` for every open task."""
    assert open_tasks(store) == [OPEN_TASK[1]], "the rules now decide a different set of the demo's tasks"
    with FakeOpenAI() as fake:
        fake.answer_for = lambda token: json.dumps({"reasoning": reasoning, "cause": cause})
        config = LLMConfig(base_url=fake.base_url, api_key="test", model="fake", timeout_s=5.0, max_retries=0,
                           mode="json_object")  # fmt: skip
        diagnose_run(store, OPAGENT, llm=config)
    assert open_tasks(store) == []


def forget_diagnosis(store: Store, run: str) -> None:
    with store.transaction() as cur:
        cur.execute("DELETE FROM failure_causes WHERE run = ?", [run])
