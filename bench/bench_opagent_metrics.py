"""Benchmark: trajectory metrics of the OpAgent run (809 tasks, 9,858 steps) against the paper's 652-task
gold with the offline judge.

Setup (not timed): a database with the tasks, the paper's gold xlsx (bench.metrics_setup) and the OpAgent run.
Ours: `run_metrics(..., make_judge("offline", use_embeddings=False))`: every pair the five metrics need is
collected, deduplicated and judged in one batch, then the pure metrics run and one transaction writes
`metrics` and `alignments` (the demo's configuration).
Baseline: the same metrics asking the judge pair by pair as each metric needs it (no batch, no
de-duplication across tasks), computed in memory (writes excluded, which favours the baseline).
Also reported: the share of distinct pairs an LLM would get in the `cascade` configuration (the
ambiguous band the offline judge settles approximately), and, when the optional embedding stage is
installed, one run of ours with it.
Target: <= 10 s.

Run: .venv/bin/python -m bench.bench_opagent_metrics
"""

from __future__ import annotations

import time

from bench.metrics_setup import GOLD, pair_by_pair, store_with_gold
from core.ingest.opagent import import_opagent
from core.measure.judge.cascade import make_judge
from core.measure.metrics_run import run_metrics

TARGET_S = 10.0


def main() -> None:
    with store_with_gold() as (store, data):
        import_opagent(store, data / "oagent-run", "opagent")

        judge = make_judge("offline", store, use_embeddings=False)
        started = time.perf_counter()
        summary = run_metrics(store, "opagent", GOLD, judge)
        ours = time.perf_counter() - started
        total = sum(judge.stats.values())
        llm_share = judge.stats.get("offline", 0) / total if total else 0.0

        baseline, asked = pair_by_pair(store, "opagent")

        print(f"{summary.tasks} tasks, {summary.tasks_with_gold} with gold; {total} distinct pairs judged "
              f"(baseline asked {asked} times); stages {dict(sorted(judge.stats.items()))}")  # fmt: skip
        print(f"{'':<30}{'ours':>10}{'baseline':>10}{'ratio':>8}{'target':>10}")
        print(f"{'metrics, offline judge (s)':<30}{ours:>10.2f}{baseline:>10.2f}{ours / baseline:>8.2f}{'≤ ' + str(TARGET_S):>10}")  # fmt: skip
        print(f"share of distinct pairs an LLM would get (cascade): {llm_share:.1%} ({judge.stats.get('offline', 0)} of {total})")  # fmt: skip
        print(f"target met: {ours <= TARGET_S}")

        from core.measure.judge import embeddings

        ok, why = embeddings.available()
        if ok:
            with_embeddings = make_judge("offline", store)
            started = time.perf_counter()
            run_metrics(store, "opagent", GOLD, with_embeddings)
            print(f"with the optional embedding stage (model load included): {time.perf_counter() - started:.2f} s;"
                  f" stages {dict(sorted(with_embeddings.stats.items()))}")  # fmt: skip
        else:
            print(f"embedding stage not installed ({why}): not measured")


if __name__ == "__main__":
    main()
