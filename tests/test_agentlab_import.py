"""Importing ../shared/data/browsergym-run: every ending of its README, steps, observations, bad input."""

from __future__ import annotations

import gzip
import os
import pickle
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from build_cache import built_db
from cli_support import run_cli

from core.errors import InputError
from core.files import safe_pickle
from core.ingest.agentlab import import_agentlab, read_episode
from core.store import Store

RUN = "sample"
SAMPLE = "browsergym-run"

# Expected endings, from the README's sample table (browsergym-run/README.md, "Sample in this folder"):
# (episode directory suffix) -> (termination, reward as in its cum_reward column, steps in its n_steps column).
EXPECTED = {
    # "short success; step 0 has a parse retry" -> answered by send_msg_to_user, cum_reward 1.0, n_steps 2
    "webarena.188": ("answered", 1.0, 2),
    # "success ... answer send_msg_to_user('N/A')" -> the N/A answer, cum_reward 1.0, n_steps 7
    "webarena.22": ("na_answer", 1.0, 7),
    # "one-step success with a two-line action" (terminated true, no message) -> complete, cum_reward 1.0
    "_webarena.118_1": ("answered", 1.0, 1),
    # "failure: wrong answer sent with send_msg_to_user" -> answered, cum_reward 0.0, n_steps 5
    "webarena.191": ("answered", 0.0, 5),
    # "truncated at the step limit" (false/true) -> truncated, n_steps 10
    "webarena.143": ("truncated", 0.0, 10),
    # "error set and truncated=true": "Could not parse a valid value after 6 retries." -> the agent stopped
    "_webarena.162_2": ("early_stop", 0.0, 10),
    # "crash after one action; last step has obs: None" (Playwright Error: Page.content) -> error
    "_webarena.118": ("error", 0.0, 1),
    # "interrupted run" (KeyboardInterrupt) -> interrupted, n_steps 4
    "webarena.21_7": ("interrupted", 0.0, 4),
    # "no summary_info.json; step_1.pkl.gz is a truncated gzip" -> interrupted, step 0 kept, no reward
    "webarena.26_6": ("interrupted", None, 1),
    # "zero-step error, gitlab" / "zero-step error, shopping_admin" (TimeoutError at login in reset)
    "webarena.168": ("error", 0.0, 0),
    "webarena.183": ("error", 0.0, 0),
    # "zero-step configuration error" (AssertionError: env var WA_SHOPPING missing)
    "_webarena.158_3": ("error", 0.0, 0),
    # "zero-step error with no step file at all" (ModuleNotFoundError)
    "_webarena.21": ("error", 0.0, 0),
}


def _episode(name: str) -> str:
    (match,) = [e for e in EXPECTED if name == e or name.endswith("_" + e)]
    return match


@pytest.fixture(scope="session")
def sample_dir(shared_data) -> Path:
    return shared_data / SAMPLE


@pytest.fixture(scope="session")
def imported_db(tasks_db, sample_dir, tmp_path_factory) -> Path:
    """The tasks database with the sample imported once as run `sample`."""

    def build(path: Path) -> None:
        shutil.copy(tasks_db, path)
        with Store(path) as s:
            import_agentlab(s, sample_dir, RUN)

    return built_db(tmp_path_factory, "agentlab", build, (sample_dir,))


@pytest.fixture
def db(imported_db) -> Store:
    with Store(imported_db, read_only=True) as s:
        yield s


def _trajectories(store: Store, run: str = RUN) -> dict[str, dict]:
    rows = store.query_dicts("SELECT * FROM trajectories WHERE run = ?", [run])
    return {_episode(r["episode"]): r for r in rows}


def test_every_sample_episode_imports_with_its_readme_ending(db, sample_dir):
    got = _trajectories(db)
    assert len(list(p for p in sample_dir.iterdir() if p.is_dir())) == len(EXPECTED) == len(got)
    for name, (termination, reward, n_steps) in EXPECTED.items():
        t = got[name]
        assert (t["termination"], t["reward"], t["n_steps"]) == (termination, reward, n_steps), name
    run = db.query_dicts("SELECT * FROM runs WHERE name = ?", [RUN])[0]
    assert run["source_format"] == "agentlab" and run["paradigm"] == "step_by_step"
    # README "Agent, model": agent_info.chat_model_args.model_name; agent GenericAgentArgs.
    assert run["model"] == "openai/google/gemini-2.5-pro" and run["agent"] == "GenericAgent"


def test_details_are_one_line_exception_messages_without_paths(db):
    got = _trajectories(db)
    # README: "the agent-side parse failure, whose err_msg is only `Could not parse a valid value after 6 retries.`"
    assert got["_webarena.162_2"]["termination_detail"] == "Could not parse a valid value after 6 retries."
    assert got["webarena.168"]["termination_detail"].startswith("TimeoutError: Locator.fill")
    assert got["_webarena.21"]["termination_detail"].startswith("ModuleNotFoundError:")
    assert got["webarena.21_7"]["termination_detail"].startswith("KeyboardInterrupt")
    for t in got.values():
        detail = t["termination_detail"] or ""
        assert "\n" not in detail and "Traceback" not in detail and 'File "' not in detail
    text = " ".join(str(v) for v in db.query("SELECT * FROM trajectories")[0]) + " ".join(
        r[0] or "" for r in db.query("SELECT error FROM steps")
    )
    assert "Traceback" not in text


def test_success_follows_reward_only_for_finished_episodes(db):
    for name, t in _trajectories(db).items():
        if t["termination"] in ("error", "interrupted"):
            assert t["success"] is None, name
        else:
            assert t["success"] == (t["reward"] >= 1.0), name


def test_final_answer_is_the_previous_steps_message(db, sample_dir):
    got = _trajectories(db)
    for name in ("webarena.188", "webarena.191", "webarena.22"):
        t = got[name]
        n = t["n_steps"]
        # The last step file is the terminal state; the answer is the action of the step before it.
        terminal = safe_pickle.load_path(sample_dir / name / f"step_{n}.pkl.gz").fields
        assert terminal["action"] is None
        before = safe_pickle.load_path(sample_dir / name / f"step_{n - 1}.pkl.gz").fields["action"]
        (quoted,) = re.fullmatch(r"send_msg_to_user\((.*)\)", before).groups()
        assert t["final_answer"] == quoted.strip("'\"")
    assert got["webarena.22"]["final_answer"] == "N/A"


def test_interrupted_episode_keeps_its_readable_steps_and_records_the_bad_file(db):
    t = _trajectories(db)["webarena.26_6"]
    steps = db.query_dicts(
        "SELECT * FROM steps WHERE run = ? AND episode = ? ORDER BY idx", [RUN, t["episode"]]
    )
    assert [s["idx"] for s in steps] == [0] and steps[0]["readable"]
    problems = db.query_dicts("SELECT * FROM import_problems WHERE run = ?", [RUN])
    assert [(p["task_id"], p["kind"], Path(p["source_path"]).name) for p in problems] == [
        (26, "bad_step_file", "step_1.pkl.gz")
    ]
    assert "truncated" in problems[0]["message"]


def test_steps_match_their_step_files(db, sample_dir):
    """Per step: the raw action, its url, and the error from the NEXT step's observation."""
    got = _trajectories(db)
    checked = 0
    for name, t in got.items():
        steps = db.query_dicts(
            "SELECT * FROM steps WHERE run = ? AND episode = ? ORDER BY idx", [RUN, t["episode"]]
        )
        assert len(steps) == t["n_steps"]
        for s in steps:
            raw = safe_pickle.load_path(Path(t["source_path"]) / f"step_{s['idx']}.pkl.gz").fields
            assert s["executed_action"] == raw["action"]
            assert s["url"] == raw["obs"]["url"]
            try:
                nxt = safe_pickle.load_path(Path(t["source_path"]) / f"step_{s['idx'] + 1}.pkl.gz").fields
            except safe_pickle.SafePickleError:
                nxt = None
            expected = (nxt["obs"]["last_action_error"].strip() or None) if nxt and nxt["obs"] else None
            assert s["error"] == expected, (name, s["idx"])
            checked += 1
    assert checked == sum(t["n_steps"] for t in got.values())
    # README: webarena.143 has "many last_action_errors".
    n_errors = db.query("SELECT count(error) FROM steps WHERE run = ? AND episode = 'webarena.143'", [RUN])[
        0
    ][0]
    assert n_errors >= 2


def test_every_step_has_a_readable_sentence_with_labels_from_its_axtree(db):
    rows = db.query_dicts(
        "SELECT s.*, o.content AS axtree FROM steps s LEFT JOIN observations o ON o.run = s.run"
        " AND o.task_id = s.task_id AND o.episode = s.episode AND o.idx = s.idx AND o.kind = 'axtree'"
        " WHERE s.run = ?",
        [RUN],
    )
    resolved = 0
    for s in rows:
        assert s["readable"] and not s["readable"].startswith("Unparsed"), s["executed_action"]
        assert s["verb"] and s["verb"] != "unknown"
        if not s["element_id"]:
            continue
        lines = [
            ln.strip() for ln in s["axtree"].splitlines() if ln.strip().startswith(f"[{s['element_id']}] ")
        ]
        if not lines:
            assert s["element_label"] is None
            continue
        role, _, name = lines[0].split(" ", 1)[1].partition(" ")
        assert s["element_role"] == role
        if s["element_label"]:
            assert all(word in name for word in s["element_label"].rstrip("…").split()), (
                s["element_label"],
                name,
            )
            assert f"'{s['element_label'][:20]}" in s["readable"] or s["element_label"][:20] in s["readable"]
            resolved += 1
    assert resolved >= len(rows) // 2


def test_observations_hold_axtree_and_chat(db):
    kinds = dict(db.query("SELECT kind, count(*) FROM observations WHERE run = ? GROUP BY kind", [RUN]))
    n_steps = db.query("SELECT count(*) FROM steps WHERE run = ?", [RUN])[0][0]
    assert kinds == {"axtree": n_steps, "chat": n_steps}
    chat = db.query("SELECT content FROM observations WHERE run = ? AND kind = 'chat' LIMIT 1", [RUN])[0][0]
    import json

    messages = json.loads(chat)
    assert messages[0]["role"] == "system" and messages[-1]["role"] == "assistant"


def test_answer_episode_is_the_latest_complete_attempt(db):
    rows = db.query("SELECT task_id, episode, termination, is_answer FROM trajectories WHERE run = ?", [RUN])
    by_task: dict[int, list] = {}
    for task_id, episode, termination, is_answer in rows:
        by_task.setdefault(task_id, []).append((episode, termination, is_answer))
    for task_id, attempts in by_task.items():
        assert sum(a[2] for a in attempts) == 1, task_id
    # Task 118 has a crashed attempt (_webarena.118) and a complete one (_webarena.118_1).
    assert [e for e, _, answer in by_task[118] if answer] == ["_webarena.118_1"]
    # What the CLI reports to the user is the same choice.
    from core.queries.runs import several_attempts

    reported = {r["task_id"]: (r["attempts"], r["answer"]) for r in several_attempts(db, RUN)}
    expected = {
        t: (len(a), next(e for e, _, answer in a if answer)) for t, a in by_task.items() if len(a) > 1
    }
    assert reported == expected and 118 in reported


def test_reimport_is_idempotent(tasks_store, sample_dir):
    def snapshot():
        return {
            table: sorted(map(repr, tasks_store.query(f"SELECT {cols} FROM {table} WHERE run = ?", [RUN])))
            for table, cols in (
                ("trajectories", "*"),
                ("steps", "*"),
                ("observations", "*"),
                ("import_problems", "task_id, source_path, kind, message"),
            )
        }

    import_agentlab(tasks_store, sample_dir, RUN)
    first = snapshot()
    import_agentlab(tasks_store, sample_dir, RUN, workers=2)  # the process-pool path gives the same rows
    assert snapshot() == first
    assert tasks_store.query("SELECT count(*) FROM runs WHERE name = ?", [RUN])[0][0] == 1


def _copy_episode(sample_dir: Path, name: str, dest: Path) -> Path:
    target = dest / name
    shutil.copytree(sample_dir / name, target)
    for p in target.iterdir():
        p.chmod(0o644)
    target.chmod(0o755)
    return target


def test_corrupt_summary_and_random_step_file_are_problems(tasks_store, sample_dir, tmp_path):
    root = tmp_path / "run"
    root.mkdir()
    bad = _copy_episode(sample_dir, "webarena.188", root)
    (bad / "summary_info.json").write_text('{"n_steps": 2, "cum_reward": ')
    (bad / "step_1.pkl.gz").write_bytes(os.urandom(2048))
    _copy_episode(sample_dir, "webarena.191", root)
    summary = import_agentlab(tasks_store, root, "bad")
    assert summary.n_episodes == 2
    kinds = sorted(r[0] for r in tasks_store.query("SELECT kind FROM import_problems WHERE run = 'bad'"))
    assert kinds == ["bad_json", "bad_step_file"]
    t = tasks_store.query_dicts("SELECT * FROM trajectories WHERE run = 'bad' AND task_id = 188")[0]
    # The terminal step file still says the episode ended with reward 1.0, but the answer step is
    # unreadable: no termination can be claimed, and the detail names the file.
    assert (t["termination"], t["reward"], t["n_steps"]) == ("none", 1.0, 1)
    assert "step_1.pkl.gz" in t["termination_detail"]


def test_malicious_step_pickle_is_inert_during_import(tasks_store, sample_dir, tmp_path):
    marker = tmp_path / "pwned"
    root = tmp_path / "run"
    root.mkdir()
    ep = _copy_episode(sample_dir, "webarena.188", root)
    payload = b"cos\nsystem\n(S'touch " + str(marker).encode() + b"'\ntR."
    (ep / "step_0.pkl.gz").write_bytes(gzip.compress(payload))
    (ep / "exp_args.pkl").write_bytes(b"\x80\x04N")  # no STOP opcode: unreadable, ignored
    import_agentlab(tasks_store, root, "evil")
    assert not marker.exists()
    kinds = [r[0] for r in tasks_store.query("SELECT kind FROM import_problems WHERE run = 'evil'")]
    assert kinds == ["bad_step_file"]


def test_unknown_task_id_is_a_problem(tasks_store, sample_dir, tmp_path):
    root = tmp_path / "run"
    root.mkdir()
    src = _copy_episode(sample_dir, "webarena.188", root)
    src.rename(root / "webarena.99999")
    _copy_episode(sample_dir, "webarena.191", root)
    summary = import_agentlab(tasks_store, root, "unknown")
    assert summary.n_episodes == 1
    assert [r[0] for r in tasks_store.query("SELECT kind FROM import_problems WHERE run = 'unknown'")] == [
        "unknown_task"
    ]


def test_bad_directories_are_one_line_input_errors_and_write_nothing(tasks_store, sample_dir, tmp_path):
    import_agentlab(tasks_store, sample_dir, RUN)
    before = tasks_store.row_counts()
    with pytest.raises(InputError, match="no such directory"):
        import_agentlab(tasks_store, tmp_path / "missing", RUN)
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("nothing here")
    with pytest.raises(InputError, match="no BrowserGym/AgentLab episode") as info:
        import_agentlab(tasks_store, tmp_path / "empty", RUN)
    assert "\n" not in str(info.value)
    assert tasks_store.row_counts() == before


def test_read_episode_of_reset_crash_without_step_file(sample_dir):
    # README: `_webarena.21` is the "zero-step error with no step file at all".
    assert not list((sample_dir / "_webarena.21").glob("step_*"))
    r = read_episode(sample_dir / "_webarena.21")
    assert r.trajectory.termination == "error" and r.trajectory.steps == [] and r.problems == []


def _cli(*args: str, db: Path) -> subprocess.CompletedProcess:
    return run_cli(*args, db=db)


def test_cli_exit_codes(tmp_path, sample_dir):
    db = tmp_path / "cli.duckdb"
    ok = _cli("import", "agentlab", str(sample_dir), "--run", "cli-run", db=db)
    assert ok.returncode == 0, ok.stderr
    assert f"run cli-run: {len(EXPECTED)} episodes" in ok.stdout
    alias = _cli("import", "browsergym", str(sample_dir / "webarena.188"), "--run", "one", db=db)
    assert alias.returncode == 0 and "1 episodes" in alias.stdout
    missing = _cli("import", "agentlab", str(tmp_path / "nope"), "--run", "x", db=db)
    assert missing.returncode == 2
    assert missing.stderr.strip().count("\n") == 0 and "no such directory" in missing.stderr
    bad = _cli("import", "agentlab", str(sample_dir), "--run", "x", "--paradigm", "guess", db=db)
    assert bad.returncode == 2 and "--paradigm" in bad.stderr


def test_answer_episodes_with_a_known_outcome_are_the_runs_verdicts(db):
    """Run-level views read `evaluations`: each task whose answer episode has a known outcome gets one
    row with source 'source-reward', agreeing with that episode; crashed episodes give none."""
    verdicts = dict(
        db.query("SELECT task_id, status FROM evaluations WHERE run = ? AND source = 'source-reward'", [RUN])
    )
    answers = db.query("SELECT task_id, success FROM trajectories WHERE run = ? AND is_answer", [RUN])
    expected = {t: ("success" if ok else "failure") for t, ok in answers if ok is not None}
    assert verdicts == expected
    assert {"success", "failure"} <= set(verdicts.values())
    assert any(ok is None for _, ok in answers)  # reset crashes: no verdict recorded for them


def test_odd_step_file_names_are_not_second_copies_of_a_step(tasks_store, sample_dir, tmp_path):
    # `\d+` took `step_00.pkl.gz` and `step_١.pkl.gz` (Arabic-Indic digit one) as steps 0 and 1
    # again: every step was stored twice. BrowserGym only writes `step_{n}` in ASCII digits.
    root = tmp_path / "run"
    root.mkdir()
    ep = _copy_episode(sample_dir, "webarena.188", root)
    n_files = len(list(ep.glob("step_*.pkl.gz")))
    shutil.copy(ep / "step_0.pkl.gz", ep / "step_00.pkl.gz")
    shutil.copy(ep / "step_0.pkl.gz", ep / "step_\u0661.pkl.gz")
    import_agentlab(tasks_store, root, "odd")
    idx = [r[0] for r in tasks_store.query("SELECT idx FROM steps WHERE run = 'odd' ORDER BY idx")]
    assert idx == list(range(n_files - 1))  # the last file is the terminal state, not a step


def test_symbolic_links_in_an_episode_are_not_followed(tasks_store, sample_dir, tmp_path):
    # A crafted episode links its screenshot to a private file (stored as the screenshot path, so the
    # viewer would show it) and a step file and its summary to files outside the episode.
    secret = tmp_path / "id_rsa"
    secret.write_text("PRIVATE KEY")
    outside = _copy_episode(sample_dir, "webarena.191", tmp_path)
    root = tmp_path / "run"
    root.mkdir()
    ep = _copy_episode(sample_dir, "webarena.188", root)
    for shot in ep.glob("screenshot_step_*.png"):
        shot.unlink()
    (ep / "screenshot_step_0.png").symlink_to(secret)
    (ep / "summary_info.json").unlink()
    (ep / "summary_info.json").symlink_to(outside / "summary_info.json")
    (ep / "step_1.pkl.gz").unlink()
    (ep / "step_1.pkl.gz").symlink_to(outside / "step_1.pkl.gz")
    (root / "linked.191").symlink_to(outside, target_is_directory=True)

    summary = import_agentlab(tasks_store, root, "links")

    assert summary.n_episodes == 1  # the linked episode directory is not followed either
    steps = tasks_store.query_dicts("SELECT * FROM steps WHERE run = 'links'")
    assert steps and all(s["screenshot_path"] is None for s in steps)
    assert str(secret) not in repr(tasks_store.query("SELECT * FROM steps WHERE run = 'links'"))
    problems = tasks_store.query_dicts("SELECT * FROM import_problems WHERE run = 'links'")
    assert [(p["kind"], Path(p["source_path"]).name) for p in problems] == [
        ("bad_step_file", "step_1.pkl.gz")
    ]
    assert "symbolic link" in problems[0]["message"]
    t = tasks_store.query_dicts("SELECT * FROM trajectories WHERE run = 'links'")[0]
    assert t["reward"] != 0.0  # webarena.191's summary (cum_reward 0.0) was not read as this one's


def _step_pickle(**fields) -> bytes:
    # A StepInfo as BrowserGym pickles it (NEWOBJ of the class, then BUILD with its fields).
    state = pickle.dumps(fields, protocol=4)[2:-1]
    return gzip.compress(b"\x80\x04cbrowsergym.experiments.loop\nStepInfo\n)\x81" + state + b"b.")


@pytest.mark.parametrize(
    "fields",
    [
        {"step": 0, "action": "noop()", "obs": {}, "reward": 10**400},  # float() overflowed
        {"step": 0, "action": "noop()", "obs": {}, "profiling": {1: 2.0, "env_start": 10**400}},
    ],
)
def test_odd_values_in_a_step_do_not_fail_the_import(tasks_store, sample_dir, tmp_path, fields):
    root = tmp_path / "run"
    root.mkdir()
    ep = _copy_episode(sample_dir, "webarena.188", root)
    (ep / "step_0.pkl.gz").write_bytes(_step_pickle(**fields))
    _copy_episode(sample_dir, "webarena.191", root)
    summary = import_agentlab(tasks_store, root, "odd")
    assert summary.n_episodes == 2
    (step0,) = tasks_store.query_dicts("SELECT * FROM steps WHERE run = 'odd' AND task_id = 188 AND idx = 0")
    assert step0["executed_action"] == "noop()"


def test_an_unforeseen_error_is_a_problem_of_its_episode(tasks_store, sample_dir, tmp_path, monkeypatch):
    import core.ingest.agentlab as agentlab

    root = tmp_path / "run"
    root.mkdir()
    _copy_episode(sample_dir, "webarena.188", root)
    _copy_episode(sample_dir, "webarena.191", root)
    real = agentlab._read_summary

    def explode(directory, problems, task_id):
        if task_id == 188:
            raise RecursionError(f"maximum recursion depth exceeded\n  File {tmp_path}/x.py")
        return real(directory, problems, task_id)

    monkeypatch.setattr(agentlab, "_read_summary", explode)
    summary = import_agentlab(tasks_store, root, "boom", workers=1)
    assert summary.n_episodes == 1
    (problem,) = summary.problems
    assert problem.kind == "bad_episode" and problem.task_id == 188
    assert "RecursionError" in problem.message and "\n" not in problem.message


def test_the_page_after_the_last_action_is_the_terminal_step_files_page(db):
    """A step's url is the page before its action (its own observation); the terminal step file (no
    action, not a row) observes the page after the last action: that is the trajectory's final_url."""
    got = _trajectories(db)
    with_final = 0
    for name, t in got.items():
        folder = Path(t["source_path"])
        files = sorted(folder.glob("step_*.pkl.gz"), key=lambda p: int(re.findall(r"\d+", p.name)[0]))
        try:
            last = safe_pickle.load_path(files[-1]).fields if files else None
        except safe_pickle.SafePickleError:
            last = None
        terminal = last is not None and not last.get("action") and last.get("obs")
        if terminal and t["n_steps"]:
            assert t["final_url"] == last["obs"]["url"], name
            with_final += 1
        else:
            assert t["final_url"] is None, name
    assert with_final >= 5
