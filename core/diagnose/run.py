"""`diagnose_run`: the suggested causes of a run's failed tasks, written whole in one short transaction.

Facts are read in one short read, the rules run with the file free, the model (when configured) is asked
with the file free too (its answers are cached in short transactions of their own), and the run's rows in
`failure_causes` are replaced in one final transaction. The same `diagnosis_version` on the same stored
data gives the same rows (only `diagnosed_at` differs).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import orjson

from core.diagnose.facts import TaskFacts, load_facts
from core.diagnose.findings import Evidence
from core.diagnose.model import ask_model
from core.diagnose.rules import RULES_VERSION, find_causes, undecided_reason
from core.diagnose.taxonomy import UNDECIDED
from core.errors import NotFound
from core.measure.llm.client import LLMStats
from core.measure.llm.config import LLMConfig
from core.measure.llm.diagnosis import diagnosis_kind
from core.paths import PROMPTS_DIR
from core.progress import ProgressCallback
from core.store import ShortLivedStore, Store, insert_rows, rows_table, utcnow


def diagnosis_version(prompts_dir=PROMPTS_DIR) -> str:
    """The rules' version and the diagnosis prompt's declared version, e.g. rules-4+diagnosis-2."""
    return f"{RULES_VERSION}+diagnosis-{diagnosis_kind(prompts_dir).prompt.version}"


@dataclass(frozen=True)
class DiagnoseResult:
    run: str
    version: str
    n_tasks: int  # failed and errored tasks diagnosed
    by_primary: dict[str, int]  # primary cause (or undecided) -> tasks
    by_source: dict[str, int]  # rule | model | undecided -> tasks
    llm: LLMStats | None = None

    @property
    def rule_share(self) -> float | None:
        return self.by_source.get("rule", 0) / self.n_tasks if self.n_tasks else None


def _row(facts: TaskFacts, **values) -> dict:
    evidence = values.pop("evidence", ())
    return {
        "run": facts.run, "task_id": facts.task_id, "reasoning": None, "rule": None,
        "evidence": orjson.dumps([e.as_json() for e in evidence]).decode(), **values,
    }  # fmt: skip


def _rows_of(facts: TaskFacts, verdicts: dict) -> list[dict]:
    findings = find_causes(facts)
    rows = [
        _row(facts, cause=f.cause, is_primary=i == 0, source="rule", rule=f.rule, summary=f.summary,
             evidence=f.evidence)
        for i, f in enumerate(findings)
    ]  # fmt: skip
    if rows:
        return rows
    verdict = verdicts.get(facts.task_id)
    why = undecided_reason(facts)
    if verdict is None:
        return [
            _row(
                facts,
                cause=UNDECIDED,
                is_primary=True,
                source="rule",
                summary=f"No rule decided; no model configured ({why}).",
            )
        ]
    evidence = (Evidence("evaluator", facts.explanation),) if facts.explanation else ()
    if verdict.cause == UNDECIDED:
        summary = f"No rule decided ({why}); {verdict.reason}"
        return [
            _row(facts, cause=UNDECIDED, is_primary=True, source="model", summary=summary[:500],
                 reasoning=verdict.reasoning, evidence=evidence)
        ]  # fmt: skip
    return [
        _row(facts, cause=verdict.cause, is_primary=True, source="model",
             summary=f"Suggested by a model: {verdict.reasoning}"[:500], reasoning=verdict.reasoning, evidence=evidence)
    ]  # fmt: skip


def diagnose_run(
    store: Store | ShortLivedStore,
    run: str,
    *,
    llm: LLMConfig | None = None,
    prompts_dir=PROMPTS_DIR,
    on_progress: ProgressCallback | None = None,
) -> DiagnoseResult:
    """Diagnose every failed or errored task of `run`; `llm` asks the model what the rules leave open."""
    if not store.query("SELECT 1 FROM runs WHERE name = ?", [run]):
        raise NotFound("run", run)
    version = diagnosis_version(prompts_dir)
    facts = load_facts(store, run)
    open_tasks = [f for f in facts if not find_causes(f)]
    verdicts, stats = {}, None
    if llm is not None and open_tasks:
        verdicts, stats = ask_model(store, open_tasks, llm, prompts_dir=prompts_dir, on_progress=on_progress)
    now = utcnow()
    rows = [
        row | {"diagnosis_version": version, "diagnosed_at": now}
        for f in facts
        for row in _rows_of(f, verdicts)
    ]
    data = rows_table(rows)  # built before the transaction, which holds the file only for the writes
    with store.transaction() as cur:
        cur.execute("DELETE FROM failure_causes WHERE run = ?", [run])
        insert_rows(cur, "failure_causes", data)
    primaries = [r for r in rows if r["is_primary"]]
    if on_progress:
        on_progress(len(facts), len(facts))
    return DiagnoseResult(
        run=run, version=version, n_tasks=len(primaries),
        by_primary=dict(Counter(r["cause"] for r in primaries).most_common()),
        by_source=dict(Counter(UNDECIDED if r["cause"] == UNDECIDED else r["source"] for r in primaries)),
        llm=stats,
    )  # fmt: skip
