"""Task review: one task of one run — header, attempts, steps, observations, screenshots, evaluators.

Everything here reads one task only; large texts (AXTree, HTML, chat) and screenshots are separate calls
so a page loads them only when the reviewer opens them.
"""

from __future__ import annotations

import stat
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
import pandas as pd

from core.queries.records import Record
from core.queries.runs import verdicts_sql
from core.scoring.agent_response import LintFinding
from core.store import Store
from core.values import is_missing, or_none

SCREENSHOT_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".webp", ".gif"})
SCREENSHOT_MAX_BYTES = 20 << 20  # a real step screenshot is well under 1 MB
OBSERVATION_KINDS = ("axtree", "html", "chat")
# A tool call's part of its agent's session text: shown behind the Steps tab's raw-text toggle.
RAW_TEXT_KIND = "transcript"


def _json(value: Any) -> Any:
    if is_missing(value):
        return None
    if isinstance(value, str):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    return value


def _expected_answer(evals: list[dict] | None) -> dict | None:
    """The AgentResponseEvaluator's expected response of a WebArena-Verified task."""
    for cfg in evals or []:
        if cfg.get("evaluator") == "AgentResponseEvaluator":
            return cfg.get("expected")
    return None


class ImportProblem(Record):
    """A problem met while importing this task of the run (`import_problems`)."""

    kind: str
    """Short code, e.g. `missing_file`, `bad_json`."""
    message: str
    """One sentence naming the file and the reason."""
    source_path: str | None = None
    """The offending file or directory."""


class TaskHeader(Record):
    """Everything the top of the task page (and `trajreview show`) says about one task of one run."""

    task_id: int
    """WebArena task id."""
    verdict: str
    """`success`, `failure`, `error` or `unscored`, as the Runs and Triage pages show it."""
    verdict_source: str | None = None
    """Who decided the verdict (`webarena-verified`, `source-log`, `source-reward`, `opagent-score`)."""
    intent: str | None = None
    """The task instruction; None when the task is not in the loaded dataset."""
    sites: list[str] | None = None
    """Sites the task uses."""
    site_key: str | None = None
    """The official per-site bucket (sorted sites joined with `-`)."""
    start_urls: list[str] | None = None
    """Start URLs with site placeholders."""
    task_type: str | None = None
    """`retrieve`, `mutate` or `navigate`."""
    expected_status: str | None = None
    """The expected agent status (`SUCCESS`, `NOT_FOUND_ERROR`, ...)."""
    verified_eval: Any = None
    """The WebArena-Verified evaluator configs (parsed JSON)."""
    expected_answer: Any = None
    """The AgentResponseEvaluator's expected response, when the task has one."""
    in_hard_subset: bool | None = None
    """In the official hard subset."""
    reference_answers: Any = None
    """The original WebArena reference answers (parsed JSON), if loaded."""
    reference_url: str | None = None
    """The original WebArena reference URL (url_match)."""
    original_eval_types: list[str] | None = None
    """The original WebArena evaluator types."""
    string_note: str | None = None
    """The original annotator note."""
    original_start_url: str | None = None
    """The original WebArena start URL."""
    status: str | None = None
    """`evaluations.status` of the task (None when not evaluated)."""
    score: float | None = None
    """`evaluations.score`."""
    explanation: str | None = None
    """The task's one-sentence explanation as stored."""
    explanations: list[str] = []
    """Every sentence the page shows for a failure: the failing evaluators', else the task's."""
    error: str | None = None
    """The evaluation error, if evaluating failed."""
    cannot_pass: bool | None = None
    """Flagged: the task cannot pass under this engine version (docs/cannot-pass.md)."""
    engine_version: str | None = None
    """`webarena_verified_version` that scored it."""
    evaluated_at: datetime | None = None
    """When it was scored."""
    offline_status: str | None = None
    """The offline WebArena evaluators' verdict (docs/offline-evaluation.md)."""
    verdict_disagrees: bool | None = None
    """The offline verdict is decided and differs from the run's own."""
    explanation_source: str | None = None
    """`offline` when the offline evaluators wrote the explanation."""
    has_eval_result: bool = False
    """The official `eval_result.json` is stored (Evaluation tab download)."""
    episode: str | None = None
    """The run's answer attempt."""
    final_answer: str | None = None
    """The attempt's final answer."""
    termination: str | None = None
    """How the attempt ended (`answered`, `early_stop`, ...)."""
    termination_detail: str | None = None
    """Why, e.g. "Same action for 3 times"."""
    n_steps: int | None = None
    """Executed actions of the attempt."""
    goal: str | None = None
    """The goal the agent was given."""
    response_raw: str | None = None
    """The WebArena-Verified agent response file's text."""
    response_parsed: Any = None
    """The JSON value found in that text."""
    response_parse_error: str | None = None
    """Why the response is not JSON as the engine reads it."""
    response_lint: list[LintFinding] = []
    """Lint findings against the public FinalAgentResponse rules."""
    problems: list[ImportProblem] = []
    """The task's import problems."""

    @property
    def agent_answer(self) -> str | None:
        """What the agent answered: the final answer, else the raw response file."""
        return self.final_answer if self.final_answer is not None else self.response_raw


def task_header(store: Store, run: str, task_id: int) -> TaskHeader | None:
    """Everything the top of the task page shows; None when the run has no such task."""
    found = store.query_dicts(
        f"""
        WITH v AS ({verdicts_sql()})
        SELECT v.task_id, v.verdict, v.verdict_source, k.intent, k.sites, k.site_key, k.start_urls,
               k.task_type, k.expected_status, k.eval AS verified_eval, k.in_hard_subset,
               o.reference_answers, o.reference_url, o.eval_types AS original_eval_types,
               o.string_note, o.start_url AS original_start_url,
               e.status, e.score, e.explanation, e.error, e.cannot_pass, e.engine_version, e.evaluated_at,
               e.offline_status, e.offline_disagrees AS verdict_disagrees, e.explanation_source,
               e.eval_result IS NOT NULL AS has_eval_result,
               t.episode, t.final_answer, t.termination, t.termination_detail, t.n_steps, t.goal,
               r.raw_text AS response_raw, r.parsed AS response_parsed, r.parse_error AS response_parse_error,
               r.lint AS response_lint
        FROM v
        LEFT JOIN tasks k ON k.task_id = v.task_id
        LEFT JOIN original_tasks o ON o.task_id = v.task_id
        LEFT JOIN evaluations e ON e.run = $run AND e.task_id = v.task_id
        LEFT JOIN trajectories t ON t.run = $run AND t.task_id = v.task_id AND t.is_answer
        LEFT JOIN agent_responses r ON r.run = $run AND r.task_id = v.task_id
        WHERE v.task_id = $task
        """,
        {"run": run, "task": task_id},
    )
    if not found:
        return None
    h = found[0]
    h["verified_eval"] = _json(h["verified_eval"])
    h["expected_answer"] = _expected_answer(h["verified_eval"])
    h["reference_answers"] = _json(h["reference_answers"])
    h["response_parsed"] = _json(h["response_parsed"])
    h["response_lint"] = _json(h["response_lint"]) or []
    h["explanations"] = [
        r["explanation"]
        for r in evaluator_rows(store, run, task_id)
        if r["explanation"] and r["status"] != "success"
    ] or ([h["explanation"]] if h["explanation"] else [])
    h["problems"] = store.query_dicts(
        "SELECT kind, message, source_path FROM import_problems WHERE run = ? AND task_id = ? ORDER BY kind",
        [run, task_id],
    )
    return TaskHeader.model_validate(h)


def cannot_pass_evidence(task_id: int) -> str | None:
    """Why a task cannot pass under the pinned engine (docs/cannot-pass.md), in one line."""
    from core.scoring.engine import CANNOT_PASS

    if task_id not in CANNOT_PASS:
        return None
    return (
        "The official engine rejects this task's own expected answer, so no agent can pass it "
        "under webarena-verified 1.2.3 (see docs/cannot-pass.md)."
    )


def episodes(store: Store, run: str, task_id: int) -> list[dict[str, Any]]:
    """Every attempt of the task in the run, the run's answer first."""
    return store.query_dicts(
        "SELECT episode, is_answer, n_steps, termination, termination_detail, final_answer, started_at"
        " FROM trajectories WHERE run = ? AND task_id = ? ORDER BY is_answer DESC, started_at, episode",
        [run, task_id],
    )


def steps(store: Store, run: str, task_id: int, episode: str) -> pd.DataFrame:
    """The attempt's steps without their large observations (flags say which ones exist); `kind` says
    whether a step acts on the page or only observes it (a tool-using agent's screenshots and waits)."""
    return store.query_df(
        """
        SELECT s.idx, s.url, s.thought, s.stated_action, s.executed_action, s.readable, s.error,
               s.verb, s.element_id, s.element_label, s.value, s.started_at, s.elapsed_s,
               s.screenshot_path, coalesce(s.kind, 'action') AS kind, s.outcome, s.outcome_image,
               coalesce(list(o.kind ORDER BY o.kind) FILTER (WHERE o.kind IS NOT NULL), []) AS observations
        FROM steps s
        LEFT JOIN observations o
          ON o.run = s.run AND o.task_id = s.task_id AND o.episode = s.episode AND o.idx = s.idx
        WHERE s.run = ? AND s.task_id = ? AND s.episode = ?
        GROUP BY ALL ORDER BY s.idx
        """,
        [run, task_id, episode],
    )


def observation(store: Store, run: str, task_id: int, episode: str, idx: int, kind: str) -> str | None:
    """One large text of one step (AXTree, HTML, the LLM chat, a tool call's transcript), loaded only when
    opened."""
    rows = store.query(
        "SELECT content FROM observations WHERE run = ? AND task_id = ? AND episode = ? AND idx = ? AND kind = ?",
        [run, task_id, episode, idx, kind],
    )
    return rows[0][0] if rows else None


def screenshot_bytes(path: str | None) -> bytes | None:
    """The image bytes of a stored screenshot path; None unless it is a regular image file of sane size.

    Paths come from our own importers, but the file may have moved or been replaced since: never follow
    it to something that is not a plain image (a FIFO would block the page, a huge file would stall it).
    """
    if not path:
        return None
    p = Path(path)
    if p.suffix.lower() not in SCREENSHOT_SUFFIXES:
        return None
    try:
        info = p.lstat()
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode) or info.st_size > SCREENSHOT_MAX_BYTES:
        return None
    try:
        return p.read_bytes()
    except OSError:
        return None


def screenshot_image(path: str | None, max_width: int) -> bytes | None:
    """The screenshot scaled down to at most `max_width` pixels (JPEG), for filmstrips and the step view: a
    1500-px PNG is ~1 MB and costs the page ~50 ms to re-encode on every view; this runs once per file
    (the app caches it by the file's identity)."""
    import io

    from PIL import Image, UnidentifiedImageError

    data = screenshot_bytes(path)
    if data is None:
        return None
    try:
        with Image.open(io.BytesIO(data)) as image:
            factor = -(-image.width // max_width)  # integer box reduction: ~2x cheaper than resampling
            scaled = image.reduce(factor) if factor > 1 else image
            out = io.BytesIO()
            scaled.convert("RGB").save(out, format="JPEG", quality=85)
            return out.getvalue()
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError):
        return None


def screenshot_images(paths: tuple[str | None, ...], max_width: int) -> list[bytes | None]:
    """`screenshot_image` of several files at once, two at a time (Pillow decodes outside the GIL): a
    filmstrip's first view costs about half as long."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(lambda p: screenshot_image(p, max_width), paths))


def evaluator_rows(store: Store, run: str, task_id: int) -> list[dict[str, Any]]:
    """Per evaluator: status, sentence, expected vs actual (raw and normalised), assertions, events."""
    rows = store.query_dicts(
        "SELECT * FROM evaluator_results WHERE run = ? AND task_id = ? ORDER BY idx", [run, task_id]
    )
    for r in rows:
        for key in ("assertions", "expected", "actual", "expected_normalized", "actual_normalized"):
            if key in r:
                r[key] = _json(r[key])
    return rows


def eval_result_json(store: Store, run: str, task_id: int) -> bytes | None:
    """The official per-task `eval_result.json` as the engine wrote it (pretty-printed)."""
    rows = store.query("SELECT eval_result FROM evaluations WHERE run = ? AND task_id = ?", [run, task_id])
    if not rows or rows[0][0] is None:
        return None
    return orjson.dumps(orjson.loads(rows[0][0]), option=orjson.OPT_INDENT_2)


def other_runs(store: Store, task_id: int) -> pd.DataFrame:
    """The same task in every run that has it, with each run's verdict."""
    return store.query_df(
        f"SELECT run, verdict, verdict_source FROM ({verdicts_sql(one_run=False)}) WHERE task_id = ? ORDER BY run",
        [task_id],
    )


def gold_sets_with_task(store: Store, task_id: int) -> list[str]:
    return [
        g
        for (g,) in store.query(
            "SELECT DISTINCT gold_set FROM gold_steps WHERE task_id = ? ORDER BY 1", [task_id]
        )
    ]


def task_report(store: Store, run: str, task_id: int, gold_set: str | None = None) -> dict[str, Any] | None:
    """Everything the task page shows, as one JSON-able dict (`trajreview show`): verdict with its source
    and sentences, expected vs agent answer, readable steps of the answer attempt, per-evaluator results,
    metrics with the reason for every NULL, the gold alignment summary, import problems."""
    from core.queries.alignment import alignment_view, metric_rows, null_reason_text

    header = task_header(store, run, task_id)
    if header is None:
        return None
    attempts = episodes(store, run, task_id)
    episode = attempts[0]["episode"] if attempts else None
    step_rows = steps(store, run, task_id, episode) if episode is not None else pd.DataFrame()
    report: dict[str, Any] = {
        "run": run, "task_id": task_id, "site": header.site_key, "intent": header.intent,
        "verdict": header.verdict, "verdict_source": header.verdict_source,
        "explanations": header.explanations, "error": header.error,
        "cannot_pass": bool(header.cannot_pass) or cannot_pass_evidence(task_id) is not None,
        "cannot_pass_evidence": cannot_pass_evidence(task_id),
        "expected_answer": header.expected_answer, "reference_answers": header.reference_answers,
        "reference_url": header.reference_url, "agent_answer": header.agent_answer,
        "termination": header.termination, "termination_detail": header.termination_detail,
        "response_lint": [f.model_dump() for f in header.response_lint],
        "problems": [p.model_dump() for p in header.problems],
        "episode": episode, "attempts": len(attempts),
        "steps": [
            {"idx": int(r.idx), "kind": r.kind, "url": r.url, "readable": r.readable or r.executed_action,
             "stated": r.stated_action, "error": r.error if isinstance(r.error, str) else None}
            for r in step_rows.itertuples(index=False)
        ],
        "evaluators": [
            {"evaluator": e["evaluator"], "idx": e["idx"], "status": e["status"], "explanation": e["explanation"],
             "error": e["error"]}
            for e in evaluator_rows(store, run, task_id)
        ],
        "metrics": [],
        "alignment": None,
    }  # fmt: skip
    for m in metric_rows(store, run, task_id):
        values = {k: or_none(m.value(k)) for k in ("ssr", "rr", "repr", "psr", "ear")}
        report["metrics"].append(
            {
                "gold_set": m.gold_set, "judge_config": m.judge_config, "preset": m.preset, **values,
                "null_reasons": {k: null_reason_text(v) for k, v in m.null_reasons.items()},
                "approximate": bool(m.approximate), "unresolved_pairs": int(m.unresolved_pairs),
            }
        )  # fmt: skip
    sets = gold_sets_with_task(store, task_id)
    chosen = (
        gold_set if gold_set in sets else (report["metrics"][0]["gold_set"] if report["metrics"] else None)
    )
    chosen = chosen if chosen in sets else (sets[0] if sets else None)
    if chosen and episode is not None:
        first = next((m for m in report["metrics"] if m["gold_set"] == chosen), None)
        view = alignment_view(
            store,
            run,
            task_id,
            chosen,
            first["judge_config"] if first else "offline",
            first["preset"] if first else "default",
        )
        if view is not None:
            report["alignment"] = {
                "gold_set": chosen, "judge_config": view.judge_config, "preset": view.preset,
                "computed": view.computed, "missing": view.missing, "gold_version": view.gold_version,
                "alternative": view.alternative, "n_gold": view.n_gold, "n_agent": view.n_agent,
                "matched": sum(1 for r in view.rows if r.verdict),
                "rows": [
                    {"gold_idx": r.gold_idx, "gold": r.gold_text, "agent_idx": r.agent_idx, "executed": r.executed,
                     "judge": r.verdict, "stage": r.stage, "score": r.score, "marks": r.marks}
                    for r in view.rows
                ],
            }  # fmt: skip
    return report
