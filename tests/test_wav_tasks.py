"""The worker side of `import wav-run` (core/ingest/wav_tasks.py) on the demo run's real tasks: the rows
travel back to the parent as one Arrow IPC stream per task (cheaper to pickle and to unpickle than the
table), and the parent reads back exactly the rows the trace parses into."""

from __future__ import annotations

import pickle

from core.files.har import parse_trace
from core.ingest.wav_tasks import events_table, read_and_score_chunk


def test_a_tasks_rows_come_back_as_an_ipc_stream_holding_the_parsed_rows(shipped_data):
    run = shipped_data / "webarena-verified" / "demo-run"
    out = read_and_score_chunk("r", None, [(107, str(run / "107")), (108, str(run / "108"))])
    for (task, _, score), task_id in zip(out, (107, 108), strict=True):
        assert task.events is None and isinstance(task.events_ipc, bytes) and score is None
        back = events_table(pickle.loads(pickle.dumps(task)))  # noqa: S301 (our own bytes)
        parsed = parse_trace(run / str(task_id) / "network.har", "r", task_id).events
        assert back.num_rows == parsed.num_rows > 0 and back.equals(parsed)
