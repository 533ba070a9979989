"""The worker side of `import wav-run` (core/ingest/wav_tasks.py) on the demo run's real tasks: the rows
travel back to the parent as one Arrow IPC stream per task (cheaper to pickle and to unpickle than the
table), in one process as the table itself, and the parent reads back exactly the rows the trace parses into."""

from __future__ import annotations

import pickle

from core.files.har import parse_trace
from core.ingest.wav_tasks import events_table, read_and_score_chunk


def test_a_tasks_rows_come_back_as_an_ipc_stream_holding_the_parsed_rows(shipped_data):
    run = shipped_data / "webarena-verified" / "demo-run"
    out = read_and_score_chunk("r", None, [(107, str(run / "107")), (108, str(run / "108"))])
    for (task, _, score), task_id in zip(out, (107, 108), strict=True):
        assert score is None
        shipped = pickle.dumps(task)
        parsed = parse_trace(run / str(task_id) / "network.har", "r", task_id).events
        # One IPC stream, not the table's own pickle of its columns.
        assert b"_from_ipc" in shipped and b"_reconstruct_table" not in shipped
        back = events_table(pickle.loads(shipped))  # noqa: S301 (our own bytes)
        assert back.num_rows == parsed.num_rows > 0 and back.equals(parsed)
        # In one process (--workers 1) the table itself comes back: no copy of the rows.
        assert events_table(task) is not None and events_table(task).equals(parsed)
