"""Scores land in the store, a stored run re-scores, export writes the official shapes, CANNOT_PASS holds."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from core.errors import InputError, NotFound
from core.ingest.records import RunMeta
from core.ingest.tasks import verified_dataset_path
from core.ingest.writer import replace_run
from core.scoring.cannot_pass import CANNOT_PASS, cannot_pass_evidence, expected_answer
from core.scoring.engine import ScoringInput, score_inputs
from core.scoring.stored_scores import evaluate_run, export_eval
from core.store import insert_rows


@pytest.fixture(scope="session")
def wv_dir(shipped_data: Path) -> Path:
    return shipped_data / "webarena-verified"


@pytest.fixture(scope="session")
def official_demo_results(wv_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The official CLI's own output on a copy of the demo run (it writes into the run directory)."""
    out = tmp_path_factory.mktemp("official") / "run"
    shutil.copytree(wv_dir / "demo-run", out)
    for stale in out.glob("*/eval_result.json"):
        stale.unlink()
    subprocess.run(
        [sys.executable, "-m", "webarena_verified", "eval-tasks", "--output-dir", str(out), "--config",
         str(wv_dir / "config.demo.json")],
        check=True, capture_output=True,
    )  # fmt: skip
    return out


@pytest.fixture
def demo_run(tasks_store, wv_dir: Path, tmp_path: Path):
    """The demo run stored as an importer stores it: a runs row and the raw agent responses."""
    run_dir = tmp_path / "demo-run"
    shutil.copytree(wv_dir / "demo-run", run_dir)
    config = orjson.loads((wv_dir / "config.demo.json").read_bytes())
    with tasks_store.transaction() as cur:
        replace_run(
            cur, RunMeta(name="demo", source_format="wav-run", source_path=str(run_dir), config=config)
        )
        insert_rows(
            cur,
            "agent_responses",
            [
                {
                    "run": "demo",
                    "task_id": t,
                    "raw_text": (run_dir / str(t) / "agent_response.json").read_text(),
                }
                for t in (107, 108)
            ],
        )
    return tasks_store


@pytest.mark.slow
def test_evaluate_run_stores_official_verdicts(demo_run, official_demo_results: Path) -> None:
    evaluate_run(demo_run, "demo", workers=1)
    rows = demo_run.query_dicts("SELECT * FROM evaluations WHERE run = 'demo' ORDER BY task_id")
    official = {
        t: json.loads((official_demo_results / str(t) / "eval_result.json").read_text()) for t in (107, 108)
    }
    assert [(r["task_id"], r["status"], r["score"]) for r in rows] == [
        (t, official[t]["status"], official[t]["score"]) for t in (107, 108)
    ]
    for r in rows:
        assert r["source"] == "webarena-verified"
        assert r["engine_version"] == official[r["task_id"]]["webarena_verified_version"]
        assert r["evaluator_checksum"] == official[r["task_id"]]["webarena_verified_evaluator_checksum"]
        assert r["data_checksum"] == official[r["task_id"]]["webarena_verified_data_checksum"]
        assert r["cannot_pass"] is False
    failed = demo_run.query_dicts("SELECT * FROM evaluator_results WHERE run = 'demo' AND task_id = 107")
    assert len(failed) == 1 and failed[0]["status"] == "failure"
    assert {a["assertion_name"] for a in json.loads(failed[0]["assertions"])} == {
        a["assertion_name"] for a in official[107]["evaluators_results"][0]["assertions"]
    }
    assert "task_type: expected RETRIEVE, agent said NAVIGATE" in failed[0]["explanation"]
    # Re-scoring replaces, never duplicates.
    evaluate_run(demo_run, "demo", workers=1)
    assert demo_run.query("SELECT count(*) FROM evaluations WHERE run = 'demo'") == [(2,)]
    assert demo_run.query("SELECT count(*) FROM evaluator_results WHERE run = 'demo'") == [(2,)]


def test_evaluate_run_reads_playwright_traces_like_the_import(demo_run, wv_dir: Path) -> None:
    """A run whose task holds trace.zip (no network.har) re-scores from that trace, as evaluate_task does."""
    import zipfile

    from webarena_verified.api.webarena_verified import WebArenaVerified

    run_dir = Path(demo_run.query("SELECT source_path FROM runs WHERE name = 'demo'")[0][0])
    for t in (107, 108):
        har = run_dir / str(t) / "network.har"
        entries = orjson.loads(har.read_bytes())["log"]["entries"]
        with zipfile.ZipFile(run_dir / str(t) / "trace.zip", "w") as zf:
            zf.writestr(
                "trace.network",
                b"\n".join(orjson.dumps({"type": "resource-snapshot", "snapshot": e}) for e in entries),
            )
        har.unlink()
    evaluate_run(demo_run, "demo", workers=1)
    mine = dict(demo_run.query("SELECT task_id, status FROM evaluations WHERE run = 'demo'"))
    oracle = WebArenaVerified(config=wv_dir / "config.demo.json")
    theirs = {
        t: oracle.evaluate_task(
            task_id=t,
            agent_response=run_dir / str(t) / "agent_response.json",
            network_trace=run_dir / str(t) / "trace.zip",
        ).status.value
        for t in (107, 108)
    }
    assert mine == theirs and "success" in theirs.values()


def test_export_matches_official_cli_output(demo_run, official_demo_results: Path, tmp_path: Path) -> None:
    evaluate_run(demo_run, "demo", workers=1)
    out = tmp_path / "export"
    assert export_eval(demo_run, "demo", out) == 2
    for t in (107, 108):
        ours = json.loads((out / str(t) / "eval_result.json").read_text())
        theirs = json.loads((official_demo_results / str(t) / "eval_result.json").read_text())
        assert ours.keys() == theirs.keys()
        for mine, official in zip(ours["evaluators_results"], theirs["evaluators_results"], strict=True):
            assert mine.keys() == official.keys()
        drop = ("evaluators_results",)
        assert {k: v for k, v in ours.items() if k not in drop} == {
            k: v for k, v in theirs.items() if k not in drop
        }
    ours = json.loads((out / "eval_results.json").read_text())
    theirs = json.loads((official_demo_results / "eval_results.json").read_text())
    ours.pop("timestamp"), theirs.pop("timestamp")
    assert ours == theirs
    assert "per_site" in ours["summary"]


@pytest.mark.slow
def test_bad_inputs_are_one_line_errors(demo_run, tmp_path: Path) -> None:
    with pytest.raises(NotFound, match="no run named"):
        evaluate_run(demo_run, "nope")
    bad = tmp_path / "config.json"
    bad.write_text("{not json")
    with pytest.raises(InputError, match="config.json: not a JSON config"):
        evaluate_run(demo_run, "demo", config=bad)
    bad.write_text('{"environments": {"__NOPE__": {"urls": ["http://x"]}}}')
    with pytest.raises(InputError, match="invalid webarena-verified config"):
        evaluate_run(demo_run, "demo", config=bad)
    with pytest.raises(InputError, match="no official evaluations"):
        export_eval(demo_run, "demo", tmp_path / "out")
    assert demo_run.query("SELECT count(*) FROM evaluations") == [(0,)]


def test_broken_trace_is_an_error_not_a_failure(wv_dir: Path) -> None:
    response = (wv_dir / "demo-run" / "108" / "agent_response.json").read_text()
    [empty, junk] = score_inputs(
        [
            ScoringInput(task_id=108, agent_response=response, har_entries=[]),
            ScoringInput(task_id=108, agent_response=response, har_entries=[{"no": "request"}]),
        ],
        config=wv_dir / "config.demo.json",
        workers=1,
    )
    assert empty.status == "error" and empty.score is None and empty.error
    assert junk.status == "error" and junk.error


@pytest.mark.slow
def test_cannot_pass_set_is_rederived(wv_dir: Path) -> None:
    """docs/cannot-pass.md: feed every task its own expected answer; the engine must reject exactly these."""
    tasks = orjson.loads(verified_dataset_path().read_bytes())
    entries = orjson.loads((wv_dir / "demo-run" / "107" / "network.har").read_bytes())["log"]["entries"]
    scores = score_inputs(
        [
            ScoringInput(task_id=t["task_id"], agent_response=expected_answer(t["eval"]), har_entries=entries)
            for t in tasks
        ],
        config=wv_dir / "config.demo.json",
        workers=2,
    )
    assert len(scores) == 812
    assert set(cannot_pass_evidence(scores)) == CANNOT_PASS
    assert {s.task_id for s in scores if s.cannot_pass} == CANNOT_PASS


def test_the_engine_gets_one_event_only_when_it_reads_no_trace(wv_dir: Path, monkeypatch) -> None:
    """With every site's URL in the config, a task without a network evaluator is scored on the trace's
    first event, with the official result on the whole file; a task with one, or a config lacking a
    site (the engine then takes URLs from the trace), gets every entry."""
    from webarena_verified.api.webarena_verified import WebArenaVerified
    from webarena_verified.types.config import WebArenaVerifiedConfig

    from core.scoring import engine

    dataset = orjson.loads(verified_dataset_path().read_bytes())
    sites = {site for task in dataset for site in task["sites"]}
    config = {"environments": {f"__{site.upper()}__": {"urls": ["http://localhost:7780"]} for site in sites}}
    full = engine._Engine(config)
    reads = {
        t["task_id"] for t in dataset if any(e["evaluator"] == "NetworkEventEvaluator" for e in t["eval"])
    }
    assert len(dataset) - len(reads) == 324  # docs/limits.md: tasks scored on one event with such a config
    assert {t["task_id"] for t in dataset if full.reads_trace(t["task_id"])} == reads
    demo = engine._Engine(orjson.loads((wv_dir / "config.demo.json").read_bytes()))
    assert demo.reads_trace(107) and 107 not in reads

    seen: list[int] = []
    build = engine._network_trace
    monkeypatch.setattr(engine, "_network_trace", lambda entries: seen.append(len(entries)) or build(entries))
    har = wv_dir / "demo-run" / "107" / "network.har"
    entries = orjson.loads(har.read_bytes())["log"]["entries"]
    response = (wv_dir / "demo-run" / "107" / "agent_response.json").read_text()
    official = WebArenaVerified(config=WebArenaVerifiedConfig.model_validate(config)).evaluate_task(
        task_id=107, agent_response=response, network_trace=har
    )
    ours = full.score(ScoringInput(task_id=107, agent_response=response, har_entries=entries))
    assert seen == [1]
    assert (ours.status, ours.score) == (official.status.value, official.score)
    assert (
        ours.eval_result["evaluators_results"]
        == official.model_dump(mode="json", exclude_none=True)["evaluators_results"]
    )
    network_task = min(reads)
    full.score(ScoringInput(task_id=network_task, agent_response=response, har_entries=entries))
    demo.score(ScoringInput(task_id=107, agent_response=response, har_entries=entries))
    assert seen == [1, len(entries), len(entries)]


def test_the_dataset_is_hashed_once_per_version_of_the_file(tmp_path: Path) -> None:
    """The engine's per-task dataset checksum is computed once per (path, size, modification time): the
    same value as the engine's own function, and a rewritten file is hashed anew."""
    import hashlib
    import os

    from webarena_verified.api.internal import evaluator
    from webarena_verified.core.utils.checksum import compute_data_file_checksum

    from core.scoring.engine import OncePerFileVersion, read_config, score_chunk

    calls: list[str] = []
    once = OncePerFileVersion(
        lambda p: calls.append(str(p)) or hashlib.sha256(Path(p).read_bytes()).hexdigest()
    )
    data = tmp_path / "data.json"
    data.write_text("[1]")
    first = [once(data) for _ in range(3)]
    data.write_text("[12]")
    second = once(data)
    os.utime(data, ns=(1, 1))
    third = once(data)
    assert len(set(first)) == 1 and second != first[0] and third == second and len(calls) == 3
    with pytest.raises(FileNotFoundError):
        OncePerFileVersion(compute_data_file_checksum)(tmp_path / "missing.json")

    [score] = score_chunk(read_config(None), [ScoringInput(task_id=107, agent_response="x", har_entries=[])])
    assert isinstance(evaluator.compute_data_file_checksum, OncePerFileVersion)
    assert score.data_checksum == compute_data_file_checksum(verified_dataset_path())
