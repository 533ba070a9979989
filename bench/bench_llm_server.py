"""Benchmark: the judge's LLM questions against a real single-slot server (llama-cpp-python on
SmolLM2-135M, the test-only `llm-server` extra), one question at a time.

Setup (not timed): a database with the tasks, the paper's gold and the OpAgent run; the first N distinct
pairs the `cascade` judge leaves to an LLM (real agent steps against real gold steps and answers).
Ours: `LLMStage` with its defaults: the detected response format (json_object with the answer's schema
on this server), the output cap of a verdict, the time bounds.
Baselines, measured in the same run on the same questions, as the client did before:
- default settings: `chat.completions.parse` with a JSON schema and 3 retries (this server answers the
  schema with HTTP 500: every question is retried and stays unresolved);
- `TRAJREVIEW_LLM_MODE=json_object`: json_object without a schema and without an output cap, 60 s
  timeout (retries left out here, which favours the baseline).
Reported: answered and unresolved questions, requests, seconds per question (p50, p95, max) and the
longest reply in tokens. Target: >= 90 % answered, every reply within the cap, p95 <= 30 s per question.

Run: .venv/bin/python -m bench.bench_llm_server [N]   (N: questions, default 12)
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

from core.ingest.gold import import_gold
from core.ingest.opagent import import_opagent
from core.ingest.tasks import import_tasks
from core.measure.judge.cascade import CascadeJudge
from core.measure.judge.llm import VERDICT_MAX_TOKENS, JudgeReply, LLMStage
from core.measure.llm.config import LLMConfig
from core.measure.llm.kinds import messages
from core.measure.llm.server import json_object
from core.measure.metrics_run import load_task_inputs, task_pairs
from core.paths import REPO_ROOT, shared_data_dir
from core.store import Store

TARGET_ANSWERED = 0.9
TARGET_P95_S = 30.0


def _questions(n: int) -> list:
    data = shared_data_dir()
    with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "bench.duckdb") as store:
        import_tasks(store)
        import_gold(store, data / "human-gold" / "Golden Human Trajectories.xlsx", "paper")
        import_opagent(store, data / "oagent-run", "opagent")
        tasks = load_task_inputs(store, "opagent", "paper")
    offline = CascadeJudge("offline")
    pairs = dict.fromkeys(p for t in tasks for p in task_pairs(t) if offline.cheap_verdict(p)[0] is None)
    return list(pairs)[:n]


def _row(name: str, seconds: list[float], answered: int, requests: int, longest: int | str) -> tuple:
    ordered = sorted(seconds)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return (
        name,
        answered,
        len(seconds) - answered,
        requests,
        statistics.median(ordered),
        p95,
        ordered[-1],
        longest,
    )


def main() -> None:
    import openai

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 12
    sys.path.insert(0, str(REPO_ROOT / "tests"))
    from llm_server_support import llama_server

    pairs = _questions(n)
    with tempfile.TemporaryDirectory() as tmp, llama_server(Path(tmp) / "server.log") as server:
        config = LLMConfig(base_url=server.base_url, api_key="none", model="smollm2")
        ours = LLMStage(config)
        ours.judge_many(pairs[:1])  # the detection, not timed; its answer is asked again below
        seconds, answered, longest, sent = [], 0, 0, server.chat_requests()
        fresh = LLMStage(config)  # nothing cached between questions: every one is asked
        for pair in pairs:
            before_tokens, started = fresh.stats.output_tokens, time.perf_counter()
            (verdict,) = fresh.judge_many([pair])
            seconds.append(time.perf_counter() - started)
            answered += verdict.verdict is not None
            longest = max(longest, fresh.stats.output_tokens - before_tokens)
        rows = [_row(f"ours ({fresh.stats.mode})", seconds, answered, server.chat_requests() - sent, longest)]

        client = openai.OpenAI(base_url=server.base_url, api_key="none", timeout=60.0, max_retries=3)
        seconds, answered, sent = [], 0, server.chat_requests()
        for pair in pairs:
            started = time.perf_counter()
            try:
                client.chat.completions.parse(
                    model="smollm2", messages=messages(ours.kinds[pair.kind], ours.kinds[pair.kind].prompt, pair),
                    temperature=0, response_format=JudgeReply,
                )  # fmt: skip
                answered += 1
            except openai.APIStatusError:
                pass
            seconds.append(time.perf_counter() - started)
        rows.append(_row("before, default (parse)", seconds, answered, server.chat_requests() - sent, "-"))

        client = openai.OpenAI(base_url=server.base_url, api_key="none", timeout=60.0, max_retries=0)
        seconds, answered, longest, sent = [], 0, 0, server.chat_requests()
        for pair in pairs:
            started = time.perf_counter()
            try:
                completion = client.chat.completions.create(
                    model="smollm2", messages=messages(ours.kinds[pair.kind], ours.kinds[pair.kind].prompt, pair),
                    temperature=0, response_format={"type": "json_object"},
                )  # fmt: skip
                longest = max(longest, completion.usage.completion_tokens if completion.usage else 0)
                JudgeReply.model_validate(json_object(completion.choices[0].message.content or ""))
                answered += 1
            except (openai.APIError, ValueError):
                pass
            seconds.append(time.perf_counter() - started)
        rows.append(
            _row("before, json_object (no cap)", seconds, answered, server.chat_requests() - sent, longest)
        )

    print(
        f"{len(pairs)} distinct pairs the cascade leaves to an LLM (OpAgent vs the paper's gold), one at a time"
    )
    print(
        f"{'':<30}{'answered':>9}{'unres.':>7}{'requests':>9}{'p50 s':>8}{'p95 s':>8}{'max s':>8}{'longest':>8}"
    )
    for name, ok, unresolved, requests, p50, p95, worst, long in rows:
        print(f"{name:<30}{ok:>9}{unresolved:>7}{requests:>9}{p50:>8.1f}{p95:>8.1f}{worst:>8.1f}{long!s:>8}")
    for name, *_, p95, _worst, _long in rows[1:]:
        print(f"ratio p95 ours / {name}: {rows[0][5] / p95:.2f}")
    ok, p95, long = rows[0][1] / len(pairs), rows[0][5], rows[0][7]
    print(f"target: >= {TARGET_ANSWERED:.0%} answered, replies <= {VERDICT_MAX_TOKENS} tokens, p95 <= {TARGET_P95_S:g} s"
          f" -> met: {ok >= TARGET_ANSWERED and long <= VERDICT_MAX_TOKENS and p95 <= TARGET_P95_S}")  # fmt: skip


if __name__ == "__main__":
    main()
