"""CLI commands of the offline-evaluation area: `evaluate-offline`, and the offline summary an import prints."""

from __future__ import annotations

from typing import Annotated

import typer

from core.cli import ui


def print_offline(store, run: str) -> None:
    """Offline statuses, why evaluators stayed unresolved, and the agreement with the run's verdict."""
    from core.scoring.offline.agreement import agreement

    rows = store.query(
        "SELECT evaluator, status, count(*) FROM evaluator_results WHERE run = ? AND source LIKE 'offline%'"
        " GROUP BY ALL ORDER BY ALL",
        [run],
    )
    ui.print_table(f"{run}: offline evaluators", ["evaluator", "status", "rows"], rows)
    a = agreement(store, run)
    if not a.tasks:
        ui.console.print("no run verdicts to compare with")
        return
    rate = "n/a" if a.rate is None else f"{a.rate:.1%}"
    ui.console.print(
        f"agreement with the run's own verdict ({a.verdict_source}): {a.agree}/{a.all_decidable} = {rate}"
        f" over the {a.all_decidable} of {a.tasks} tasks whose evaluators are all decidable offline",
        markup=False,
    )
    if a.decided_rate is not None:
        ui.console.print(
            f"over every task with a decided offline status: {a.decided_agree}/{a.decided} = {a.decided_rate:.1%}",
            markup=False,
        )
    undecidable = ", ".join(f"{reason} {n}" for reason, n in a.undecidable_by_reason.items())
    if undecidable:
        ui.console.print(f"tasks not decidable offline, by reason: {undecidable}", markup=False)
    for label, tasks in (
        ("run passes, offline fails", a.run_pass_offline_fail),
        ("run fails, offline passes", a.run_fail_offline_pass),
    ):
        if tasks:
            ui.console.print(f"{label}: tasks {', '.join(map(str, tasks))}", markup=False)


def evaluate_offline_cmd(
    ctx: typer.Context,
    run: Annotated[str, typer.Option("--run", help="Run without network traces to evaluate offline.")],
    judge: Annotated[
        str,
        typer.Option(
            "--judge", help="offline (fuzzy_match stays unresolved) or llm (asks TRAJREVIEW_LLM_*)."
        ),
    ] = "offline",
) -> None:
    """Re-run WebArena's evaluators on what the run recorded; explain every failure in one sentence."""
    from core.errors import InputError
    from core.scoring.offline.fuzzy import FuzzyJudge
    from core.scoring.offline.run import evaluate_run_offline

    if judge not in ("offline", "llm"):
        raise InputError("--judge", "must be offline or llm")
    with ui.import_store(ctx) as store:
        fuzzy_judge = FuzzyJudge.from_env(store) if judge == "llm" else None
        if judge == "llm" and fuzzy_judge is None:
            raise InputError("--judge", "llm needs TRAJREVIEW_LLM_MODEL (and _BASE_URL, _API_KEY)")
        with ui.progress_bar(f"evaluating {run} offline") as progress:
            summary = evaluate_run_offline(store, run, fuzzy_judge=fuzzy_judge, on_progress=progress)
        statuses = ", ".join(f"{k} {v}" for k, v in sorted(summary.statuses.items()))
        ui.console.print(f"{run}: {summary.tasks} tasks; offline status: {statuses}", markup=False)
        if fuzzy_judge is not None:
            ui.console.print(fuzzy_judge.stage.stats.line(), markup=False)
        print_offline(store, run)
        ui.print_failures(store, run)


def register(app: typer.Typer, import_app: typer.Typer) -> None:
    """Add this area's commands to the main app."""
    app.command("evaluate-offline")(evaluate_offline_cmd)
