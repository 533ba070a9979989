"""The demo database, built by `make demo` from real public data.

Two sources with the same layout (core.paths): `../shared/data` where it exists (the whole runs, the
AgentLab sample and the paper's human gold, which we may not redistribute), else the demo set shipped in
`data/demo` (slices of the Apache-2.0 runs and gold we wrote). Either way every page has data: the same
run names, a scored WebArena-Verified run with its network trace, failures explained, gold with metrics.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from core.errors import InputError
from core.ingest.tasks import import_tasks
from core.paths import REPO_ROOT, SHIPPED_DATA, DemoSource, demo_source, has_shared_data, shared_data_path
from core.progress import ProgressCallback
from core.search import index as search_index
from core.store import Store

DEMO_DB = REPO_ROOT / "data" / "demo.duckdb"
BABELCLOUD = ("webarena-render", "babelcloud__webarena", "gbox", "trajectories")
# The gold each source brings, and the set its metrics are computed against.
GOLD_SETS: dict[DemoSource, str] = {"shared": "paper-gold", "shipped": "demo-gold"}

# Each step takes the open store and the data root, and returns a summary line.
DemoStep = Callable[[Store, Path], str]


def _tasks(store: Store, root: Path) -> str:
    counts = import_tasks(store, original=True)
    return "tasks: " + ", ".join(f"{name} {n}" for name, n in counts.items())


def _agentlab_sample(store: Store, root: Path) -> str:
    # The real BrowserGym/AgentLab sample (13 episodes, every ending); model read from its step files.
    from core.ingest.agentlab import import_agentlab

    s = import_agentlab(store, root / "browsergym-run", "agentlab-sample", agent="GenericAgent")
    return f"agentlab-sample: {s.n_episodes} episodes, {s.n_steps} steps, {s.n_problems} problems"


def _wav_demo(store: Store, root: Path) -> str:
    # The official WebArena-Verified demo run (tasks 107, 108), scored with its demo environment config.
    from core.ingest.wav_run import import_wav_run

    wav = root / "webarena-verified"
    s = import_wav_run(store, wav / "demo-run", "wav-demo", config=wav / "config.demo.json", workers=1)
    return f"wav-demo: {s.n_tasks} tasks, {s.n_events} network events, {s.n_scored} scored"


# Network evaluators at work on real traces: task 157 ("View the details of all customers") on the official
# demo run's HAR, whose last page is the customer grid (its evaluator matches that navigation), and task 677
# ("the list of orders that are processing") on the second HAR the official repository's tests ship, a
# Magento admin session that ends on the order grid filtered through a background request (the engine
# reads the last navigation, the order grid page, and fails naming it). Both with the official demo run's
# NAVIGATE/SUCCESS answer. A third task, 374, is the demo's one constructed case (core.ingest.demo_server_error):
# the first HAR plus one entry from the official template, the theme page the task asks for answered 502.
NAVIGATION_TASKS = {157: ("demo-run", "107", "network.har"), 677: ("test-assets", "network.har")}
NAVIGATION_ORIGINS = ("http://192.168.1.35:7780/admin", "http://localhost:7780/admin")


def _wav_navigation(store: Store, root: Path) -> str:
    # Copied beside the database, so the run's source stays readable after the build.
    import shutil

    import orjson

    from core.ingest.demo_server_error import SERVER_ERROR_TASK, write_server_error_har
    from core.ingest.wav_run import import_wav_run

    wav = root / "webarena-verified"
    run_dir = store.path.parent / "demo-wav-navigation"
    shutil.rmtree(run_dir, ignore_errors=True)
    for task_id in (*NAVIGATION_TASKS, SERVER_ERROR_TASK):
        (run_dir / str(task_id)).mkdir(parents=True)
        shutil.copy(
            wav / "demo-run" / "107" / "agent_response.json", run_dir / str(task_id) / "agent_response.json"
        )
    for task_id, har in NAVIGATION_TASKS.items():
        shutil.copy(wav.joinpath(*har), run_dir / str(task_id) / "network.har")
    write_server_error_har(wav, run_dir / str(SERVER_ERROR_TASK) / "network.har")  # constructed at build time
    config = run_dir / "config.json"  # the HARs' origins of the shopping admin site
    config.write_bytes(
        orjson.dumps({"environments": {"__SHOPPING_ADMIN__": {"urls": list(NAVIGATION_ORIGINS)}}})
    )
    s = import_wav_run(store, run_dir, "wav-navigation", config=config, workers=1)
    return f"wav-navigation: {s.n_tasks} tasks, {s.n_events} network events, {s.n_scored} scored"


def _webarena_render_babelcloud(store: Store, root: Path) -> str:
    # The real babelcloud render run (whole, or the shipped slice), PASS/FAIL from its per-task logs; its
    # agent's session transcripts become one step per tool call.
    from core.ingest.webarena_render import import_webarena_render

    s = import_webarena_render(
        store, root.joinpath(*BABELCLOUD), "webarena-render-babelcloud", agent="GBOX", paradigm="step_by_step"
    )
    return (
        f"webarena-render-babelcloud: {s.n_tasks} tasks, {s.n_steps} steps (its agent's tool calls, "
        f"{s.n_observe} observe-only), {s.n_pass} PASS / {s.n_fail} FAIL"
    )


def _opagent(store: Store, root: Path) -> str:
    # OpAgent's multi-step run (Apache-2.0), its scores as the run's own verdicts; the import evaluates it
    # offline too, like every run without traces.
    from core.ingest.opagent import import_opagent

    s = import_opagent(store, root / "oagent-run", "opagent", paradigm="step_by_step")
    return f"opagent: {s.n_tasks} tasks, {s.n_steps} steps, {s.n_success} successes of {s.n_scored} scored"


def _runs_without_traces(store: Store) -> list[str]:
    return [
        name
        for (name,) in store.query("SELECT name FROM runs WHERE source_format <> 'wav-run' ORDER BY name")
    ]


def _offline_evaluation(store: Store, root: Path) -> str:
    # Runs without traces were evaluated offline at import: say how far they agree with their own verdicts.
    from core.scoring.offline.agreement import agreement

    parts = []
    for run in _runs_without_traces(store):
        a = agreement(store, run)
        parts.append(f"{run} {a.agree}/{a.all_decidable}")
    return "offline evaluators agree with the runs' own verdicts (all-decidable tasks): " + ", ".join(parts)


def _gold(name: str, path: Path) -> DemoStep:
    def step(store: Store, root: Path) -> str:
        from core.ingest.gold import import_gold

        s = import_gold(store, root / path, name)
        return f"{name}: {s.n_tasks} tasks, {s.n_alternatives} alternatives, {s.n_flagged} flagged rows"

    return step


def _demo_metrics(store: Store, root: Path) -> str:
    # Offline judge: the demo must build without any LLM endpoint; results are marked approximate.
    # Without the optional embedding stage, so the demo builds in seconds (`trajreview metrics` uses it).
    from core.measure.judge.cascade import make_judge
    from core.measure.metrics_run import run_metrics

    (gold,) = store.query("SELECT name FROM gold_sets")[0]
    lines = []
    for run in _runs_without_traces(store):
        judge = make_judge("offline", store, use_embeddings=False)
        summary = run_metrics(store, run, gold, judge)
        lines.append(f"{run} {summary.tasks_with_gold}/{summary.tasks} tasks with gold")
    return f"metrics (offline judge vs {gold}): " + "; ".join(lines)


def demo_steps(source: DemoSource) -> list[DemoStep]:
    if source == "shared":
        return [
            _tasks, _agentlab_sample, _wav_navigation, _wav_demo, _webarena_render_babelcloud, _opagent,
            _offline_evaluation,
            _gold(GOLD_SETS[source], Path("human-gold") / "Golden Human Trajectories.xlsx"), _demo_metrics,
        ]  # fmt: skip
    return [
        _tasks, _wav_navigation, _wav_demo, _webarena_render_babelcloud, _opagent, _offline_evaluation,
        _gold(GOLD_SETS[source], Path("gold") / "demo-gold.csv"), _demo_metrics,
    ]  # fmt: skip


def data_root(source: DemoSource) -> Path:
    if source == "shipped":
        return SHIPPED_DATA
    if not has_shared_data():
        raise InputError(shared_data_path(), "no shared data here; build from the shipped set instead")
    return shared_data_path()


def build_demo(
    path: Path = DEMO_DB,
    on_progress: ProgressCallback | None = None,
    source: DemoSource | None = None,
    *,
    finish: Sequence[DemoStep] = (),
) -> list[str]:
    """Build into a temporary file and move it into place, so a failed build leaves nothing behind.

    `source` defaults to core.paths.demo_source(): the shared data where it exists, else the shipped set.
    The first summary line says which was used. `finish`: steps of the layers above run last, in the same
    file (`trajreview demo` diagnoses every run: core.cli.demo)."""
    source = source or demo_source()
    root = data_root(source)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".building")
    tmp.unlink(missing_ok=True)
    steps = [*demo_steps(source), *finish]
    what = "the whole runs" if source == "shared" else "the demo set shipped in the repository"
    summary = [f"demo data: {root} ({what})"]
    try:
        with Store(tmp) as store:
            for done, step in enumerate(steps):
                if on_progress:
                    on_progress(done, len(steps))
                summary.append(step(store, root))
            if on_progress:
                on_progress(len(steps), len(steps))
        os.replace(tmp, path)
        search_index.move_index(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
        search_index.remove_index(tmp)
    return summary
