"""The demo database: illustrative data from ../shared/data, built once by `make demo`."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from core.ingest.tasks import import_tasks
from core.paths import REPO_ROOT
from core.progress import ProgressCallback
from core.store import Store

DEMO_DB = REPO_ROOT / "data" / "demo.duckdb"

# Each step takes the open store and returns a summary line. Later areas append their imports.
DemoStep = Callable[[Store], str]


def _tasks(store: Store) -> str:
    counts = import_tasks(store, original=True)
    return "tasks: " + ", ".join(f"{name} {n}" for name, n in counts.items())


def _agentlab_sample(store: Store) -> str:
    # The real BrowserGym/AgentLab sample (13 episodes, every ending); model read from its step files.
    from core.ingest.agentlab import import_agentlab
    from core.paths import shared_data_dir

    s = import_agentlab(store, shared_data_dir() / "browsergym-run", "agentlab-sample", agent="GenericAgent")
    return f"agentlab-sample: {s.n_episodes} episodes, {s.n_steps} steps, {s.n_problems} problems"


def _wav_demo(store: Store) -> str:
    # The official WebArena-Verified demo run (tasks 107, 108), scored with its demo environment config.
    from core.ingest.wav_run import import_wav_run
    from core.paths import shared_data_dir

    wav = shared_data_dir() / "webarena-verified"
    s = import_wav_run(store, wav / "demo-run", "wav-demo", config=wav / "config.demo.json", workers=1)
    return f"wav-demo: {s.n_tasks} tasks, {s.n_events} network events, {s.n_scored} scored"


# Network evaluators at work on real traces: task 157 ("View the details of all customers") on the official
# demo run's HAR, whose last page is the customer grid (its evaluator matches that navigation), and task 677
# ("the list of orders that are processing") on the second HAR the official repository's tests ship, a
# Magento admin session that ends on the order grid filtered through a background request (the engine
# reads the last navigation, the order grid page, and fails naming it). Both with the official demo run's
# NAVIGATE/SUCCESS answer.
NAVIGATION_TASKS = {157: ("demo-run", "107", "network.har"), 677: ("test-assets", "network.har")}
NAVIGATION_ORIGINS = ("http://192.168.1.35:7780/admin", "http://localhost:7780/admin")


def _wav_navigation(store: Store) -> str:
    # Copied beside the database, so the run's source stays readable after the build.
    import shutil

    import orjson

    from core.ingest.wav_run import import_wav_run
    from core.paths import shared_data_dir

    wav = shared_data_dir() / "webarena-verified"
    run_dir = store.path.parent / "demo-wav-navigation"
    shutil.rmtree(run_dir, ignore_errors=True)
    for task_id, har in NAVIGATION_TASKS.items():
        (run_dir / str(task_id)).mkdir(parents=True)
        shutil.copy(wav.joinpath(*har), run_dir / str(task_id) / "network.har")
        shutil.copy(
            wav / "demo-run" / "107" / "agent_response.json", run_dir / str(task_id) / "agent_response.json"
        )
    config = run_dir / "config.json"  # the HARs' origins of the shopping admin site
    config.write_bytes(
        orjson.dumps({"environments": {"__SHOPPING_ADMIN__": {"urls": list(NAVIGATION_ORIGINS)}}})
    )
    s = import_wav_run(store, run_dir, "wav-navigation", config=config, workers=1)
    return f"wav-navigation: {s.n_tasks} tasks, {s.n_events} network events, {s.n_scored} scored"


def _webarena_render_babelcloud(store: Store) -> str:
    # The whole real 812-task babelcloud run, PASS/FAIL from its per-task logs.
    from core.ingest.webarena_render import import_webarena_render
    from core.paths import shared_data_dir

    folder = shared_data_dir() / "webarena-render" / "babelcloud__webarena" / "gbox" / "trajectories"
    s = import_webarena_render(
        store, folder, "webarena-render-babelcloud", agent="GBOX", paradigm="step_by_step"
    )
    return f"webarena-render-babelcloud: {s.n_tasks} tasks, {s.n_pass} PASS / {s.n_fail} FAIL"


def _paper_gold(store: Store) -> str:
    # The paper's human gold trajectories.
    from core.ingest.gold import import_gold
    from core.paths import shared_data_dir

    s = import_gold(store, shared_data_dir() / "human-gold" / "Golden Human Trajectories.xlsx", "paper-gold")
    return f"paper-gold: {s.n_tasks} tasks, {s.n_alternatives} alternatives, {s.n_flagged} flagged rows"


def _opagent(store: Store) -> str:
    # OpAgent's whole 809-task multi-step run (Apache-2.0), its scores as the run's own verdicts; the
    # import evaluates it offline too, like every run without traces.
    from core.ingest.opagent import import_opagent
    from core.paths import shared_data_dir

    s = import_opagent(store, shared_data_dir() / "oagent-run", "opagent", paradigm="step_by_step")
    return f"opagent: {s.n_tasks} tasks, {s.n_steps} steps, {s.n_success} successes of {s.n_scored} scored"


def _offline_evaluation(store: Store) -> str:
    # Runs without traces were evaluated offline at import: say how far they agree with their own verdicts.
    from core.scoring.offline.agreement import agreement

    parts = []
    for run in ("agentlab-sample", "webarena-render-babelcloud", "opagent"):
        a = agreement(store, run)
        parts.append(f"{run} {a.agree}/{a.all_decidable}")
    return "offline evaluators agree with the runs' own verdicts (all-decidable tasks): " + ", ".join(parts)


def _demo_metrics(store: Store) -> str:
    # Offline judge: the demo must build without any LLM endpoint; results are marked approximate.
    # Without the optional embedding stage, so the demo builds in seconds (`trajreview metrics` uses it).
    from core.measure.judge.cascade import make_judge
    from core.measure.metrics_run import run_metrics

    lines = []
    for run in ("agentlab-sample", "webarena-render-babelcloud", "opagent"):
        judge = make_judge("offline", store, use_embeddings=False)
        summary = run_metrics(store, run, "paper-gold", judge)
        lines.append(f"{run} {summary.tasks_with_gold}/{summary.tasks} tasks with gold")
    return "metrics (offline judge vs paper-gold): " + "; ".join(lines)


def demo_steps() -> list[DemoStep]:
    return [
        _tasks, _agentlab_sample, _wav_navigation, _wav_demo, _webarena_render_babelcloud, _opagent,
        _offline_evaluation,
        _paper_gold, _demo_metrics,
    ]  # fmt: skip


def build_demo(path: Path = DEMO_DB, on_progress: ProgressCallback | None = None) -> list[str]:
    """Build into a temporary file and move it into place, so a failed build leaves nothing behind."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".building")
    tmp.unlink(missing_ok=True)
    steps = demo_steps()
    summary = []
    try:
        with Store(tmp) as store:
            for done, step in enumerate(steps):
                if on_progress:
                    on_progress(done, len(steps))
                summary.append(step(store))
            if on_progress:
                on_progress(len(steps), len(steps))
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return summary
