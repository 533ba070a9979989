"""The least a scoring import can cost: score a run directory and store nothing (the scoring bench's bound).

    python -m bench.scoring_only RUN_DIR CONFIG     prints {task_id: [status, score]} as JSON

Started as our command starts (the workers' fork server first, preloading what ours preloads, two
workers, the same chunking), each worker reads a task's response and HAR, decodes the HAR (orjson, the
entries exactly as the file holds them: what the official engine takes), scores it with the official
engine through our `core.scoring.engine`, and frees it. No network-event rows, no redaction, no database,
no search index. The time it takes is the floor under any import that hands the engine the file's
entries on this machine; `official / bound` is the most such an import could print (bench_scoring).

Module-level imports are the standard library only: every worker imports this script again (as
`__mp_main__`), and the workers' function by its module's name.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
from functools import partial
from pathlib import Path


def score_tasks(config_json: str, chunk: list[tuple[int, str]]) -> list[tuple[int, str, float | None]]:
    from core.files.har import load_trace_entries
    from core.scoring.engine import ScoringInput, score_chunk

    out = []
    for task_id, task_dir in chunk:
        folder = Path(task_dir)
        item = ScoringInput.model_construct(
            task_id=task_id,
            agent_response=(folder / "agent_response.json").read_text(),
            har_entries=load_trace_entries(folder / "network.har"),
            har_path=None,
            event_seqs=None,
        )
        score = score_chunk(config_json, [item])[0]
        out.append((task_id, score.status, score.score))
    return out


def main(run_dir: str, config: str) -> None:
    from core.files.parallel import SCORING_MODULES, start_fork_server

    # As our command ends (core.cli.start): without the interpreter's teardown, once the workers' threads
    # are joined (registered first, so this exit handler runs last).
    atexit.register(_exit_without_teardown)
    start_fork_server(SCORING_MODULES)  # first, as core.cli.start does
    # By its module's name, not `__main__`'s: a function of the main script does not pickle to workers.
    from bench.scoring_only import score_tasks
    from core.files.parallel import WorkerPool, arrow_without_pandas
    from core.ingest.wav_run import tasks_per_chunk
    from core.scoring.engine import read_config

    tasks = sorted((int(p.name), str(p)) for p in Path(run_dir).iterdir() if p.name.isdigit())
    config_json = read_config(Path(config))
    with WorkerPool(2, preload=SCORING_MODULES, initializer=arrow_without_pandas) as pool:
        results = pool.map_chunks(
            partial(score_tasks, config_json),
            tasks,
            chunk_size=tasks_per_chunk(len(tasks), 2),
            total=len(tasks),
        )
    sys.stdout.write(json.dumps({task_id: [status, score] for task_id, status, score in results}))
    sys.stdout.flush()


def _exit_without_teardown() -> None:
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main(*sys.argv[1:])
