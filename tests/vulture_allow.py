"""Names vulture cannot see being read: fields of the read models' typed records that reach readers only
through `model_dump()` (`trajreview show --format json`) or `dataclasses.fields()` (the Triage frame).
They are the records' documented public fields, not dead code."""

from core.queries.alignment import StoredMetrics
from core.queries.task import TaskHeader
from core.queries.triage import TriageRow

StoredMetrics.ssr_unordered, StoredMetrics.repr_run_members, StoredMetrics.computed_at  # noqa: B018
TaskHeader.verified_eval, TaskHeader.original_eval_types, TaskHeader.evaluated_at  # noqa: B018
TaskHeader.explanation_source, TaskHeader.has_eval_result, TaskHeader.response_parsed  # noqa: B018
TriageRow.metrics_stale  # noqa: B018
