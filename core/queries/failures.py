"""The latest run's failures grouped by what is known about their cause today: the failing evaluator and
the shape of its sentence (values left out: "must include '…'; the agent answered '…'"), else how the
attempt ended. The landing page lists these groups, each task one click from its task page.

`FailureItem` is one failed task; once the run is diagnosed (`trajreview diagnose`) the item carries its
suggested primary cause and the groups are those causes (`group_failures` takes the key function).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from core.diagnose.taxonomy import NO_SPECIFIC, UNDECIDED
from core.queries.causes import cause_name, primary_causes_sql
from core.queries.runs import run_names, verdicts_sql
from core.store import Store

_QUOTED = re.compile(r"(?<!\w)'.*?'(?!\w)|(?<!\w)\".*?\"(?!\w)")
_URL = re.compile(r"\b(?:https?://|__[A-Z_]+__)\S*")
_NUMBER = re.compile(r"(?<![\w.])[-+]?\d+(?:[.,]\d+)*(?![\w.])")
_EVENT = re.compile(r"\(event \d+\)")


@dataclass(frozen=True)
class FailureItem:
    """One failed (or errored) task of the run."""

    task_id: int
    site: str | None
    verdict: str
    """`failure` or `error`."""
    sentence: str | None
    """The task's one plain sentence (the explanation, else the evaluation error)."""
    failing_evaluators: str | None
    """The evaluators that did not succeed, comma-joined."""
    termination: str | None
    """How the attempt ended (`answered`, `early_stop`, ...)."""
    cause: str | None = None
    """The suggested primary cause (a taxonomy code); None when the run is not diagnosed."""
    cause_by_model: bool = False
    """That cause was suggested by a model (no rule decided)."""


@dataclass(frozen=True)
class FailureGroup:
    """Failed tasks sharing what is known of their cause."""

    cause: str
    """The shared cause in words: the sentence's shape (values as …), else how the attempt ended."""
    evaluators: str | None
    """The failing evaluators the group's tasks share, if any."""
    items: list[FailureItem] = field(default_factory=list)


def sentence_shape(sentence: str) -> str:
    """The first clause of a sentence with its values left out, so failures of one kind read alike:
    quoted values and URLs become …, numbers N ("must include '…'" for every missing value)."""
    shape = _EVENT.sub("(event N)", sentence.split("; ", 1)[0])
    shape = _QUOTED.sub("'…'", shape)
    shape = _URL.sub("…", shape)
    shape = _NUMBER.sub("N", shape)
    shape = re.sub(r"('…'(?:, '…')+)( and N more)?", "'…'", shape)
    return " ".join(shape.split())


def _cause(item: FailureItem) -> tuple[str, str | None]:
    if item.sentence and item.sentence.strip():
        return sentence_shape(item.sentence), item.failing_evaluators
    ending = item.termination or "not recorded"
    return f"no explanation recorded; the attempt ended: {ending}", item.failing_evaluators


def _diagnosed_cause(item: FailureItem) -> tuple[str, str | None]:
    return cause_name(item.cause), None


def group_failures(
    items: list[FailureItem],
    key: Callable[[FailureItem], tuple[str, str | None]] = _cause,
    last: frozenset[str] = frozenset(),
) -> list[FailureGroup]:
    """Items grouped by `key` (cause, evaluators), biggest group first, tasks by id; groups whose cause is
    in `last` after every other, whatever their size."""
    groups: dict[tuple[str, str | None], FailureGroup] = {}
    for item in items:
        k = key(item)
        groups.setdefault(k, FailureGroup(cause=k[0], evaluators=k[1])).items.append(item)
    return sorted(groups.values(), key=lambda g: (g.cause in last, -len(g.items), g.cause))


def latest_run(store: Store) -> str | None:
    """The most recently imported run."""
    names = run_names(store)
    return names[0] if names else None


def failures_by_cause(store: Store, run: str) -> list[FailureGroup]:
    """The run's failed and errored tasks grouped by what is known of their cause: the suggested primary
    cause when the run is diagnosed, else the failing evaluator and the shape of its sentence."""
    rows = store.query(
        f"""
        WITH v AS ({verdicts_sql()}),
        failing AS (
            SELECT task_id, string_agg(DISTINCT evaluator, ', ' ORDER BY evaluator) AS evaluators
            FROM evaluator_results WHERE run = $run AND status <> 'success' GROUP BY task_id
        ),
        p AS ({primary_causes_sql()})
        SELECT v.task_id, k.site_key, v.verdict, coalesce(e.explanation, e.error), f.evaluators,
               nullif(t.termination, 'none'), p.cause, coalesce(p.by_model, false)
        FROM v
        LEFT JOIN tasks k ON k.task_id = v.task_id
        LEFT JOIN evaluations e ON e.run = $run AND e.task_id = v.task_id
        LEFT JOIN trajectories t ON t.run = $run AND t.task_id = v.task_id AND t.is_answer
        LEFT JOIN failing f ON f.task_id = v.task_id
        LEFT JOIN p ON p.task_id = v.task_id
        WHERE v.verdict IN ('failure', 'error')
        ORDER BY v.task_id
        """,
        {"run": run},
    )
    items = [FailureItem(*row) for row in rows]
    diagnosed = any(item.cause is not None for item in items)
    if not diagnosed:
        return group_failures(items)
    # The causes found first, then what names none (no specific cause, undecided), whatever their size.
    unnamed = frozenset({cause_name(NO_SPECIFIC), cause_name(UNDECIDED), cause_name(None)})
    return group_failures(items, _diagnosed_cause, last=unnamed)
