"""`import wav-run` on the real demo run and on broken copies of it: problems recorded, nothing half-written."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from build_cache import built_db
from cli_support import run_cli

from core.errors import InputError
from core.ingest.wav_run import import_wav_run
from core.store import Store

TASKS = (107, 108)


@pytest.fixture(scope="session")
def wav(shipped_data: Path) -> Path:
    return shipped_data / "webarena-verified"


@pytest.fixture(scope="session")
def scored_demo_db(tasks_db: Path, wav: Path, tmp_path_factory) -> Path:
    """The demo run imported and scored once per session."""

    def build(path: Path) -> None:
        shutil.copy(tasks_db, path)
        with Store(path) as store:
            import_wav_run(store, wav / "demo-run", "wav-demo", config=wav / "config.demo.json", workers=1)

    return built_db(
        tmp_path_factory,
        "scored-wav-demo",
        build,
        (wav / "demo-run", wav / "config.demo.json"),
        "demo.duckdb",
    )


def _har_entries(path: Path) -> list[dict]:
    return json.loads(path.read_text())["log"]["entries"]


def _run_rows(store: Store, run: str) -> dict[str, int]:
    tables = (
        "runs",
        "import_problems",
        "agent_responses",
        "network_events",
        "evaluations",
        "evaluator_results",
    )
    key = {"runs": "name"}
    return {
        t: store.query(f"SELECT count(*) FROM {t} WHERE {key.get(t, 'run')} = ?", [run])[0][0] for t in tables
    }


def _all_text(store: Store) -> str:
    """Every value of every table, as text: for 'this secret appears nowhere' checks."""
    parts = []
    for table in store.tables():
        parts.append(json.dumps(store.query(f'SELECT COLUMNS(*)::VARCHAR FROM "{table}"'), default=str))
    return "\n".join(parts)


def _copy_demo(wav: Path, dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    for tid in TASKS:
        shutil.copytree(wav / "demo-run" / str(tid), dest / str(tid))
    return dest


# -- the real demo run -----------------------------------------------------------------------------
def test_demo_run_import(scored_demo_db: Path, wav: Path):
    with Store(scored_demo_db, read_only=True) as store:
        for tid in TASKS:
            entries = _har_entries(wav / "demo-run" / str(tid) / "network.har")
            n = store.query(
                "SELECT count(*), max(seq) FROM network_events WHERE run='wav-demo' AND task_id=?", [tid]
            )
            assert n[0] == (len(entries), len(entries) - 1)
            official = json.loads((wav / "demo-run" / str(tid) / "eval_result.json").read_text())
            status, score = store.query(
                "SELECT status, score FROM evaluations WHERE run='wav-demo' AND task_id=?", [tid]
            )[0]
            assert (status, score) == (official["status"], official["score"])
            raw, lint = store.query(
                "SELECT raw_text, lint FROM agent_responses WHERE run='wav-demo' AND task_id=?", [tid]
            )[0]
            assert raw == (wav / "demo-run" / str(tid) / "agent_response.json").read_text()
            assert json.loads(lint) == []
        run = store.query_dicts("SELECT * FROM runs WHERE name='wav-demo'")[0]
        assert run["source_format"] == "wav-run" and run["n_tasks"] == 2
        config = json.loads(run["config"])
        demo_config = json.loads((wav / "config.demo.json").read_text())
        assert (
            config["environments"]["__GITLAB__"]["urls"] == demo_config["environments"]["__GITLAB__"]["urls"]
        )
        assert store.query("SELECT count(*) FROM import_problems WHERE run='wav-demo'")[0][0] == 0


def test_no_secret_from_the_har_or_config_reaches_the_database(scored_demo_db: Path, wav: Path):
    entries = _har_entries(wav / "demo-run" / "107" / "network.har")
    secrets = set()
    for e in entries:
        for h in e["request"]["headers"]:
            if h["name"].lower() == "cookie":
                secrets.update(p.split("=", 1)[1].strip() for p in h["value"].split(";") if "=" in p)
        secrets.update(c["value"] for c in e["request"].get("cookies", []) + e["response"].get("cookies", []))
    secrets = {s for s in secrets if len(s) >= 6}
    assert secrets
    password = json.loads((wav / "config.demo.json").read_text())["environments"]["__GITLAB__"][
        "credentials"
    ]["password"]
    with Store(scored_demo_db, read_only=True) as store:
        text = _all_text(store)
    for secret in [*secrets, password]:
        assert secret not in text


@pytest.mark.slow
def test_reimport_replaces_the_run_atomically(tasks_store: Store, wav: Path, tmp_path: Path):
    import_wav_run(tasks_store, wav / "demo-run", "again", score=False)
    first = _run_rows(tasks_store, "again")
    import_wav_run(tasks_store, wav / "demo-run", "again", score=False)
    assert _run_rows(tasks_store, "again") == first
    assert (
        tasks_store.query("SELECT count(DISTINCT (task_id, seq)) FROM network_events WHERE run='again'")[0][0]
        == (first["network_events"])
    )
    # a smaller source replaces the whole run, not just the tasks it has
    only_108 = tmp_path / "only108"
    shutil.copytree(wav / "demo-run" / "108", only_108 / "108")
    import_wav_run(tasks_store, only_108, "again", score=False)
    assert tasks_store.query("SELECT DISTINCT task_id FROM network_events WHERE run='again'") == [(108,)]


# -- broken inputs ---------------------------------------------------------------------------------
def _broken_run(wav: Path, root: Path) -> Path:
    run = _copy_demo(wav, root / "run")
    har = (wav / "demo-run" / "107" / "network.har").read_bytes()
    response = (wav / "demo-run" / "108" / "agent_response.json").read_bytes()

    def task(tid, har_bytes: bytes | None = har, response_bytes: bytes | None = response) -> Path:
        d = run / str(tid)
        d.mkdir()
        if har_bytes is not None:
            (d / "network.har").write_bytes(har_bytes)
        if response_bytes is not None:
            (d / "agent_response.json").write_bytes(response_bytes)
        return d

    task(200, b"")
    task(201, har[: len(har) // 3])
    task(202, json.dumps({"log": {"version": "1.2"}}).encode())
    no_headers = json.loads(har)
    for e in no_headers["log"]["entries"][:5]:
        del e["request"]["headers"]
    task(203, json.dumps(no_headers).encode())
    at = har.index(b'"url": "') + 8
    task(204, har[:at] + b"\xff\xfe\xfd" + har[at:])
    task(205, response_bytes=None)
    task(206, response_bytes=b"")
    task(207, har_bytes=None)
    task(208, response_bytes=b"\xff\xfe not utf-8")
    (run / "notes").mkdir()
    (run / "notes" / "agent_response.json").write_bytes(response)
    task(99999)
    (run / "eval_results.json").write_text("{}")  # top-level files of the official layout are ignored
    return run


EXPECTED_PROBLEMS = {
    (200, "bad_trace"), (201, "bad_trace"), (202, "bad_trace"), (203, "malformed_entries"), (204, "bad_trace"),
    (205, "missing_file"), (206, "empty_agent_response"), (207, "missing_file"), (208, "bad_agent_response"),
    (None, "not_a_task_dir"), (99999, "unknown_task"),
}  # fmt: skip


def test_bad_tasks_become_problems_and_the_rest_imports(tasks_store: Store, wav: Path, tmp_path: Path):
    run = _broken_run(wav, tmp_path)
    summary = import_wav_run(tasks_store, run, "broken", config=wav / "config.demo.json", workers=1)
    got = {(p.task_id, p.kind) for p in summary.problems}
    assert got == EXPECTED_PROBLEMS
    stored = {
        (r["task_id"], r["kind"])
        for r in tasks_store.query_dicts("SELECT * FROM import_problems WHERE run='broken'")
    }
    assert stored == EXPECTED_PROBLEMS
    messages = {p.task_id: p.message for p in summary.problems}
    assert "empty file" in messages[200] and "truncated" in messages[201] and "UTF-8" in messages[204]
    assert "5 entries without request headers" in messages[203]

    n_entries = len(_har_entries(wav / "demo-run" / "107" / "network.har"))
    events = dict(
        tasks_store.query("SELECT task_id, count(*) FROM network_events WHERE run='broken' GROUP BY 1")
    )
    # every usable trace is stored in full; unusable ones leave nothing
    assert events == {tid: n_entries for tid in (107, 108, 203, 205, 206, 208)}
    scored = dict(tasks_store.query("SELECT task_id, status FROM evaluations WHERE run='broken'"))
    # Every task with both files is scored, even when our parser refused its trace or its response is
    # not UTF-8: the engine reads those files itself, so the verdict is the one evaluate_task gives.
    assert set(scored) == {107, 108, 200, 201, 202, 203, 204, 206, 208}
    official = {
        t: json.loads((wav / "demo-run" / str(t) / "eval_result.json").read_text())["status"] for t in TASKS
    }
    assert {t: scored[t] for t in TASKS} == official
    oracle = _oracle(wav / "config.demo.json")
    theirs = {
        t: oracle.evaluate_task(
            task_id=t,
            agent_response=run / str(t) / "agent_response.json",
            network_trace=run / str(t) / "network.har",
        ).status.value
        for t in scored
    }
    assert scored == theirs
    assert scored[206] == "failure" and scored[208] == "error"  # empty response / undecodable file
    assert tasks_store.query("SELECT count(*) FROM runs WHERE name='broken'")[0][0] == 1


def _oracle(config: Path | None = None):
    """The official engine, evaluating files exactly as `evaluate_task` reads them."""
    from webarena_verified.api.webarena_verified import WebArenaVerified

    return WebArenaVerified(config=config)


def _counts(store: Store) -> dict[str, int]:
    return store.row_counts()


@pytest.mark.parametrize("kind", ["missing", "not_tar", "tar_not_submission", "empty_dir", "bad_config"])
def test_whole_file_errors_leave_the_database_unchanged(
    tasks_store: Store, wav: Path, tmp_path: Path, kind: str
):
    import_wav_run(tasks_store, wav / "demo-run", "keep", score=False)
    before = _counts(tasks_store)
    config = None
    path = tmp_path / "source"
    if kind == "missing":
        path = tmp_path / "does-not-exist"
    elif kind == "not_tar":
        path = tmp_path / "run.tar.gz"
        path.write_bytes(b"this is not a tarball")
    elif kind == "tar_not_submission":
        path = tmp_path / "other.tar.gz"
        with tarfile.open(path, "w:gz") as tar:
            tar.add(wav / "README.md", arcname="README.md")
    elif kind == "empty_dir":
        path.mkdir()
    elif kind == "bad_config":
        path = wav / "demo-run"
        config = tmp_path / "config.json"
        config.write_text('{"environments": ')
    with pytest.raises(InputError) as info:
        import_wav_run(tasks_store, path, "keep", config=config, score=False)
    assert "\n" not in str(info.value)
    assert _counts(tasks_store) == before
    assert tasks_store.query("SELECT count(*) FROM network_events WHERE run='keep'")[0][0] > 0


# -- submission packages and Playwright traces -----------------------------------------------------------
def test_official_submission_package_imports(tasks_store: Store, wav: Path, tmp_path: Path):
    from webarena_verified.api.internal.submission_handler import SubmissionHandler
    from webarena_verified.types.config import WebArenaVerifiedConfig

    run = _copy_demo(wav, tmp_path / "run")
    result = SubmissionHandler([run], WebArenaVerifiedConfig(), set(TASKS)).create_submission(
        tmp_path, custom_name="sub"
    )
    summary = import_wav_run(tasks_store, Path(result.output_path), "sub", score=False)
    assert summary.n_tasks == 2 and summary.problems == []
    with tarfile.open(result.output_path) as tar:
        trimmed = json.load(tar.extractfile("107/network.har"))["log"]["entries"]
    assert tasks_store.query("SELECT count(*) FROM network_events WHERE run='sub' AND task_id=107")[0][
        0
    ] == len(trimmed)
    assert not tasks_store.query("SELECT count(*) FROM network_events WHERE run='sub' AND is_static_asset")[
        0
    ][0]


def test_run_imported_from_a_submission_can_be_rescored(tasks_store: Store, wav: Path, tmp_path: Path):
    """`evaluate --run` reads a submission .tar.gz again (safely) instead of asking for a directory."""
    from webarena_verified.api.internal.submission_handler import SubmissionHandler
    from webarena_verified.types.config import WebArenaVerifiedConfig

    from core.scoring.stored_scores import evaluate_run

    run = _copy_demo(wav, tmp_path / "run")
    result = SubmissionHandler([run], WebArenaVerifiedConfig(), set(TASKS)).create_submission(
        tmp_path, custom_name="sub"
    )
    config = wav / "config.demo.json"
    import_wav_run(tasks_store, Path(result.output_path), "sub", config=config, workers=1)
    imported = dict(tasks_store.query("SELECT task_id, status FROM evaluations WHERE run = 'sub'"))
    rescored = {s.task_id: s.status for s in evaluate_run(tasks_store, "sub", workers=1)}
    official = {
        int(t): json.loads((wav / "demo-run" / t / "eval_result.json").read_text())["status"]
        for t in ("107", "108")
    }
    assert imported == rescored == official


def test_hostile_tarball_members_are_skipped(tasks_store: Store, wav: Path, tmp_path: Path):
    path = tmp_path / "evil.tar.gz"
    response = (wav / "demo-run" / "108" / "agent_response.json").read_bytes()
    har = (wav / "demo-run" / "108" / "network.har").read_bytes()
    outside = tmp_path / "outside"
    with tarfile.open(path, "w:gz") as tar:

        def add(name: str, data: bytes) -> None:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))

        add("summary.json", b"{}")
        add("108/agent_response.json", response)
        add("108/network.har", har)
        add("../outside/107/agent_response.json", response)
        link = tarfile.TarInfo("107/network.har")
        link.type = tarfile.SYMTYPE
        link.linkname = "/etc/passwd"
        tar.addfile(link)
        add("107/agent_response.json", response)
    summary = import_wav_run(tasks_store, path, "evil", score=False)
    kinds = sorted((p.task_id or -1, p.kind) for p in summary.problems)
    assert kinds == [(-1, "unsafe_member"), (107, "missing_file"), (107, "unsafe_member")]
    assert not outside.exists()
    assert dict(
        tasks_store.query("SELECT task_id, count(*) FROM network_events WHERE run='evil' GROUP BY 1")
    ) == {108: len(_har_entries(wav / "demo-run" / "108" / "network.har"))}


def test_playwright_trace_in_a_task_directory(tasks_store: Store, wav: Path, tmp_path: Path):
    template = json.loads((wav / "test-assets" / "playwright-trace-nav-template.json").read_text())
    run = tmp_path / "run"
    (run / "108").mkdir(parents=True)
    shutil.copy(wav / "demo-run" / "108" / "agent_response.json", run / "108")
    with zipfile.ZipFile(run / "108" / "trace.zip", "w") as zf:
        zf.writestr("trace.network", json.dumps(template) + "\n")
    summary = import_wav_run(tasks_store, run, "pw", score=False)
    assert summary.problems == [] and summary.n_events == 1
    row = tasks_store.query_dicts("SELECT * FROM network_events WHERE run='pw'")[0]
    assert row["url"] == template["snapshot"]["request"]["url"] and row["is_navigation"]
    assert "4597479228344bed0760ac8d8d1b7b92" not in json.dumps(row, default=str)  # the template's cookie


# -- the command -----------------------------------------------------------------------------------------
def _cli(*args: str, db: Path, hash_seed: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "TRAJREVIEW_DB"}
    if hash_seed is not None:
        env["PYTHONHASHSEED"] = hash_seed
    return subprocess.run(
        [sys.executable, "-m", "core.cli.start", "--db", str(db), "import", "wav-run", *args],
        capture_output=True, text=True, env=env,
    )  # fmt: skip


@pytest.mark.slow
def test_cli_exit_codes(tasks_db: Path, wav: Path, tmp_path: Path):
    """In this process (none of these scores in workers): tests/test_cli.py runs the pooled import as a
    process."""
    db = tmp_path / "cli.duckdb"
    shutil.copy(tasks_db, db)

    def import_wav(*args: str, db: Path) -> subprocess.CompletedProcess:
        return run_cli("import", "wav-run", *args, db=db)

    ok = import_wav(str(wav / "demo-run"), "--run", "cli", "--no-score", db=db)
    assert ok.returncode == 0, ok.stderr
    entries = sum(
        len(json.loads((wav / "demo-run" / t / "network.har").read_bytes())["log"]["entries"])
        for t in ("107", "108")
    )
    assert f"run cli: 2 tasks, {entries} network events" in ok.stdout
    missing = import_wav(str(tmp_path / "nope"), "--run", "cli", "--no-score", db=db)
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1 and "no such file" in missing.stderr
    bad = import_wav(str(wav / "demo-run"), "--run", "cli", "--paradigm", "magic", db=db)
    assert bad.returncode == 2 and "--paradigm" in bad.stderr
    broken = _broken_run(wav, tmp_path / "b")
    partial = import_wav(str(broken), "--run", "cli2", "--no-score", db=db)
    assert partial.returncode == 0 and f"{len(EXPECTED_PROBLEMS)} problems" in partial.stdout
    assert "problem [unknown_task]: task 99999" in partial.stdout


@pytest.mark.slow
def test_two_imports_of_one_run_store_the_same_text_whatever_the_hash_seed(
    tasks_db: Path, wav: Path, tmp_path: Path
):
    """The engine builds a response's normalised object from a set, so its key order follows the process's
    hash seed; stored in the expected object's order, two imports of one run are equal row for row."""
    stored = []
    for seed in ("1", "2"):
        db = tmp_path / f"seed{seed}.duckdb"
        shutil.copy(tasks_db, db)
        done = _cli(str(wav / "demo-run"), "--run", "r", db=db, hash_seed=seed)
        assert done.returncode == 0, done.stderr
        with Store(db, read_only=True) as store:
            rows = store.query(
                "SELECT task_id, idx, evaluator, status, score, CAST(actual_normalized AS VARCHAR),"
                " CAST(expected_normalized AS VARCHAR), explanation FROM evaluator_results ORDER BY ALL"
            )
        stored.append(rows)
    agent = [row for row in stored[0] if row[2] == "AgentResponseEvaluator"]
    assert agent and all(json.loads(row[5]) for row in agent)  # normalised objects were stored
    assert stored[0] == stored[1]
    # in the expected object's order, the one the Evaluation panel shows beside it
    assert all(list(json.loads(row[5])) == list(json.loads(row[6])) for row in agent)


def test_event_seqs_survive_leaving_static_assets_out(tasks_store: Store, wav: Path, tmp_path: Path):
    """Navigate tasks scored on the real demo HAR: the seqs the explanations point at are the same as when
    the engine is given every entry, and they name non-static rows of network_events."""
    from core.scoring.engine import ScoringInput, score_inputs

    navigate = [
        tid
        for (tid,) in tasks_store.query(
            "SELECT task_id FROM tasks WHERE site_key = 'gitlab' AND task_type = 'navigate' ORDER BY task_id LIMIT 4"
        )
    ]
    run = tmp_path / "run"
    response = (wav / "demo-run" / "107" / "agent_response.json").read_bytes()  # a NAVIGATE/SUCCESS answer
    for tid in navigate:
        (run / str(tid)).mkdir(parents=True)
        shutil.copy(wav / "demo-run" / "107" / "network.har", run / str(tid) / "network.har")
        (run / str(tid) / "agent_response.json").write_bytes(response)
    import_wav_run(tasks_store, run, "nav", config=wav / "config.demo.json", workers=1)
    stored = tasks_store.query_dicts(
        "SELECT task_id, idx, matched_event_seq, nearest_event_seq FROM evaluator_results "
        "WHERE run = 'nav' AND evaluator = 'NetworkEventEvaluator' ORDER BY task_id, idx"
    )
    entries = _har_entries(wav / "demo-run" / "107" / "network.har")
    full = score_inputs(
        [ScoringInput(task_id=t, agent_response=response.decode(), har_entries=entries) for t in navigate],
        config=wav / "config.demo.json",
        workers=1,
    )
    expected = [
        {"task_id": s.task_id, "idx": r.idx, "matched_event_seq": r.matched_event_seq,
         "nearest_event_seq": r.nearest_event_seq}
        for s in full for r in s.evaluator_results if r.evaluator == "NetworkEventEvaluator"
    ]  # fmt: skip
    assert stored == expected
    seqs = {
        v for row in stored for v in (row["matched_event_seq"], row["nearest_event_seq"]) if v is not None
    }
    assert seqs, "the demo HAR's GitLab navigations give the explanations an event to point at"
    for seq in seqs:
        (static,) = tasks_store.query(
            "SELECT DISTINCT is_static_asset FROM network_events WHERE run = 'nav' AND seq = ?", [seq]
        )[0]
        assert static is False


@pytest.mark.slow
def test_cli_explains_each_failed_task(tasks_db: Path, wav: Path, tmp_path: Path):
    """After scoring, the command says why each task failed, in the official result's own terms."""
    db = tmp_path / "cli.duckdb"
    shutil.copy(tasks_db, db)
    out = _cli(str(wav / "demo-run"), "--run", "cli", "--config", str(wav / "config.demo.json"), db=db)
    assert out.returncode == 0, out.stderr
    failed = {
        t: json.loads((wav / "demo-run" / t / "eval_result.json").read_text())
        for t in ("107", "108")
        if json.loads((wav / "demo-run" / t / "eval_result.json").read_text())["status"] != "success"
    }
    assert failed, "the demo run has a failing task"
    assert f"why tasks failed ({len(failed)}):" in out.stdout
    checked = 0
    for task_id in failed:
        line = next(
            line for line in out.stdout.splitlines() if line.strip().startswith(f"task {task_id} failure:")
        )
        results = failed[task_id]["evaluators_results"]
        names = {a["assertion_name"] for e in results for a in e.get("assertions") or ()}
        if any("task_type_mismatch" in n for n in names):
            said = json.loads((wav / "demo-run" / task_id / "agent_response.json").read_text())["task_type"]
            assert f"agent said {said.upper()}" in line and "task_type: expected" in line
            checked += 1
    assert checked  # 107 fails on its task type (its official assertions say so)


# -- files our readers and the engine's read differently ---------------------------------------------------
def _odd_files(wav: Path) -> dict[str, tuple[bytes, bytes]]:
    """(network.har, agent_response.json) bytes for task 108, each odd in one way."""
    har = (wav / "demo-run" / "108" / "network.har").read_bytes()
    response = (wav / "demo-run" / "108" / "agent_response.json").read_bytes()
    entries = json.loads(har)["log"]["entries"]
    at = har.index(b'"time":') + len(b'"time":')
    end = at + min(har.index(b",", at), har.index(b"\n", at)) - at
    return {
        "plain": (har, response),
        "NaN in the HAR (Python's json reads it, orjson does not)": (
            har[:at] + b" NaN" + har[end:],
            response,
        ),
        "BOM before the HAR": (b"\xef\xbb\xbf" + har, response),
        "BOM before the response": (har, b"\xef\xbb\xbf" + response),
        "CRLF response": (har, response.replace(b"\n", b"\r\n")),
        "non-UTF-8 response": (har, response + b"\xff"),
        "entries is an object": (json.dumps({"log": {"entries": {"a": entries[0]}}}).encode(), response),
        "an entry is a number": (json.dumps({"log": {"entries": [*entries, 5]}}).encode(), response),
        "no entries": (json.dumps({"log": {"entries": []}}).encode(), response),
        "duplicate entries key": (
            json.dumps({"log": {"entries": entries}})[:-2].encode() + b', "entries": []}}',
            response,
        ),
        "duplicate log key": (
            json.dumps({"log": {"entries": entries}})[:-1].encode() + b', "log": {"entries": [5]}}',
            response,
        ),
        "an entry without a request": (
            json.dumps({"log": {"entries": [{"response": {}}]}}).encode(),
            response,
        ),
        "static assets only": (
            json.dumps(
                {"log": {"entries": [e for e in entries if e["request"]["url"].endswith(".js")]}}
            ).encode(),
            response,
        ),
    }


@pytest.mark.slow
@pytest.mark.parametrize("reader", ["whole-file", "streaming"])
def test_odd_files_get_the_status_evaluate_task_gives(
    tasks_store: Store, wav: Path, tmp_path: Path, reader: str, monkeypatch
):
    if reader == "streaming":  # what a HAR over 32 MiB goes through
        monkeypatch.setattr("core.files.har._WHOLE_FILE_MAX", -1)
    oracle = _oracle(wav / "config.demo.json")
    disagreements, seen = [], set()
    for n, (case, (har, response)) in enumerate(_odd_files(wav).items()):
        task_dir = tmp_path / f"case{n}" / "108"
        task_dir.mkdir(parents=True)
        (task_dir / "network.har").write_bytes(har)
        (task_dir / "agent_response.json").write_bytes(response)
        import_wav_run(tasks_store, task_dir.parent, f"case{n}", config=wav / "config.demo.json", workers=1)
        mine = tasks_store.query("SELECT status FROM evaluations WHERE run = ?", [f"case{n}"])
        theirs = oracle.evaluate_task(
            task_id=108,
            agent_response=task_dir / "agent_response.json",
            network_trace=task_dir / "network.har",
        ).status.value
        seen.add(theirs)
        if [(theirs,)] != mine:
            disagreements.append((case, mine, theirs))
    assert disagreements == []
    assert seen == {"success", "failure", "error"}


def test_an_import_commits_its_rows_into_the_file_not_the_log(tasks_store: Store, wav: Path):
    """The import's transaction checkpoints at its commit (`Store.transaction(checkpoint=True)`): in a
    file that stays open (the app's), nothing of the run waits in the write-ahead log."""
    wal = tasks_store.path.with_name(tasks_store.path.name + ".wal")
    import_wav_run(tasks_store, wav / "demo-run", "logged", config=wav / "config.demo.json", workers=1)
    assert tasks_store.query("SELECT count(*) > 700 FROM network_events WHERE run = 'logged'") == [(True,)]
    assert not wal.exists() or wal.stat().st_size == 0


def test_a_small_import_opens_the_file_once_before_its_transaction(tasks_db: Path, wav: Path, tmp_path: Path):
    """Reading the dataset kinds and the task ids is one open of the file, not two (a `ShortLivedStore`
    leaves a turn (TURN_S) between two operations in a row), then the one write transaction: the
    search index is built from what the import wrote, and the failures it lists are its own scores."""
    from core.store import ShortLivedStore

    path = tmp_path / "short.duckdb"
    shutil.copy(tasks_db, path)
    store = ShortLivedStore(path)
    summary = import_wav_run(store, wav / "demo-run", "short", config=wav / "config.demo.json", workers=1)
    assert summary.n_scored == summary.n_tasks > 0
    assert len(store.holds) == 2


def test_the_failures_listed_after_an_import_are_the_stored_ones(
    tasks_store: Store, wav: Path, tmp_path: Path
):
    """`import wav-run` lists its failed tasks from the scores it wrote, not from a read after the commit:
    the list is the one `failed_tasks` reads from the database (same rows, same order), on a run that mixes
    failures and errors over many task ids."""
    from core.ingest.writer import FAILURE_FIELDS
    from core.queries.overview import failed_tasks

    cases = list(_odd_files(wav).values())
    ids = [t for (t,) in tasks_store.query("SELECT task_id FROM tasks ORDER BY task_id DESC LIMIT 16")]
    # Task 107's answer holds a lone surrogate: listed as stored (its escape), not as the agent wrote it.
    lone = b'{"task_type":"RETRIEVE","status":"SUCCESS","retrieved_data":["\\ud800"]}'
    for n, task_id in enumerate([*ids, *TASKS]):
        task_dir = tmp_path / "mixed" / str(task_id)
        task_dir.mkdir(parents=True)
        har, response = cases[n % len(cases)] if task_id != 107 else (cases[0][0], lone)
        (task_dir / "network.har").write_bytes(har)
        (task_dir / "agent_response.json").write_bytes(response)
    summary = import_wav_run(
        tasks_store, tmp_path / "mixed", "mixed", config=wav / "config.demo.json", workers=1
    )
    stored = [
        {k: v for k, v in row.items() if k in FAILURE_FIELDS} for row in failed_tasks(tasks_store, "mixed")
    ]
    assert len({f["status"] for f in stored}) >= 2 and len(stored) >= 10
    assert any("\\ud800" in (f["explanation"] or "") for f in stored)
    assert summary.failures == stored


@pytest.mark.slow
def test_the_cli_lists_the_same_failures_as_a_read_of_the_database(tasks_db: Path, wav: Path, tmp_path: Path):
    """The command's listing (from the import's own rows) prints what `print_failures` prints from a read."""
    db = tmp_path / "cli.duckdb"
    shutil.copy(tasks_db, db)
    out = _cli(str(wav / "demo-run"), "--run", "cli", "--config", str(wav / "config.demo.json"), db=db)
    assert out.returncode == 0, out.stderr
    code = (
        "import sys; from core.cli import ui; from core.store import ShortLivedStore;"
        f"ui.print_failures(ShortLivedStore({str(db)!r}), 'cli')"
    )
    read = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert read.stdout.startswith("why tasks failed") and read.stdout in out.stdout


def test_a_small_run_is_shared_out_across_the_workers():
    """Chunks of 8 tasks, except when a run is too small to give every worker one: 2 tasks on 2 workers go
    one to each (both workers' first-call costs then run side by side), 10 tasks five to each."""
    from core.files.parallel import tasks_per_chunk

    assert [tasks_per_chunk(n, 2) for n in (1, 2, 3, 10, 16, 17, 812)] == [1, 1, 2, 5, 8, 8, 8]
    assert tasks_per_chunk(5, 1) == 5 and tasks_per_chunk(0, 2) == 1
