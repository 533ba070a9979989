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

from core.files import thumbnails
from core.queries.evidence import (
    ORIGINAL,
    Reference,
    TemplateRecord,
    original_reference,
    parse_json,
    references_differ,
    template_record,
    verdict_reference,
    verified_reference,
)
from core.queries.records import Record
from core.queries.runs import verdicts_sql
from core.scoring.agent_response import LintFinding
from core.store import Store

SCREENSHOT_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".webp", ".gif"})
SCREENSHOT_MAX_BYTES = 20 << 20  # a real step screenshot is well under 1 MB
OBSERVATION_KINDS = ("axtree", "html", "chat")
# A tool call's part of its agent's session text: shown behind the Steps tab's raw-text toggle.
RAW_TEXT_KIND = "transcript"


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
    """The goal the agent was given (the instruction it saw, which may differ from `intent`)."""
    final_url: str | None = None
    """The page after the attempt's last action, when the source records it (`trajectories.final_url`)."""
    reference: Reference | None = None
    """The reference of the verdict shown, from the config that verdict was scored on."""
    verified_reference: Reference | None = None
    """The WebArena-Verified reference, when the verdict shown was scored on another config."""
    references_differ: bool | None = None
    """The two references expect different answers (None: one checks the page or network instead)."""
    template: TemplateRecord | None = None
    """How the tasks of this task's intent template fared in this run."""
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
    def instruction(self) -> str | None:
        """What the agent was told: its recorded goal, else the task's intent."""
        return self.goal if self.goal and self.goal.strip() else self.intent

    @property
    def instruction_differs(self) -> bool:
        """The agent saw another wording than the WebArena-Verified intent (spacing aside)."""
        return bool(self.goal and self.intent) and " ".join(self.goal.split()) != " ".join(
            self.intent.split()
        )

    @property
    def agent_answer(self) -> str | None:
        """What the agent answered: the final answer, else the raw response file."""
        return self.final_answer if self.final_answer is not None else self.response_raw


def task_header(store: Store, run: str, task_id: int) -> TaskHeader | None:
    """Everything the top of the task page shows; None when the run has no such task. Each table is joined
    on the task's own key (not on `v`'s), so DuckDB reads one row of each instead of the run's."""
    found = store.query_dicts(
        f"""
        WITH v AS ({verdicts_sql(one_task=True)})
        SELECT v.task_id, v.verdict, v.verdict_source, k.intent, k.sites, k.site_key, k.start_urls,
               k.task_type, k.expected_status, k.eval AS verified_eval, k.in_hard_subset,
               o.reference_answers, o.reference_url, o.eval_types AS original_eval_types,
               o.string_note, o.start_url AS original_start_url, o.program_html AS original_program_html,
               e.status, e.score, e.explanation, e.error, e.cannot_pass, e.engine_version, e.evaluated_at,
               e.offline_status, e.offline_disagrees AS verdict_disagrees, e.explanation_source,
               e.eval_result IS NOT NULL AS has_eval_result,
               t.episode, t.final_answer, t.termination, t.termination_detail, t.n_steps, t.goal,
               t.final_url, t.task_config,
               r.raw_text AS response_raw, r.parsed AS response_parsed, r.parse_error AS response_parse_error,
               r.lint AS response_lint
        FROM v
        LEFT JOIN tasks k ON k.task_id = $task
        LEFT JOIN original_tasks o ON o.task_id = $task
        LEFT JOIN evaluations e ON e.run = $run AND e.task_id = $task
        LEFT JOIN trajectories t ON t.run = $run AND t.task_id = $task AND t.is_answer
        LEFT JOIN agent_responses r ON r.run = $run AND r.task_id = $task
        """,
        {"run": run, "task": task_id},
    )
    if not found:
        return None
    h = found[0]
    h["verified_eval"] = parse_json(h["verified_eval"])
    original_eval = {"reference_answers": parse_json(h["reference_answers"]), "reference_url": h["reference_url"],
                     "program_html": parse_json(h.pop("original_program_html"))}  # fmt: skip
    original = (
        original_reference(ORIGINAL, original_eval, h["string_note"]) if h["original_eval_types"] else None
    )
    verified = verified_reference(h["verified_eval"])
    h["reference"] = verdict_reference(
        h["verdict_source"], verified, parse_json(h.pop("task_config")), original
    )
    if h["reference"] is not None and verified is not None and h["reference"].config != verified.config:
        h["verified_reference"] = verified
        h["references_differ"] = references_differ(h["reference"], verified)
    h["template"] = template_record(store, run, task_id)
    h["expected_answer"] = _expected_answer(h["verified_eval"])
    h["reference_answers"] = parse_json(h["reference_answers"])
    h["response_parsed"] = parse_json(h["response_parsed"])
    h["response_lint"] = parse_json(h["response_lint"]) or []
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
    from core.scoring.cannot_pass import CANNOT_PASS

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


def screenshot_image(path: str | None, max_width: int, folder: str | None = None) -> bytes | None:
    """The screenshot scaled down to at most `max_width` pixels (JPEG), for filmstrips and the step view: a
    1500-px PNG is ~1 MB and costs the page ~50 ms to re-encode on every view; this runs once per file
    (the app caches it by the file's identity) and, given a `folder` (core.files.thumbnails), once per
    file at all: the scaled copy is kept there for the next server start."""
    if not path:
        return None
    return thumbnails.kept_or_made(
        Path(folder) if folder else None, path, max_width, lambda: _scaled(path, max_width)
    )


def _scaled(path: str, max_width: int) -> bytes | None:
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


def screenshot_images(
    paths: tuple[str | None, ...], max_width: int, folder: str | None = None
) -> list[bytes | None]:
    """`screenshot_image` of several files at once, two at a time (Pillow decodes outside the GIL): a
    filmstrip's first view costs about half as long."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(lambda p: screenshot_image(p, max_width, folder), paths))


def evaluator_rows(store: Store, run: str, task_id: int) -> list[dict[str, Any]]:
    """Per evaluator: status, sentence, expected vs actual (raw and normalised), assertions, events."""
    rows = store.query_dicts(
        "SELECT * FROM evaluator_results WHERE run = ? AND task_id = ? ORDER BY idx", [run, task_id]
    )
    for r in rows:
        for key in ("assertions", "expected", "actual", "expected_normalized", "actual_normalized"):
            if key in r:
                r[key] = parse_json(r[key])
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
        f"SELECT run, verdict, verdict_source FROM ({verdicts_sql(one_run=False, one_task=True)}) ORDER BY run",
        {"task": task_id},
    )


def gold_sets_with_task(store: Store, task_id: int) -> list[str]:
    return [
        g
        for (g,) in store.query(
            "SELECT DISTINCT gold_set FROM gold_steps WHERE task_id = ? ORDER BY 1", [task_id]
        )
    ]
