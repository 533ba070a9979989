"""CLI commands of the metrics area: `metrics`, `import requirements`, `report`, `judge-agreement`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from core.cli import ui
from core.values import is_missing

_FORMATS = ("table", "csv", "json")


def metrics_cmd(
    ctx: typer.Context,
    run: Annotated[str, typer.Option("--run", help="Run to measure.")],
    gold: Annotated[str, typer.Option("--gold", help="Gold set to compare with.")],
    judge: Annotated[
        str,
        typer.Option("--judge", help="offline (no LLM; approximate in the ambiguous band), cascade, llm."),
    ] = "offline",
    preset: Annotated[str, typer.Option("--preset", help="default or paper-code.")] = "default",
    batch: Annotated[
        Path | None,
        typer.Option("--llm-batch-dir", help="Send LLM questions through the Batch API (JSONL here)."),
    ] = None,
) -> None:
    """Compute SSR, RR, RepR, PSR and EAR per task and store them (tables metrics, alignments)."""
    from core.errors import InputError
    from core.measure.judge.cascade import JUDGE_CONFIGS, make_judge
    from core.measure.metrics import PRESETS
    from core.measure.metrics_run import NULL_REASONS, run_metrics

    if judge not in JUDGE_CONFIGS:
        raise InputError("--judge", f"must be one of {', '.join(JUDGE_CONFIGS)}")
    if preset not in PRESETS:
        raise InputError("--preset", f"must be one of {', '.join(PRESETS)}")
    with ui.import_store(ctx) as store:
        the_judge = make_judge(judge, store, batch_dir=batch)
        with ui.progress_bar("judging pairs") as progress:
            summary = run_metrics(store, run, gold, the_judge, preset=preset, on_progress=progress)
    ui.console.print(
        f"run {run} vs gold {gold} ({judge}, {preset}): {summary.tasks} tasks, {summary.tasks_with_gold} with gold;"
        f" {summary.pairs} distinct pairs judged"
    )
    stages = ", ".join(f"{stage} {n}" for stage, n in sorted(summary.stages.items())) or "none"
    ui.console.print(
        f"decided by stage: {stages}; LLM calls {summary.llm_calls}, cache hits {summary.cache_hits}"
    )
    if summary.llm is not None:
        ui.console.print(summary.llm.line(), markup=False)
    if summary.approximate_tasks:
        ui.console.print(
            f"{summary.approximate_tasks} tasks approximate (ambiguous pairs settled without an LLM)"
        )
    if summary.unresolved_tasks:
        ui.console.print(
            f"{summary.unresolved_tasks} tasks with unresolved pairs: their metrics are NULL and flagged"
        )
    rows = [
        (metric, reason, n, NULL_REASONS[reason])
        for (metric, reason), n in sorted(summary.null_reasons.items())
    ]
    if rows:
        ui.print_table("NULL metrics and why", ["metric", "reason", "tasks", "meaning"], rows)


def import_requirements_cmd(
    ctx: typer.Context,
    path: Annotated[Path, typer.Argument(help="CSV (task_id,requirement) or JSON ({task_id: [..]}).")],
) -> None:
    """Override the partial-success requirements of the tasks in FILE."""
    from core.measure.requirements import import_requirements

    with ui.import_store(ctx) as store:
        counts = import_requirements(store, path)
    ui.console.print(
        f"{counts['requirements']} requirements for {counts['tasks']} tasks imported from {path}"
    )


def _emit(title: str, df, fmt: str) -> None:
    if fmt == "csv":
        ui.console.print(f"# {title}")
        ui.console.print(df.to_csv(index=False), end="", markup=False, highlight=False)
    elif fmt == "json":
        ui.console.print(
            json.dumps({"table": title, "rows": json.loads(df.to_json(orient="records"))}), markup=False
        )
    else:
        rows = [tuple(_cell(v) for v in r) for r in df.itertuples(index=False)]
        ui.print_table(title, list(df.columns), rows)


def _cell(value):
    if is_missing(value):
        return ""
    return f"{value:.3f}" if isinstance(value, float) else value


def _emit_defect_rates(table, runs: list[str], fmt: str) -> None:
    """Each run's official success rate and, beside it, the rate with its confirmed evaluator defects
    counted as passes (core.queries.defect_rate); one line, or nothing in csv/json, when none is confirmed."""
    from core.queries.defect_rate import WITH_DEFECTS

    table = table[table["run"].isin(runs) & (table["defects_moved"] > 0)]
    if table.empty:
        if fmt == "table":
            ui.console.print("no confirmed evaluator defects in these runs", markup=False)
        return
    shown = table.assign(
        official=[f"{s}/{n}" for s, n in zip(table["successes"], table["scored"], strict=True)]
    )[["run", "official", "success_rate", "with_defects_rate", "defects_moved", "with_defects"]]
    _emit(f"Success rate {WITH_DEFECTS} (beside the official rate, over the same scored tasks)", shown, fmt)


def report_cmd(
    ctx: typer.Context,
    runs: Annotated[
        list[str] | None,
        typer.Option("--run", help="Runs to report (repeat; deltas are against the first). Default: all."),
    ] = None,
    gold: Annotated[str | None, typer.Option("--gold", help="Gold set of the metrics tables.")] = None,
    judge: Annotated[str | None, typer.Option("--judge", help="Judge config of the metrics tables.")] = None,
    preset: Annotated[str, typer.Option("--preset")] = "default",
    fmt: Annotated[str, typer.Option("--format", help="table, csv or json.")] = "table",
    html_out: Annotated[
        Path | None,
        typer.Option(
            "--html", help="Write one self-contained HTML report (charts, tables, CIs) here instead."
        ),
    ] = None,
) -> None:
    """The paper's tables: success per domain (3), metric means (4), steps (6), answer categories (7)."""
    from core.errors import InputError
    from core.measure.judge.cascade import JUDGE_CONFIGS
    from core.measure.metrics import PRESETS
    from core.queries import paper_tables as pt
    from core.queries.compare import report_runs
    from core.queries.runs import runs_table
    from core.store import require_gold_set, require_runs

    if fmt not in _FORMATS:
        raise InputError("--format", f"must be one of {', '.join(_FORMATS)}")
    if judge is not None and judge not in JUDGE_CONFIGS:
        raise InputError("--judge", f"must be one of {', '.join(JUDGE_CONFIGS)}")
    if preset not in PRESETS:
        raise InputError("--preset", f"must be one of {', '.join(PRESETS)}")
    if html_out is not None and not html_out.parent.is_dir():
        raise InputError(str(html_out), "its directory does not exist")
    with ui.store_from(ctx, read_only=True) as store:
        runs = list(runs or report_runs(store))
        if not runs:
            raise InputError("--run", "the database has no run")
        require_runs(store, runs)
        if gold is not None:
            require_gold_set(store, gold)
        if html_out is not None:
            # Imported only here: the HTML writer uses plotly, which core never loads.
            from dashboard.report import write

            size = write(store, runs, html_out)
            ui.console.print(f"wrote {html_out} ({size / 1e6:.1f} MB, {len(runs)} runs)", markup=False)
            return
        default_gold, default_judge = pt.default_metrics_selection(store, runs)
        gold, judge = gold or default_gold, judge or default_judge
        _emit(
            "Table 3: success per domain (95% bootstrap CI; delta vs the first run)",
            pt.success_by_domain(store, runs),
            fmt,
        )
        _emit_defect_rates(runs_table(store), runs, fmt)
        if gold is None:
            ui.console.print("no metrics computed for these runs yet: run `trajreview metrics` first")
            return
        options = {"gold_set": gold, "judge_config": judge, "preset": preset}
        _emit(
            f"Table 4: metrics, mean ± SD (gold {gold}, judge {judge}, {preset})",
            pt.metric_means(store, runs, **options),
            fmt,
        )
        _emit("Table 6: steps per human (gold) and per agent", pt.steps_per_task(store, runs, **options), fmt)
        _emit(
            "Table 7: answer categories (tasks with >= 2 requirements)",
            pt.answer_categories(store, runs, **options),
            fmt,
        )


def judge_agreement_cmd(
    ctx: typer.Context,
    labels: Annotated[
        Path | None, typer.Argument(help="CSV with columns kind, a, b, label (context optional).")
    ] = None,
    judge: Annotated[str, typer.Option("--judge", help="offline, cascade or llm.")] = "offline",
    from_db: Annotated[
        bool,
        typer.Option(
            "--from-db", help="Measure against the reviewers' marks on judged pairs in the database."
        ),
    ] = False,
    judge_config: Annotated[
        str | None, typer.Option("--judge-config", help="With --from-db: only marks on this judge config.")
    ] = None,
    run: Annotated[str | None, typer.Option("--run", help="With --from-db: only marks on this run.")] = None,
) -> None:
    """Accuracy and Cohen's kappa (bootstrap CI) of a judge against labelled pairs, per stage."""
    from core.errors import InputError
    from core.measure.judge.cascade import make_judge
    from core.measure.judge_agreement import measure, read_labels

    fmt = lambda v: "n/a" if v is None else f"{v:.3f}"  # noqa: E731
    if from_db:
        if labels is not None:
            raise InputError(labels, "give either a labels CSV or --from-db, not both")
        _agreement_from_db(ctx, judge_config, run, fmt)
        return
    if labels is None:
        raise InputError("judge-agreement", "give a labels CSV, or --from-db for the reviewers' marks")
    labelled = read_labels(labels)
    with ui.import_store(ctx) as store:  # the judge's cache reads and writes are short opens
        the_judge = make_judge(judge, store)
        result = measure(the_judge, labelled)
    ui.console.print(
        f"{result.n} labelled pairs, {result.unresolved} unresolved; accuracy {fmt(result.accuracy)};"
        f" Cohen's kappa {fmt(result.kappa)} ({_kappa_ci(result.kappa_ci, result.n, fmt)})"
    )
    for title, group in (("per stage", result.per_stage), ("per kind", result.per_kind)):
        rows = [(name, s["pairs"], s["errors"], fmt(s["error_rate"])) for name, s in group.items()]
        ui.print_table(title, ["", "pairs", "errors", "error rate"], rows)


def _kappa_ci(ci: tuple[float | None, float | None], n: int, fmt) -> str:
    """κ's interval and n; below MIN_N_BOOTSTRAP pairs none: 'too few to tell' (docs/dashboard.md)."""
    from core.measure.stats import MIN_N_BOOTSTRAP, TOO_FEW

    if ci[0] is None:
        return f"{TOO_FEW if n < MIN_N_BOOTSTRAP else 'no interval'}, n={n}"
    return f"95% CI {fmt(ci[0])}..{fmt(ci[1])}, n={n}"


def _agreement_from_db(ctx: typer.Context, judge_config: str | None, run: str | None, fmt) -> None:
    from core.errors import InputError
    from core.measure.judge.cascade import JUDGE_CONFIGS
    from core.queries.annotations import judge_agreement
    from core.store import require_runs

    if judge_config is not None and judge_config not in JUDGE_CONFIGS:
        raise InputError("--judge-config", f"must be one of {', '.join(JUDGE_CONFIGS)}")
    with ui.store_from(ctx, read_only=True) as store:
        if run:
            require_runs(store, [run])
        result = judge_agreement(store, judge_config, run)
    o = result.overall
    scope = " ".join(f"{k} {v}" for k, v in (("judge config", judge_config), ("run", run)) if v)
    if o.n + o.unresolved == 0:
        ui.say("no reviewer marks on judged pairs" + (f" for {scope}" if scope else "")
               + " yet: mark pairs on the Alignment tab of the task page")  # fmt: skip
        return

    def kappa_ci(s) -> str:
        return _kappa_ci(s.kappa_ci, s.n, fmt)

    ui.say(
        f"{o.n + o.unresolved} marked pairs{' (' + scope + ')' if scope else ''}, {o.unresolved} the judge could"
        f" not answer (excluded); accuracy {fmt(o.accuracy)} (95% CI {fmt(o.accuracy_ci[0])}..{fmt(o.accuracy_ci[1])},"
        f" n={o.n}); Cohen's kappa {fmt(o.kappa)} ({kappa_ci(o)})"
    )
    rows = [
        (s.stage, s.n, s.unresolved, s.agree, fmt(s.accuracy), f"{fmt(s.accuracy_ci[0])}..{fmt(s.accuracy_ci[1])}",
         fmt(s.kappa), kappa_ci(s), s.judge_said_same, s.reviewer_said_same)
        for s in [*result.per_stage, o]
    ]  # fmt: skip
    ui.print_table(
        "per judge stage (n = marked pairs the judge answered)",
        ["stage", "n", "unresolved", "agree", "accuracy", "95% CI", "kappa", "95% CI", "judge: same",
         "reviewer: same"],
        rows,
    )  # fmt: skip


def register(app: typer.Typer, import_app: typer.Typer) -> None:
    """Add this area's commands to the main app and to the `import` group."""
    app.command("metrics")(metrics_cmd)
    app.command("report")(report_cmd)
    app.command("judge-agreement")(judge_agreement_cmd)
    ui.import_command(import_app, "requirements")(import_requirements_cmd)
