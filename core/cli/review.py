"""CLI commands of the review area: `show`, the terminal twin of the task review page."""

from __future__ import annotations

from typing import Annotated, Any

import orjson
import typer

from core.cli import ui
from core.errors import InputError, NotFound


def _fmt(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.2f}"
    if isinstance(value, (dict, list)):
        return orjson.dumps(value).decode()
    return str(value)


def _block(label: str, text: str | None, indent: str = "    ") -> None:
    """A labelled text kept whole: every line of it, indented under its label (errors keep their logs)."""
    if text is None or not str(text).strip():
        return
    lines = str(text).rstrip().splitlines()
    if len(lines) == 1:
        ui.say(f"{indent}{label}: {lines[0]}")
        return
    ui.say(f"{indent}{label}:")
    for line in lines:
        ui.say(f"{indent}  {line}")


def _reference(ref: dict[str, Any], indent: str = "  ") -> None:
    for key, label in (("answers", "answer"), ("url", "last page"), ("program_html", "page checks"),
                       ("network", "network events"), ("note", "note")):  # fmt: skip
        if ref.get(key):
            ui.say(f"{indent}{label}: {_fmt(ref[key])}")


def _header(report: dict[str, Any]) -> None:
    say = ui.say
    say(f"run {report['run']} · task {report['task_id']} · {report['site'] or 'unknown site'}")
    say(f"instruction the agent saw: {report['instruction']}")
    if report["instruction_differs"]:
        say(f"  WebArena-Verified intent (worded differently): {report['intent']}")
    say(f"verdict: {report['verdict']} (decided by {report['verdict_source'] or 'nothing recorded'})")
    for sentence in report["explanations"]:
        say(f"  why: {sentence}")
    if report["verdict"] in ("failure", "error") and not report["explanations"]:
        say("  why: no explanation recorded (the run carries a bare verdict)")
    if report["cannot_pass"]:
        say(f"  cannot pass: {report['cannot_pass_evidence']}")
    template = report["template"]
    if template:
        others = ", ".join(f"{t} {v}" for t, v in template["others"][:12])
        say(f"  {template['sentence']}" + (f" (others: {others})" if others else ""))
    ref, verified = report["reference"], report["verified_reference"]
    if ref:
        say(f"reference of this verdict, from {ref['label']}:")
        _reference(ref)
    else:
        say("reference of this verdict: none recorded")
    if verified and report["references_differ"] is False:
        say("  WebArena-Verified expects the same values")
    elif verified:
        say("WebArena-Verified reference" + (" (differs)" if report["references_differ"] else "") + ":")
        _reference(verified)
    say(f"agent answered: {_fmt(report['agent_answer'])}"
        + (f" (ended: {report['termination']})" if report["termination"] else "")
        + (f" — {report['termination_detail']}" if report["termination_detail"] else ""))  # fmt: skip
    say(f"final page: {report['final_url'] or '– (not recorded apart from the steps)'}")
    for finding in report["response_lint"]:
        say(f"  lint {finding.get('rule')}: {finding.get('message')}")


def _steps(report: dict[str, Any]) -> None:
    title = f"steps of attempt {report['episode']}" + (
        f" (1 of {report['attempts']})" if report["attempts"] > 1 else ""
    )
    ui.say(f"{title}: {len(report['steps'])}")
    for s in report["steps"]:
        ui.say(f"  step {s['idx']}: " + ("observe: " if s["kind"] == "observe" else "") + f"{s['readable']}")
        _block("on page", s["url"])
        _block("thought", s["thought"])
        _block("plan", s["plan"])
        if s["stated"] and s["stated"] not in (s["readable"] or ""):
            _block("stated", s["stated"])
        _block("outcome", s["outcome"])
        _block("page after", s["page_after"])
        _block("error", s["error"])
        _block("screenshot", s["screenshot"])


def _evidence(e: dict[str, Any]) -> str:
    where = f"step {e['step_idx']}" if "step_idx" in e else f"event {e['seq']}" if "seq" in e else e["kind"]
    status = f" (HTTP {e['status']})" if "status" in e else ""
    return f"{where}{status}: {e['text']}"


def _causes(report: dict[str, Any]) -> None:
    say = ui.say
    if not report["causes"]:
        if report["verdict"] in ("failure", "error") and not report["diagnosed"]:
            say(f"suggested cause: not diagnosed yet (`trajreview diagnose --run {report['run']}`)")
        return
    for c in report["causes"]:
        by = "suggested by a model" if c["source"] == "model" else f"rule {c['rule']}"
        say(
            ("suggested cause" if c["is_primary"] else "  also found")
            + f": {c['name']} ({by}): {c['summary']}"
        )
        _block("reasoning", c["reasoning"] if c["source"] == "model" else None)
        for e in c["evidence"]:
            say(f"    evidence {_evidence(e)}")
    d = report["cause_decision"]
    if d:
        say(f"  reviewer: {d['cause']} {d['decision']} by {d['author']} at {d['at']:%Y-%m-%d %H:%M} UTC")


def _print(report: dict[str, Any]) -> None:
    say = ui.say
    _header(report)
    _causes(report)
    if report["evaluators"]:
        ui.print_table("evaluators", ["#", "evaluator", "status", "sentence"],
                       [(e["idx"], e["evaluator"], e["status"], e["explanation"] or e["error"]) for e in report["evaluators"]])  # fmt: skip
    if report["steps"]:
        _steps(report)
    else:
        say("steps: none recorded for this task in this run")
    for m in report["metrics"]:
        values = ", ".join(f"{k.upper()} {_fmt(m[k])}" for k in ("ssr", "rr", "repr", "psr", "ear"))
        say(f"metrics vs {m['gold_set']} ({m['judge_config']}/{m['preset']}): {values}"
            + (" · approximate" if m["approximate"] else "")
            + (f" · {m['unresolved_pairs']} unresolved pairs" if m["unresolved_pairs"] else ""))  # fmt: skip
        for metric, reason in m["null_reasons"].items():
            say(f"  {metric.upper()} is NULL: {reason}")
    a = report["alignment"]
    if a and not a["computed"]:
        say(f"alignment vs {a['gold_set']} ({a['judge_config']}/{a['preset']}): {a['missing']}"
            " (`trajreview metrics` computes it)")  # fmt: skip
    elif a:
        say(f"alignment vs {a['gold_set']} v{a['gold_version']} alternative {a['alternative'] + 1}: "
            f"{a['matched']} of {a['n_gold']} gold steps matched by {a['n_agent']} agent steps")  # fmt: skip
        ui.print_table("alignment", ["gold", "agent step", "judge", "marks"],
                       [(r["gold"], r["executed"], f"{r['judge']} ({r['stage']})" if r["judge"] else None, ", ".join(r["marks"]))
                        for r in a["rows"]])  # fmt: skip
    elif not report["metrics"]:
        say("metrics: none computed (no gold for this task, or `trajreview metrics` not run)")
    if report["problems"]:
        ui.print_table(
            "import problems", ["kind", "message"], [(p["kind"], p["message"]) for p in report["problems"]]
        )


def register(app: typer.Typer, import_app: typer.Typer) -> None:
    @app.command()
    def show(
        ctx: typer.Context,
        run: Annotated[str, typer.Option("--run", help="Run name.")],
        task: Annotated[int, typer.Option("--task", help="Task id.")],
        fmt: Annotated[str, typer.Option("--format", help="table or json.")] = "table",
        gold: Annotated[
            str | None, typer.Option("--gold", help="Gold set for the alignment (default: the metrics').")
        ] = None,
    ) -> None:
        """One task of one run: verdict and why, expected vs agent answer, steps, alignment, metrics, problems."""
        from core.queries.runs import run_exists
        from core.queries.task_report import task_report
        from core.store import require_gold_set

        if fmt not in ("table", "json"):
            raise InputError("--format", f"{fmt!r} is not one of table, json")
        with ui.store_from(ctx, read_only=True) as store:
            if not run_exists(store, run):
                raise NotFound("run", run)
            if gold is not None:
                require_gold_set(store, gold)
            report = task_report(store, run, task, gold)
        if report is None:
            raise NotFound("task", task, where=f"in run {run!r}")
        if fmt == "json":
            ui.console.print(orjson.dumps(report, default=str, option=orjson.OPT_INDENT_2).decode(),
                             markup=False, highlight=False, soft_wrap=True)  # fmt: skip
        else:
            _print(report)
