"""WebArena render import on the real public renders in ../shared/data/webarena-render."""

from __future__ import annotations

import codecs
import re
import shutil
from collections import Counter
from pathlib import Path

import orjson
import pytest
from build_cache import built_db

from core.errors import InputError
from core.files import safe_files
from core.ingest.webarena_render import import_webarena_render, parse_render
from core.store import Store

BABELCLOUD = "babelcloud__webarena"


@pytest.fixture(scope="session")
def render_root(shared_data: Path) -> Path:
    return shared_data / "webarena-render"


@pytest.fixture(scope="session")
def render_db(tasks_db: Path, render_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every folder imported as its own run, once per session."""

    def build(path: Path) -> None:
        shutil.copy(tasks_db, path)
        with Store(path) as store:
            for folder in sorted(p for p in render_root.iterdir() if p.is_dir()):
                import_webarena_render(store, folder, folder.name)

    return built_db(tmp_path_factory, "render", build, (render_root,))


@pytest.fixture
def render_store(render_db: Path):
    with Store(render_db, read_only=True) as store:
        yield store


def _log_verdicts(log_dir: Path) -> dict[int, str]:
    """PASS/FAIL per task straight from the babelcloud logs (file name gives the task id)."""
    verdicts = {}
    for log in log_dir.glob("task_*.log"):
        task_id = int(log.name.split("_")[1])
        for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
            match = re.search(r"\[Result\] \((PASS|FAIL)\)", line)
            if match:
                verdicts[task_id] = match.group(1)
    return verdicts


def test_every_render_file_imports(render_store: Store, render_root: Path):
    files = list(render_root.rglob("render_*.html"))
    expected = Counter(p.relative_to(render_root).parts[0] for p in files)
    stored = dict(render_store.query("SELECT run, count(*) FROM trajectories GROUP BY run"))
    assert stored == dict(expected)
    assert render_store.query("SELECT count(*) FROM import_problems")[0][0] == 0


def test_babelcloud_successes_and_per_site_split_match_its_logs(render_store: Store, render_root: Path):
    verdicts = _log_verdicts(render_root / BABELCLOUD / "gbox" / "trajectories" / "log_files")
    assert len(verdicts) == 812
    sites = dict(render_store.query("SELECT task_id, site_key FROM tasks"))
    expected: dict[str, list[int]] = {}
    for task_id, verdict in verdicts.items():
        counts = expected.setdefault(sites[task_id], [0, 0])
        counts[verdict == "PASS"] += 1
    stored = render_store.query(
        "SELECT t.site_key, count(*) FILTER (WHERE e.status = 'failure'), count(*) FILTER (WHERE e.status = 'success')"
        " FROM evaluations e JOIN tasks t USING (task_id) WHERE e.run = ? AND e.source = 'source-log' GROUP BY 1",
        [BABELCLOUD],
    )
    assert {site: [fail, ok] for site, fail, ok in stored} == expected
    successes = render_store.query(
        "SELECT count(*) FILTER (WHERE success), count(*) FROM trajectories WHERE run = ?", [BABELCLOUD]
    )[0]
    assert successes == (sum(v == "PASS" for v in verdicts.values()), 812)
    assert successes[0] == 552  # the figure the data README and the repository's report give


def _trajectory(store: Store, run: str, task_id: int) -> dict:
    rows = store.query_dicts(
        "SELECT termination, termination_detail, final_answer, success, n_steps, goal FROM trajectories"
        " WHERE run = ? AND task_id = ?",
        [run, task_id],
    )
    assert len(rows) == 1
    return rows[0]


@pytest.mark.parametrize(
    ("run", "task_id", "termination", "answer", "success"),
    [
        # Files and outcomes named in the render README's table.
        (BABELCLOUD, 398, "early_stop", None, False),
        (BABELCLOUD, 746, "early_stop", None, True),  # early stop, yet PASS (program_html evaluation)
        (BABELCLOUD, 22, "na_answer", "N/A", True),
        (BABELCLOUD, 147, "na_answer", "N/A", False),
        (BABELCLOUD, 23, "answered", "Rachel, T. Gannon", True),
        (BABELCLOUD, 256, "answered", "http://web.cmoa.org", False),
        ("HuiyuanYan__webarena", 6, "na_answer", "'N/A'", None),
        ("HuiyuanYan__webarena", 0, "early_stop", None, None),
        ("HuiyuanYan__webarena", 9, "error", None, None),  # no stop; error.txt records a crash
        ("neelkandlikar__webarena", 3, "interrupted", None, None),  # no stop, no error recorded
        ("AdaDTur__Safe-Arena", 0, "interrupted", None, None),  # header only
        ("OpenLemur__webarena", 0, "answered", "Sprite Stasis Ball 65 cm", None),
    ],
)
def test_terminations_follow_the_readme(render_store, run, task_id, termination, answer, success):
    t = _trajectory(render_store, run, task_id)
    assert (t["termination"], t["final_answer"], t["success"]) == (termination, answer, success)
    if termination == "early_stop":
        assert t["termination_detail"] == "Failed to parse actions for 3 times"


def test_renders_without_tool_transcripts_keep_one_step_per_rendered_step(
    render_store: Store, render_root: Path
):
    """Only babelcloud's outputs are tool-using sessions; every other render's steps are its rendered
    steps, one each, as before tool transcripts were split."""
    for folder in sorted(p for p in render_root.iterdir() if p.is_dir() and p.name != BABELCLOUD):
        rendered = {}
        for path in folder.rglob("render_*.html"):
            render = parse_render(path.read_text(encoding="utf-8", errors="replace"))
            rendered[int(path.stem.removeprefix("render_"))] = [s.parsed_action or None for s in render.steps]
        stored: dict[int, list] = {}
        for task_id, executed, kind in render_store.query(
            "SELECT task_id, executed_action, kind FROM steps WHERE run = ? ORDER BY task_id, idx",
            [folder.name],
        ):
            assert kind == "action"
            stored.setdefault(task_id, []).append(executed)
        assert stored == {t: steps for t, steps in rendered.items() if steps}, folder.name
    kinds = render_store.query("SELECT DISTINCT kind FROM observations WHERE run <> ?", [BABELCLOUD])
    assert "transcript" not in {k for (k,) in kinds}


def test_the_transcript_bench_counts_harness_steps_and_their_transcripts(
    render_store: Store, render_root: Path
):
    """bench_transcript_metrics printed '873 rendered steps' beside 22,133 stored ones without saying why:
    the 873 are the harness's steps in babelcloud's renders, most of them one tool-using session's whole
    transcript, which the import splits into one step per tool call; a render without one keeps its steps."""
    from bench.bench_transcript_metrics import harness_steps
    from core.ingest.webarena_render import decode_render, find_renders

    renders = {
        int(p.stem.removeprefix("render_")): parse_render(decode_render(p.read_bytes())[0])
        for p in find_renders(render_root / BABELCLOUD)
    }
    shown, transcripts = harness_steps(list(renders.values()))
    stored = dict(
        render_store.query("SELECT task_id, count(*) FROM steps WHERE run = ? GROUP BY 1", [BABELCLOUD])
    )
    split = {t for (t,) in render_store.query(
        "SELECT DISTINCT task_id FROM observations WHERE run = ? AND kind = 'transcript'", [BABELCLOUD])}  # fmt: skip
    assert shown == sum(len(r.steps) for r in renders.values()) and 0 < transcripts == len(split) < shown
    kept = [t for t in renders if t not in split]
    assert kept and all(stored.get(t, 0) == len(renders[t].steps) for t in kept)
    assert sum(stored.values()) > 10 * shown  # the split, not a miscount, makes the stored steps many more


def test_crash_detail_comes_from_error_txt(render_store: Store, render_root: Path):
    detail = _trajectory(render_store, "HuiyuanYan__webarena", 9)["termination_detail"]
    error_txt = (render_root / "HuiyuanYan__webarena" / "results" / "error.txt").read_text(encoding="utf-8")
    assert detail.startswith("[Unhandled Error]") and detail in error_txt


def test_step_fields_of_a_multi_step_render(render_store: Store):
    steps = render_store.query_dicts(
        "SELECT idx, url, executed_action, verb, element_id, element_role, element_label, value, key,"
        " direction, answer, stated_action, readable FROM steps WHERE run = 'Ziha0-Zhang__webarena' ORDER BY idx"
    )
    assert len(steps) == 14
    first = steps[0]
    assert first["executed_action"].startswith("click [1096] where [1096] is [1096] button 'All Store Views'")
    assert (first["verb"], first["element_id"], first["element_role"], first["element_label"]) == (
        "click", "1096", "button", "All Store Views",
    )  # fmt: skip
    assert first["stated_action"] == "click [1096]"
    assert first["url"].startswith("http://") and "/admin" in first["url"]
    typed = [s for s in steps if s["verb"] == "type"]
    assert [s["value"] for s in typed] == ["Year", "01/01/2022", "12/31/2022"]
    assert any(s["verb"] == "press" and s["key"] == "ArrowDown" for s in steps)
    assert any(s["verb"] == "scroll" and s["direction"] == "down" for s in steps)
    assert steps[-1]["verb"] == "answer" and steps[-1]["answer"] == "Quest Lumaflex™ Band"
    # The icon glyph of `link '\ue60a REPORTS'` is not part of the label.
    assert any(s["element_label"] == "REPORTS" for s in steps)


def test_observations_and_goal_come_from_the_render(render_store: Store):
    obs = render_store.query(
        "SELECT content FROM observations WHERE run = 'DEM1TASSE__webarena' AND kind = 'axtree' AND idx = 0"
    )[0][0]
    assert obs.startswith("Tab 0 (current): Dashboard / Magento Admin")
    assert "[1] RootWebArea 'Dashboard / Magento Admin'" in obs
    row = render_store.query_dicts(
        "SELECT goal, task_config->'eval'->'reference_answers'->>'exact_match' AS ref FROM trajectories"
        " WHERE run = 'DEM1TASSE__webarena'"
    )[0]
    assert row == {"goal": "What is the top-1 best-selling product in 2022", "ref": "Quest Lumaflex™ Band"}


def test_unparsed_outputs_and_step_errors(render_store: Store):
    steps = render_store.query_dicts(
        "SELECT idx, executed_action, verb, error FROM steps WHERE run = 'HuiyuanYan__webarena' AND task_id = 4"
        " ORDER BY idx"
    )
    assert [s["executed_action"] for s in steps[:3]] == ["none", "none", "none"]
    # The harness's corrective text on the next step is the failed step's error.
    assert all(s["error"].startswith("The previous prediction you issued") for s in steps[:3])
    assert steps[-1]["error"] is None


def test_pasted_markup_does_not_swallow_the_file(render_root: Path):
    # render_10's tool output contains a <style> tag: a plain HTML parse loses its parsed_action.
    path = render_root / BABELCLOUD / "gbox" / "trajectories" / "results_full" / "render_10.html"
    html = path.read_text(encoding="utf-8")
    render = parse_render(html)
    assert len(render.steps) == html.count("<h2>New Page</h2>")
    assert render.steps[-1].parsed_action.startswith("stop [4200 Genesee Street")
    assert "<style" in render.steps[-1].raw_output  # the pasted markup is kept as text


def test_variant_renderer_keeps_the_first_ranked_candidate(render_store: Store):
    steps = render_store.query(
        "SELECT executed_action FROM steps WHERE run = 'neelkandlikar__webarena' ORDER BY idx"
    )
    assert len(steps) == 5
    assert steps[-1][0].startswith("click [336]")


def test_reimport_is_identical(tasks_store: Store, render_root: Path):
    folder = render_root / "HuiyuanYan__webarena"
    tables = ("trajectories", "steps", "observations", "evaluations", "import_problems")

    def snapshot():
        return {t: sorted(map(repr, tasks_store.query(f"SELECT * FROM {t} WHERE run = 'r'"))) for t in tables}

    import_webarena_render(tasks_store, folder, "r")
    first = snapshot()
    import_webarena_render(tasks_store, folder, "r")
    assert snapshot() == first
    assert tasks_store.query("SELECT count(*) FROM runs WHERE name = 'r'")[0][0] == 1


def test_merge_log_and_explicit_logs(tasks_store: Store, render_root: Path, tmp_path: Path):
    # One merge_log.txt in the original layout: config path gives the task id, the last verdict wins.
    renders = tmp_path / "renders"
    renders.mkdir()
    for task_id in (0, 22):
        shutil.copy(
            render_root / BABELCLOUD / "gbox/trajectories/results_full" / f"render_{task_id}.html", renders
        )
    merge = tmp_path / "merge_log.txt"
    merge.write_text(
        "2023-08-08 02:08:34,000 - INFO - [Config file]: config_files/0.json\n"
        "2023-08-08 02:09:34,500 - INFO - [Result] (FAIL) config_files/0.json\n"
        "2023-08-08 03:00:00,000 - INFO - [Config file]: config_files/22.json\n"
        "2023-08-08 03:00:10,000 - INFO - [Result] (PASS) config_files/22.json\n",
        encoding="utf-8",
    )
    summary = import_webarena_render(tasks_store, renders, "m", logs=merge)
    assert (summary.n_pass, summary.n_fail) == (1, 1)
    rows = dict(tasks_store.query("SELECT task_id, success FROM trajectories WHERE run = 'm'"))
    assert rows == {0: False, 22: True}
    assert (
        tasks_store.query("SELECT elapsed_s FROM trajectories WHERE run = 'm' AND task_id = 0")[0][0] == 60.5
    )


def test_html_that_is_not_a_render_is_a_problem(tasks_store: Store, render_root: Path, tmp_path: Path):
    folder = tmp_path / "run"
    folder.mkdir()
    shutil.copy(render_root / "DEM1TASSE__webarena" / "your_result_dir" / "render_0.html", folder)
    (folder / "render_5.html").write_text("<html><body><p>hello</p></body></html>", encoding="utf-8")
    (folder / "render_x.html").write_text("<html></html>", encoding="utf-8")
    summary = import_webarena_render(tasks_store, folder, "p")
    assert summary.n_tasks == 1
    kinds = dict(tasks_store.query("SELECT kind, task_id FROM import_problems WHERE run = 'p'"))
    assert kinds == {"not_a_render": 5, "bad_file_name": None}


def test_bad_directories_are_one_line_errors(tasks_store: Store, tmp_path: Path):
    with pytest.raises(InputError, match="not a directory"):
        import_webarena_render(tasks_store, tmp_path / "missing", "x")
    with pytest.raises(InputError, match="no render_<task_id>.html files"):
        import_webarena_render(tasks_store, tmp_path, "x")
    assert tasks_store.query("SELECT count(*) FROM runs")[0][0] == 0


# The harness's own markers around a step's raw output, action repr and readable action (upstream RenderHelper).
_RAW = "<div class='raw_parsed_prediction' style='background-color:grey'><pre>"
_OBJ = "</pre></div><div class='action_object' style='background-color:grey'><pre>"
_PARSED = "</pre></div><div class='parsed_action' style='background-color:yellow'><pre>"
_END = "</pre></div></div>"


def test_step_texts_are_the_files_bytes_between_the_harness_markers(render_root: Path):
    # Nothing is HTML-escaped in a render, so `&amp;`, `&bull;`, `&currency=` are what the model wrote
    # (render_9's goto URL, render_544's answer): no entity may be decoded on the way in.
    checked = 0
    for path in sorted(render_root.rglob("render_*.html")):
        html = path.read_text(encoding="utf-8")
        render = parse_render(html)
        blocks = html.split("<h2>New Page</h2>")[1:]
        assert len(blocks) == len(render.steps), path
        for block, step in zip(blocks, render.steps, strict=True):
            start = block.find(_RAW)
            if start < 0:
                continue
            obj = block.find(_OBJ, start)
            parsed = block.find(_PARSED, obj)
            end = block.find(_END, parsed)
            assert step.raw_output == block[start + len(_RAW) : obj], (path, step.parsed_action)
            assert step.parsed_action == block[parsed + len(_PARSED) : end].strip(), path
            checked += 1
    assert checked >= len(
        list((render_root / BABELCLOUD).rglob("render_*.html"))
    )  # one step per task at least


def _render_html(raw: str, parsed: str = "stop [done]", header: str = "task_id: 1\nintent: x\n") -> str:
    step = (
        "<h2>New Page</h2>\n<h3 class='url'><a href=http://h/>URL: http://h/</a></h3>\n"
        "<div class='state_obv'><pre>Tab 0 (current): t\n\n[1] RootWebArea 't'</pre><div>\n"
        "<div class='prev_action' style='background-color:pink'>None</div>\n"
        f"<div class='predict_action'>{_RAW}{raw}{_OBJ}{{'action_type': <ActionTypes.STOP: 17>}}"
        f"{_PARSED}{parsed}{_END}\n"
    )
    return f"\n<!DOCTYPE html>\n<head><style>pre {{}}</style></head>\n<html><body>\n\n<pre>{header}</pre>\n{step}</body></html>\n"


@pytest.mark.parametrize(
    "raw",
    [
        "<div><div>pasted</div></div> and the rest of the output",  # a pasted `</div></div>` closes nothing
        "<script>alert(1)</script><style>x{}</style><title>t</title><textarea>",
        "&lt;b&gt; &amp; &bull; <!-- comment --> <![CDATA[x]]> <plaintext>",
        "<pre>inside</pre></div></body></html><html><body>again",
    ],
)
def test_pasted_markup_stays_text(raw: str):
    render = parse_render(_render_html(raw))
    assert len(render.steps) == 1
    assert render.steps[0].raw_output == raw
    assert render.steps[0].parsed_action == "stop [done]"


@pytest.mark.parametrize(
    ("header", "parsed", "check"),
    [
        # Values no store can hold must not sink the whole import.
        ("task_id: 1\nintent: x\nbig: 99999999999999999999999\n", "stop [a]",
         lambda c, s: c["big"] == "99999999999999999999999"),
        ("task_id: 1\nintent: x\neval: {'reference_answers': '\\ud800'}\n", "stop [a]",
         lambda c, s: c["eval"]["reference_answers"] == "\\ud800"),
        ("task_id: 1\nintent: x\n", "click [1] where [1] is [1] button '\\udc80'",
         lambda c, s: s["element_label"] == "\\udc80"),
        # Limits: deep or huge values stay text, never reach literal_eval.
        ("task_id: 1\nintent: x\ndeep: " + "[" * 150 + "]" * 150 + "\n", "stop [a]",
         lambda c, s: c["deep"] == "[" * 150 + "]" * 150),
        ("task_id: 1\nintent: x\nhuge: [" + "1," * 60_000 + "]\n", "stop [a]",
         lambda c, s: isinstance(c["huge"], str)),
        ("task_id: 1\nintent: x\ncall: __import__('os').system('echo pwned')\n", "stop [a]",
         lambda c, s: c["call"] == "__import__('os').system('echo pwned')"),
    ],
)  # fmt: skip
def test_hostile_header_values_and_labels(tasks_store: Store, tmp_path: Path, header, parsed, check):
    (tmp_path / "render_1.html").write_text(_render_html("raw", parsed, header), encoding="utf-8")
    summary = import_webarena_render(tasks_store, tmp_path, "h")
    assert summary.n_tasks == 1 and not summary.problems
    config = orjson.loads(tasks_store.query("SELECT task_config FROM trajectories WHERE run = 'h'")[0][0])
    step = tasks_store.query_dicts("SELECT element_label FROM steps WHERE run = 'h'")[0]
    assert check(config, step)


def test_odd_encodings_names_and_sizes(tasks_store: Store, tmp_path: Path, monkeypatch):
    def html(task_id: int) -> str:
        return _render_html("raw", "stop [Quest Lumaflex™ Band]", f"task_id: {task_id}\nintent: x\n")

    (tmp_path / "render_1.html").write_bytes(html(1).encode("cp1252"))  # upstream's open() on Windows
    (tmp_path / "render_2.html").write_bytes(html(2).encode("utf-16"))
    (tmp_path / "render_3.html").write_bytes(codecs.BOM_UTF8 + html(3).encode("utf-8"))
    (tmp_path / "render_99999999999.html").write_text(html(1), encoding="utf-8")
    (tmp_path / "render_4.html").write_text(html(4) * 3, encoding="utf-8")
    monkeypatch.setitem(safe_files.LIMITS, "render", len(html(2).encode("utf-16")))
    summary = import_webarena_render(tasks_store, tmp_path, "e")
    answers = dict(tasks_store.query("SELECT task_id, final_answer FROM trajectories WHERE run = 'e'"))
    assert answers == dict.fromkeys((1, 2, 3), "Quest Lumaflex™ Band")
    kinds = sorted((p.kind, p.task_id) for p in summary.problems)
    assert kinds == [("bad_file_name", None), ("encoding", 1), ("encoding", 2), ("refused_file", 4)]
