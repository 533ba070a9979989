"""CLI command of the diagnosis area: `diagnose` (suggested failure causes of a run, and their agreement
with reviewer labels)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from core.cli import ui

_FORMATS = ("table", "json")


def _figure(value: float | None, ci: tuple[float | None, float | None] = (None, None)) -> str:
    if value is None:
        return "n/a"
    low, high = ci
    return f"{value:.2f}" + (f" [{low:.2f}, {high:.2f}]" if low is not None and high is not None else "")


def _print_agreement(result, what: str, fmt: str) -> None:
    from dataclasses import asdict

    from core.measure.stats import MIN_N_BOOTSTRAP, TOO_FEW

    if fmt == "json":
        ui.console.print_json(json.dumps({"labels": what, **asdict(result)}))
        return
    kappa_ci = _figure(result.kappa, result.kappa_ci)
    if result.kappa is not None and result.n < MIN_N_BOOTSTRAP:
        kappa_ci += f" ({TOO_FEW})"
    ui.console.print(
        f"agreement with {what}: n={result.n} tasks with a specific cause ({result.n_undecided} undecided and"
        f" {result.n_fallback} 'no specific cause found' suggestions counted apart); accuracy"
        f" {_figure(result.accuracy)}; Cohen's kappa {kappa_ci}",
        markup=False,
    )
    if result.n_fallback:
        ui.console.print(
            f"no specific cause found (the answer differs from the reference): {result.n_fallback} tasks, labelled"
            f" answered wrong on {result.n_fallback_right}; counting it as answered wrong, n={result.n + result.n_fallback}:"
            f" accuracy {_figure(result.accuracy_all)}; Cohen's kappa {_figure(result.kappa_all, result.kappa_all_ci)}",
            markup=False,
        )
    rows = [
        (s.cause, s.n_suggested, s.n_labelled, s.n_agreed, _figure(s.precision, s.precision_ci),
         _figure(s.recall, s.recall_ci))
        for s in result.per_cause
    ]  # fmt: skip
    ui.print_table(
        "per cause",
        ["cause", "suggested", "labelled", "agreed", "precision [95% CI]", "recall [95% CI]"],
        rows,
    )


def diagnose_cmd(
    ctx: typer.Context,
    run: Annotated[str | None, typer.Option("--run", help="Run whose failed tasks to diagnose.")] = None,
    llm: Annotated[
        bool,
        typer.Option("--llm/--no-llm", help="Ask the model (TRAJREVIEW_LLM_*) what the rules leave open."),
    ] = True,
    agreement: Annotated[
        bool, typer.Option("--agreement", help="Compare the stored suggestions with reviewer labels.")
    ] = False,
    labels: Annotated[
        list[Path] | None,
        typer.Option("--labels", help="Labels CSV (run,task_id,primary_cause[,split]); repeatable."),
    ] = None,
    split: Annotated[
        str | None, typer.Option("--split", help="Only the labels of this split: tune, holdout.")
    ] = None,
    fmt: Annotated[
        str, typer.Option("--format", help="table or json (--defects: table, csv or md).")
    ] = "table",
    defects: Annotated[
        bool, typer.Option("--defects", help="List the run's suspected evaluator defects (stored causes).")
    ] = False,
) -> None:
    """Suggest the cause of every failed task of a run (rules first, a model for the rest), or report how
    far the suggestions agree with reviewer labels (--agreement), or list a run's suspected evaluator
    defects for the benchmark's maintainers (--defects)."""
    from core.errors import InputError

    if defects:
        from core.cli.defects import print_defects

        given = [("--agreement", agreement), ("--labels", labels), ("--split", split)]
        print_defects(ctx, run, fmt, other_options=[name for name, value in given if value])
        return
    if fmt not in _FORMATS:
        raise InputError("--format", f"must be one of {', '.join(_FORMATS)}")
    if not agreement and run is None:
        raise InputError("--run", "name the run to diagnose (or use --agreement)")
    with ui.import_store(ctx) as store:
        if not agreement:
            _diagnose(store, run, llm, fmt)
            return
        from core.diagnose.agreement import agreement_from_labels, agreement_from_store

        if split is not None and not labels:
            raise InputError("--split", "applies to a labels file (--labels)")
        if labels:
            result = agreement_from_labels(store, labels, split, runs_only=[run] if run else None)
            what = ", ".join(p.name for p in labels) + (f" ({split} split)" if split else "")
            what += f", run {run}" if run else ""
        else:
            result = agreement_from_store(store, [run] if run else None)
            what = "the reviewers' task labels" + (f" of {run}" if run else "")
        _print_agreement(result, what, fmt)


def _diagnose(store, run: str, use_llm: bool, fmt: str) -> None:
    from core.diagnose.run import diagnose_run
    from core.diagnose.taxonomy import CAUSE_NAME
    from core.measure.llm.config import LLMConfig

    config = LLMConfig.from_env() if use_llm else None
    with ui.progress_bar(f"diagnosing {run}") as progress:
        result = diagnose_run(store, run, llm=config, on_progress=progress)
    if fmt == "json":
        ui.console.print_json(
            json.dumps({
                "run": result.run, "version": result.version, "tasks": result.n_tasks,
                "by_primary": result.by_primary, "by_source": result.by_source,
            })
        )  # fmt: skip
        return
    share = result.rule_share
    ui.console.print(
        f"{run}: {result.n_tasks} failed tasks diagnosed ({result.version}); decided by rules "
        f"{result.by_source.get('rule', 0)} ({'n/a' if share is None else f'{share:.0%}'}), by a model "
        f"{result.by_source.get('model', 0)}, undecided {result.by_source.get('undecided', 0)}",
        markup=False,
    )
    if result.llm is not None:
        ui.console.print(result.llm.line(), markup=False)
    elif use_llm and result.by_source.get("undecided"):
        ui.console.print("no model configured (TRAJREVIEW_LLM_MODEL): undecided tasks stay undecided")
    rows = [(cause, CAUSE_NAME.get(cause, cause), n) for cause, n in result.by_primary.items()]
    ui.print_table("primary cause", ["cause", "name", "tasks"], rows)


def register(app: typer.Typer, import_app: typer.Typer) -> None:
    """Add this area's commands to the main app."""
    app.command("diagnose")(diagnose_cmd)
