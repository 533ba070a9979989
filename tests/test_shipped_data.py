"""A clone alone demos and tests: the demo set shipped in data/demo is what its README says (small,
licensed, cut byte for byte from ../shared/data, every page's case present), dependencies are declared
and checked, and a test that needs ../shared/data skips there, except under TRAJREVIEW_NO_SKIPS=1."""

from __future__ import annotations

import csv
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from demo_support import BABEL, NAV, OPAGENT, WAV

from core.ingest.demo import BABELCLOUD
from core.ingest.demo_server_error import (
    SERVER_ERROR_BASE,
    SERVER_ERROR_TASK,
    SERVER_ERROR_URL,
    TEMPLATE,
    server_error_entry,
)
from core.paths import REPO_ROOT, SHIPPED_DATA
from core.store import Store


def _recut():
    """data/demo/recut.py, the slice's task lists and its cutter (a script, not a package)."""
    spec = importlib.util.spec_from_file_location("recut", SHIPPED_DATA / "recut.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


recut = _recut()

MB = 1 << 20
SOURCES = ("webarena-verified", "oagent-run", "webarena-render/babelcloud__webarena")


def test_the_set_is_small_and_each_source_carries_its_licence_and_readme():
    size = sum(p.stat().st_size for p in SHIPPED_DATA.rglob("*") if p.is_file())
    assert size <= 20 * MB
    for source in SOURCES:
        licence = (SHIPPED_DATA / source / "LICENSE").read_text()
        assert "Apache License" in licence and "Version 2.0, January 2004" in licence, source
    for readme in ("README.md", "webarena-verified/README.md", "oagent-run/README.md",
                   "webarena-render/README.md", "gold/README.md"):  # fmt: skip
        assert (SHIPPED_DATA / readme).is_file(), readme
    # Nothing unlicensed: no AgentLab episode, no other render folder, no xlsx.
    assert not (SHIPPED_DATA / "browsergym-run").exists() and not list(SHIPPED_DATA.rglob("*.xlsx"))
    assert [p.name for p in (SHIPPED_DATA / "webarena-render").iterdir() if p.is_dir()] == [
        "babelcloud__webarena"
    ]


def test_recut_reproduces_the_slice_byte_for_byte(shared_data: Path):
    assert recut.differences(shared_data) == []
    done = subprocess.run(
        [sys.executable, str(SHIPPED_DATA / "recut.py"), "--check", "--shared", str(shared_data)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0 and "matches" in done.stdout, done.stdout + done.stderr


def test_recut_writes_the_slice_and_check_finds_any_change(shared_data: Path, tmp_path: Path):
    out = tmp_path / "demo"
    assert recut.recut(shared_data, out) == len(recut.slice_files(shared_data))
    assert recut.differences(shared_data, out) == []
    (out / recut.WAV / "config.demo.json").write_text("{}")
    (out / recut.OPAGENT / "final_results" / "999.json").write_text("[]")
    (out / recut.OPAGENT / "final_results" / "2.json").unlink()
    assert recut.differences(shared_data, out) == [
        f"extra: {recut.OPAGENT}/final_results/999.json",
        f"missing: {recut.OPAGENT}/final_results/2.json",
        f"differs: {recut.WAV}/config.demo.json",
    ]
    # All of the shared WebArena-Verified folder is cut, but its README.
    wav = {
        p.relative_to(shared_data / recut.WAV).as_posix()
        for p in (shared_data / recut.WAV).rglob("*")
        if p.is_file()
    }
    assert wav - {"README.md"} == set(recut.WAV_FILES)
    # OpAgent published no file for 782: the one babelcloud task Compare cannot pair.
    assert not (shared_data / recut.OPAGENT / "final_results" / "782.json").exists()


def test_the_slices_hold_the_tasks_recut_names():
    opagent = {int(p.stem) for p in (SHIPPED_DATA / "oagent-run" / "final_results").glob("*.json")}
    renders = {
        int(p.stem.split("_")[1]) for p in SHIPPED_DATA.joinpath(*BABELCLOUD, "results_full").glob("*.html")
    }
    logs = {int(p.name.split("_")[1]) for p in SHIPPED_DATA.joinpath(*BABELCLOUD, "log_files").glob("*.log")}
    assert opagent == set(recut.BOTH_RUNS) and len(opagent) == 33
    assert renders == logs == set(recut.BOTH_RUNS) | set(recut.BABELCLOUD_ONLY) and len(renders) == 34
    screenshots = {int(p.name[4:]) for p in (SHIPPED_DATA / "oagent-run" / "final_visual_results").iterdir()}
    assert screenshots == set(recut.SCREENSHOT_TASKS) == {26, 28, 99, 399, 414}
    for task in screenshots:
        images = list(
            (SHIPPED_DATA / "oagent-run" / "final_visual_results" / f"val_{task}" / "images").iterdir()
        )
        assert images and all(p.suffix == ".jpg" for p in images)


def test_the_one_5xx_is_the_constructed_case_the_readmes_name(demo_db: Path):
    """No recorded trace has a 5xx; the demo's only 5xx is task 374's entry, built from the official template
    on the demo run's real HAR, scored by the engine, and named as constructed in both READMEs."""
    for har in ("demo-run/107/network.har", "test-assets/network.har"):
        entries = json.loads((SHIPPED_DATA / "webarena-verified" / har).read_text())["log"]["entries"]
        statuses = {e["response"]["status"] for e in entries}
        assert statuses <= {200, 302, -1} and not any(s >= 500 for s in statuses), har
    wav = SHIPPED_DATA / "webarena-verified"
    base = json.loads(wav.joinpath(*SERVER_ERROR_BASE).read_text())["log"]["entries"]
    template = json.loads(wav.joinpath(*TEMPLATE).read_text())
    with Store(demo_db, read_only=True) as s:
        assert s.query("SELECT DISTINCT evaluator FROM evaluator_results WHERE run = ?", [WAV]) == [
            ("AgentResponseEvaluator",)
        ]
        assert (
            s.query("SELECT count(*) FROM network_events WHERE run = ? GROUP BY task_id", [WAV])
            == [(359,)] * 2
        )
        assert s.query("SELECT run, task_id, seq, status, url FROM network_events WHERE status >= 500") == [
            (NAV, SERVER_ERROR_TASK, len(base), 502, SERVER_ERROR_URL)
        ]
        # The other navigation tasks hold their real HARs whole; 374 holds 107's plus the constructed entry.
        real = len(json.loads((wav / "test-assets" / "network.har").read_text())["log"]["entries"])
        counts = s.query(
            "SELECT task_id, count(*) FROM network_events WHERE run = ? GROUP BY 1 ORDER BY 1", [NAV]
        )
        assert counts == [(157, len(base)), (SERVER_ERROR_TASK, len(base) + 1), (677, real)]
        # The engine decides: the right page, answered 502 where 200 is expected.
        [(status, nearest, explanation)] = s.query(
            "SELECT status, nearest_event_seq, explanation FROM evaluator_results"
            " WHERE run = ? AND task_id = ? AND evaluator = 'NetworkEventEvaluator'",
            [NAV, SERVER_ERROR_TASK],
        )
        assert (status, nearest) == ("failure", len(base)) and "status: expected 200, got 502" in explanation
    entry = server_error_entry(template)  # the template's request and timing fields, ours filled in
    assert (
        entry["request"]["cookies"] == template["request"]["cookies"]
        and entry["timings"] == template["timings"]
    )
    assert (entry["response"]["status"], entry["response"]["statusText"]) == (502, "Bad Gateway")
    readme = (SHIPPED_DATA / "README.md").read_text()
    assert readme.count("constructed, not recorded") == 1 and "the only constructed case" in readme
    for text in (readme, (wav / "README.md").read_text()):
        flat = " ".join(text.split())
        assert (
            f"task {SERVER_ERROR_TASK}" in flat
            and "har_entry_template.json" in flat
            and "502 Bad Gateway" in flat
        )


def test_every_page_has_its_case_in_the_shipped_demo(demo_db: Path):
    """What the data README promises the pages: both outcomes on every single site in both runs,
    multi-site tasks, flips both ways, OpAgent's 70-action cut, babelcloud's early stops and N/A answers."""
    with Store(demo_db, read_only=True) as s:
        for run in (BABEL, OPAGENT):
            by_site = s.query(
                "SELECT site_key, bool_or(status = 'success'), bool_or(status <> 'success') FROM evaluations"
                " JOIN tasks USING (task_id) WHERE run = ? GROUP BY 1",
                [run],
            )
            single = {site: (ok, ko) for site, ok, ko in by_site if "-" not in site}
            assert set(single) == {"shopping", "shopping_admin", "reddit", "gitlab", "map"}, run
            assert all(ok and ko for ok, ko in single.values()), (run, single)
            assert any("-" in site for site, _, _ in by_site), run
        flips = dict(
            s.query(
                "SELECT a.status = 'success', count(*) FROM evaluations a JOIN evaluations b USING (task_id)"
                " WHERE a.run = ? AND b.run = ? AND (a.status = 'success') <> (b.status = 'success') GROUP BY 1",
                [BABEL, OPAGENT],
            )
        )
        assert flips.get(True, 0) > 0 and flips.get(False, 0) > 0
        cut = s.query("SELECT task_id FROM trajectories WHERE run = ? AND n_steps = 70 ORDER BY 1", [OPAGENT])
        assert cut == [(148,), (335,)]
        ends = s.query("SELECT task_id, termination FROM trajectories WHERE run = ? ORDER BY 1", [BABEL])
        assert [t for t, e in ends if e == "early_stop"] == [530, 746, 782]
        assert any(e == "na_answer" for _, e in ends)


def test_demo_gold_is_ours_for_22_tasks():
    with open(SHIPPED_DATA / "gold" / "demo-gold.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == ["Task No.", "Step No.", "Text", "Alternative"]
    tasks = {int(r["Task No."]) for r in rows}
    assert len(tasks) == 22 and tasks <= set(recut.BOTH_RUNS)
    two = {int(r["Task No."]) for r in rows if r["Alternative"] == "2"}
    assert two == {340, 603}


def test_demo_gold_copies_no_row_of_the_papers_file(shared_data: Path):
    from openpyxl import load_workbook

    book = load_workbook(shared_data / "human-gold" / "Golden Human Trajectories.xlsx", read_only=True)
    theirs = {
        " ".join(str(row[2]).split()).lower() for row in book.active.iter_rows(values_only=True) if row[2]
    }
    with open(SHIPPED_DATA / "gold" / "demo-gold.csv", newline="") as handle:
        ours = {" ".join(r["Text"].split()).lower() for r in csv.DictReader(handle)}
    assert len(theirs) > 1000 and not ours & theirs


def test_readme_opens_with_the_two_commands():
    lines = (REPO_ROOT / "README.md").read_text().splitlines()
    assert lines[:5] == ["# trajreview", "", "```sh", lines[3], lines[4]] and lines[5] == "```"
    assert lines[3].startswith("make demo ") and lines[4].startswith("make test ")


@pytest.mark.slow
def test_deptry_finds_a_missing_and_an_unused_dependency(tmp_path: Path):
    """The two runs `make deps` makes pass on the tree, and the first fails once pyproject.toml forgets a
    package the code imports or declares one nothing imports."""
    deptry = [shutil.which("deptry", path=str(Path(sys.executable).parent)) or "deptry"]
    clean = subprocess.run(
        [*deptry, ".", "tests"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300
    )
    assert clean.returncode == 0, clean.stdout + clean.stderr
    groups = subprocess.run(
        [*deptry, "core", "dashboard", "--known-first-party", "core", "--known-first-party", "dashboard",
         "--optional-dependencies-dev-groups", "dev"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert groups.returncode == 0, groups.stdout + groups.stderr
    project = (REPO_ROOT / "pyproject.toml").read_text()
    broken = project.replace('    "orjson>=3.10",\n', '    "left-pad-for-python>=1",\n')
    assert broken != project
    (tmp_path / "pyproject.toml").write_text(broken)
    bad = subprocess.run(
        [*deptry, ".", "tests", "--config", str(tmp_path / "pyproject.toml"), "--no-ansi"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    out = bad.stdout + bad.stderr
    assert bad.returncode != 0
    # Undeclared: missing (DEP001), or installed only because something else needs it (DEP003), as scipy was.
    assert re.search(r"DEP00[13] 'orjson' imported but", out) and "DEP002 'left-pad-for-python'" in out


@pytest.mark.slow
def test_a_test_that_needs_the_shared_data_skips_without_it_unless_skips_are_refused(tmp_path: Path):
    env = {k: v for k, v in os.environ.items() if k not in ("TRAJREVIEW_NO_SKIPS", "PYTEST_ADDOPTS")}
    env["TRAJREVIEW_SHARED_DATA"] = str(tmp_path / "absent")
    args = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "tests/test_gold_import.py",
        "-rs",
    ]
    skipped = subprocess.run(args, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert skipped.returncode == 0, skipped.stdout
    assert "needs the whole runs in ../shared/data" in skipped.stdout
    refused = subprocess.run(args, cwd=REPO_ROOT, env={**env, "TRAJREVIEW_NO_SKIPS": "1"}, capture_output=True,
                             text=True, timeout=300)  # fmt: skip
    assert refused.returncode == 1 and "skipped tests fail this run" in refused.stdout


@pytest.mark.slow
def test_the_plain_run_leaves_the_embeddings_tests_out():
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "tests/test_judge_rules.py"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0 and "deselected" in done.stdout
    assert (
        "test_embedding_stage_is_optional" in done.stdout
        and "test_embedding_stage_only_rejects" not in done.stdout
    )
    marked = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-m", "embeddings", "tests"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert [line for line in marked.stdout.splitlines() if "::" in line] == [
        "tests/test_judge_rules.py::test_embedding_stage_only_rejects"
    ]
