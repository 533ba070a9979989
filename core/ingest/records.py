"""The run model: typed records every importer builds and the writer stores.

One record per concept, each field documented, so importers, the writer (`core.ingest.writer`), the
submission reader and the CLI share one vocabulary without reaching into each other.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field

from core.ingest.paradigm import Paradigm
from core.measure.action_grammar import ParsedAction
from core.measure.action_grammar.tool_calls import StepKind

Termination = Literal["answered", "na_answer", "early_stop", "truncated", "error", "interrupted", "none"]

# Terminations that count as a complete attempt when choosing the run's answer for a task.
COMPLETE = frozenset({"answered", "na_answer", "early_stop", "truncated"})


class RunMeta(BaseModel):
    """One imported run (table `runs`)."""

    name: str = Field(min_length=1, description="the run's name, unique in the database")
    source_format: str = Field(description="importer that read it: wav-run, agentlab, webarena-render, ...")
    source_path: str = Field(description="the file or directory it was read from")
    agent: str | None = None
    model: str | None = None
    paradigm: Paradigm = "unknown"
    config: Any = Field(default=None, description="run or environment config, JSON-able")
    n_tasks: int | None = None
    notes: str | None = None


class StepRecord(BaseModel):
    """One agent step (table `steps`)."""

    idx: int
    url: str | None = Field(default=None, description="page the step was taken on")
    thought: str | None = None
    stated_action: str | None = Field(default=None, description="the action the reasoning states")
    executed_action: str | None = Field(default=None, description="the action sent to the browser")
    action: ParsedAction | None = None
    readable: str | None = Field(default=None, description="one readable sentence of what was done")
    error: str | None = None
    kind: StepKind = Field(
        default="action", description="`observe`: a tool call that only looks (screenshot, tab list, wait)"
    )
    outcome: str | None = Field(default=None, description="what the tool returned, screenshots dropped")
    outcome_image: bool | None = Field(default=None, description="the tool's result carried a screenshot")
    started_at: Any = None
    elapsed_s: float | None = None
    screenshot_path: str | None = None
    # Large texts, stored in `observations` and loaded on demand: {"axtree": ..., "html": ...,
    # "transcript": the step's part of a tool-using agent's session text}.
    observations: dict[str, str] = Field(default_factory=dict)


class TrajectoryRecord(BaseModel):
    """One attempt at a task (table `trajectories`) with its steps."""

    task_id: int
    episode: str = "0"
    final_answer: str | None = None
    reward: float | None = None
    success: bool | None = None
    termination: Termination = "none"
    termination_detail: str | None = None
    plan: list[str] | None = None
    goal: str | None = None
    # The task config the source recorded for this attempt (a render file's header), JSON-able.
    task_config: Any = None
    source_path: str | None = None
    started_at: Any = None
    elapsed_s: float | None = None
    # The page the browser showed after the last action, when the source records it apart from the
    # steps (OpAgent's post-action `page_url`); otherwise the last step's URL is the last page.
    final_url: str | None = None
    # Orders attempts of one task: the latest complete one is the run's answer.
    order_key: Any = None
    steps: list[StepRecord] = Field(default_factory=list)

    @property
    def n_steps(self) -> int:
        """Executed actions; observe-only calls (screenshots, waits) are not counted."""
        return sum(1 for s in self.steps if s.executed_action and s.kind == "action")

    @property
    def answer_only(self) -> bool:
        return is_answer_only([s.action.verb if s.action else None for s in self.steps])


# Verbs of steps that are no browser action: the final answer (or the harness's early stop, written
# the same way), and outputs that did not parse.
_ANSWER_VERBS = frozenset({"answer", "infeasible"})
_NO_ACTION_VERBS = _ANSWER_VERBS | {"noop"}


def is_answer_only(verbs: Sequence[str | None]) -> bool:
    """A trajectory that records its final answer and no browser action: every step is the answer or an
    unparsed output (the babelcloud renders: the agent drove the browser through its own tools and the
    harness recorded one summarising step). Its step metrics are undefined (`answer_only`), not 0."""
    return (
        bool(verbs) and any(v in _ANSWER_VERBS for v in verbs) and all(v in _NO_ACTION_VERBS for v in verbs)
    )


def mark_answers(trajectories: Sequence[TrajectoryRecord]) -> set[tuple[int, str]]:
    """(task_id, episode) of each task's answer: the latest complete attempt, else the latest attempt."""
    by_task: dict[int, list[TrajectoryRecord]] = {}
    for t in trajectories:
        by_task.setdefault(t.task_id, []).append(t)
    chosen = set()
    for task_id, attempts in by_task.items():
        ordered = sorted(attempts, key=lambda t: (t.order_key is not None, t.order_key, t.episode))
        complete = [t for t in ordered if t.termination in COMPLETE]
        chosen.add((task_id, (complete or ordered)[-1].episode))
    return chosen
