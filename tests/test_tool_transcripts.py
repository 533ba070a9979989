"""A tool-using agent's session transcript read as steps, one per tool call: the babelcloud renders
(Claude driving a browser through the GBOX MCP server, 812 tasks), checked against the renders and
against the run's own logs, which hold every result whole."""

from __future__ import annotations

import re
import statistics
from collections import Counter
from pathlib import Path

import orjson
import pytest

from core.ingest.tool_transcript import RESULT_CUT, drop_images, split_transcript
from core.ingest.webarena_render import decode_render, parse_render
from core.measure.action_grammar.tool_calls import (
    AGENT_TOOLS,
    OBSERVE_TOOLS,
    announced_action,
    executed_text,
    parse_executed,
    parse_tool_call,
    short_name,
    split_target,
)
from core.measure.judge.rules import (
    canonicalize,
    decide_stated_vs_executed,
    parse_browsergym,
    parse_webarena,
)
from core.store import Store

BABELCLOUD = ("webarena-render", "babelcloud__webarena", "gbox", "trajectories")
_LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} - \w+ - ")


@pytest.fixture
def babel(babelcloud_db: Path):
    with Store(babelcloud_db, read_only=True) as store:
        yield store


@pytest.fixture(scope="module")
def rendered(tmp_path_factory, shared_data: Path) -> dict[int, list[tuple[str, str | None]]]:
    """(model output, parsed action) of every render step, per task, straight from the render files (the
    reading kept in the build cache while the code and the files are unchanged)."""
    from build_cache import built_db

    folder = shared_data.joinpath(*BABELCLOUD) / "results_full"

    def build(path: Path) -> None:  # its source is part of the cache key
        found = {}
        for render_path in folder.glob("render_*.html"):
            render = parse_render(decode_render(render_path.read_bytes())[0])
            found[render_path.stem.removeprefix("render_")] = [
                (s.raw_output or "", s.parsed_action) for s in render.steps
            ]
        path.write_bytes(orjson.dumps(found))

    path = built_db(tmp_path_factory, "babelcloud-renders", build, [folder], "rendered.json")
    return {
        int(task): [tuple(step) for step in steps] for task, steps in orjson.loads(path.read_bytes()).items()
    }


@pytest.fixture(scope="module")
def transcripts(rendered) -> dict[int, list[str]]:
    return {t: [output for output, _ in steps] for t, steps in rendered.items()}


def _log_results(path: Path) -> list[str]:
    """Every tool result of a babelcloud log in the order logged (whole; errors too)."""
    entries: list[str] = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True):
        match = _LOG_LINE.match(line)
        if match:
            entries.append(line[match.end() :])
        elif entries:
            entries[-1] += line
    results = []
    for entry in (e.rstrip("\n") for e in entries):
        if entry.startswith("📥") and "Tool result: " in entry:
            results.append(entry.split("Tool result: ", 1)[1])
        elif entry.startswith("❌"):
            results.append(re.sub(r"^❌ \[⏱️ [\d.]+s exec\] ", "", entry))
    return results


# -- the whole run -------------------------------------------------------------------------------
def test_every_tool_call_is_one_step(babel: Store, transcripts: dict[int, list[str]]):
    calls = {
        t: sum(len(re.findall(r"^\[tool\] ", o, re.M)) for o in outputs) for t, outputs in transcripts.items()
    }
    stored = dict(
        babel.query(
            "SELECT task_id, count(*) FROM observations WHERE run = 'babelcloud' AND kind = 'transcript' GROUP BY 1"
        )
    )
    assert {t: n for t, n in calls.items() if n} == stored
    assert sum(calls.values()) == 22062
    # Issue 23's bar: most tasks have several steps, the median task many.
    per_task = dict(
        babel.query(
            "SELECT t.task_id, count(s.idx) FROM trajectories t LEFT JOIN steps s USING (run, task_id, episode)"
            " WHERE t.run = 'babelcloud' GROUP BY 1"
        )
    )
    assert len(per_task) == 812
    assert sum(n > 1 for n in per_task.values()) >= 700 and statistics.median(per_task.values()) >= 5


def test_the_harness_steps_stay_where_no_call_replaces_them(babel: Store, rendered):
    """Render steps without a transcript stay as they were; after a session without an answer call the
    harness's own `stop [...]` is kept as the last step (it is what the harness executed)."""
    kept = dict(
        babel.query(
            """SELECT s.task_id, count(*) FROM steps s WHERE s.run = 'babelcloud' AND NOT EXISTS (
                 SELECT 1 FROM observations o WHERE o.run = s.run AND o.task_id = s.task_id
                 AND o.idx = s.idx AND o.kind = 'transcript') GROUP BY 1"""
        )
    )
    expected = {}
    for task_id, steps in rendered.items():
        n = 0
        for output, parsed in steps:
            calls = re.findall(r"^\[tool\] (\S+): ", output, re.M)
            if not calls:
                n += 1  # not a session: the rendered step itself
            elif (parsed or "").startswith("stop [") and not any(c.endswith("complete_task") for c in calls):
                n += 1  # a session that never answered: the harness's stop follows its calls
        if n:
            expected[task_id] = n
    assert kept == expected
    last = dict(
        babel.query(
            "SELECT task_id, arg_max(executed_action, idx) FROM steps WHERE run = 'babelcloud' GROUP BY 1"
        )
    )
    assert last[564].startswith("mcp__task-completion__complete_task: ")  # 4 empty steps, then a session
    assert last[398] == "stop [Early stop: Failed to parse actions for 3 times]"


def test_a_session_read_step_by_step(babel: Store, transcripts: dict[int, list[str]]):
    """Task 16 (walking vs driving time): the render's one predict_action becomes 22 steps."""
    steps = babel.query_dicts("SELECT * FROM steps WHERE run = 'babelcloud' AND task_id = 16 ORDER BY idx")
    assert len(steps) == 22 and [s["idx"] for s in steps] == list(range(22))
    first, switch, close, search, typed, go = steps[:6]
    assert (first["kind"], first["verb"], first["readable"]) == ("observe", "noop", "List the open tabs")
    assert first["url"].endswith(":3000/#map=7/42.896/-75.108") and all(s["url"] is None for s in steps[1:])
    assert first["outcome"].startswith('{ "data": [ { "id": "1", "title": "New Tab"')
    assert (switch["verb"], switch["value"], switch["outcome"], switch["outcome_image"]) == (
        "tab_focus", "2", "Switched to tab 2 successfully", True,
    )  # fmt: skip
    assert (close["verb"], close["element_role"], close["element_label"]) == ("click", "button", "X")
    assert close["readable"] == (
        "Click button 'X'; target: \"X button in the top right corner of the Welcome to OpenStreetMap dialog\""
    )
    assert close["executed_action"] == (
        "mcp__gbox-browser__click: {'target': 'X button in the top right corner of the Welcome to OpenStreetMap dialog'}"
    )
    assert close["thought"].endswith("Let me close this welcome dialog first.")
    assert close["stated_action"] == "Let me close this welcome dialog first."
    assert (search["element_role"], search["element_label"]) == ("text input field", "Search")
    assert (typed["verb"], typed["value"], typed["key"]) == ("type", "5000 Fifth Avenue, Pittsburgh", None)
    assert go["stated_action"] == 'Now let me click the "Go" button to search for this location.'
    assert steps[8]["kind"] == "observe" and steps[8]["readable"] == "Take a screenshot"
    assert steps[8]["outcome"] is None and steps[8]["outcome_image"]  # only a screenshot came back
    last = steps[-1]
    assert (last["verb"], last["answer"]) == (
        "answer",
        "Walking: 1.2km, 16 minutes. Driving: 1.2km, 2 minutes.",
    )
    # The steps' parts of the transcript, joined, are the render's whole output; the AXTree stays on step 0.
    parts = babel.query(
        "SELECT content FROM observations WHERE run = 'babelcloud' AND task_id = 16 AND kind = 'transcript' ORDER BY idx"
    )
    assert "".join(c for (c,) in parts) == transcripts[16][0]
    assert babel.query(
        "SELECT idx FROM observations WHERE run = 'babelcloud' AND task_id = 16 AND kind = 'axtree'"
    ) == [(0,)]
    trajectory = babel.query_dicts(
        "SELECT n_steps, termination, final_answer FROM trajectories WHERE run = 'babelcloud' AND task_id = 16"
    )[0]
    assert trajectory == {"n_steps": 20, "termination": "answered", "final_answer": last["answer"]}


def test_outcomes_agree_with_the_results_the_logs_hold(babel: Store, shared_data: Path):
    """The transcript keeps each result's first 200 characters; the logs keep them whole. Cut alike,
    the stored outcomes are the logs' results for all but a few calls (short multi-line results whose
    later lines read as the next reasoning)."""
    stored: dict[int, list[str]] = {}
    for task_id, outcome in babel.query(
        "SELECT task_id, coalesce(outcome, '') FROM steps WHERE run = 'babelcloud' AND verb <> 'answer'"
        " AND (outcome IS NOT NULL OR outcome_image IS NOT NULL) ORDER BY task_id, idx"
    ):
        stored.setdefault(task_id, []).append(outcome)
    same = total = 0
    for log in (shared_data.joinpath(*BABELCLOUD) / "log_files").glob("task_*.log"):
        ours = stored.get(int(log.name.split("_")[1]), [])
        logged = [drop_images(r[:RESULT_CUT])[0] for r in _log_results(log)]
        logged = logged[len(logged) - len(ours) :]  # the render holds the last session
        same += sum((Counter(logged) & Counter(ours)).values())
        total += len(ours)
    assert total > 21_000 and same / total >= 0.995


def test_observe_steps_are_shown_but_not_measured(babel: Store):
    tools = Counter(
        short_name(e.split(":", 1)[0])
        for (e,) in babel.query(
            "SELECT executed_action FROM steps WHERE run = 'babelcloud' AND kind = 'observe'"
        )
    )
    assert set(tools) <= OBSERVE_TOOLS | AGENT_TOOLS and {"screenshot", "list_tabs", "wait"} <= set(tools)
    assert babel.query("SELECT DISTINCT verb FROM steps WHERE run = 'babelcloud' AND kind = 'observe'") == [
        ("noop",)
    ]
    # n_agent counts the actions only, and no alignment row is an observe step.
    counts = dict(
        babel.query(
            "SELECT task_id, count(*) FROM steps WHERE run = 'babelcloud' AND kind = 'action' GROUP BY 1"
        )
    )
    for task_id, n_agent in babel.query("SELECT task_id, n_agent FROM metrics WHERE run = 'babelcloud'"):
        assert n_agent == counts.get(task_id, 0)
    assert not babel.query(
        """SELECT 1 FROM alignment_steps a JOIN steps s ON s.run = a.run AND s.task_id = a.task_id
             AND s.episode = a.episode AND s.idx = a.agent_idx WHERE a.run = 'babelcloud' AND s.kind = 'observe'"""
    )


def test_step_metrics_are_defined_against_the_papers_gold(babel: Store):
    defined = babel.query_dicts(
        "SELECT count(ssr) AS ssr, count(rr) AS rr, count(repr) AS repr, count(ear) AS ear, count(n_gold) AS gold"
        " FROM metrics WHERE run = 'babelcloud' AND gold_set = 'gold'"
    )[0]
    assert defined["ssr"] >= 500 and defined["repr"] >= 780 and defined["ear"] >= 780
    assert defined["ssr"] <= defined["gold"]


# -- the grammar ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("target", "role", "name"),
    [
        ("Go button next to the search box", "button", "Go"),
        ("Search text input field in the top left of the page", "text input field", "Search"),
        ("Foot (OSRM) option in the dropdown menu", "option", "Foot (OSRM)"),
        ("X button to close the Welcome to OpenStreetMap dialog", "button", "X"),
        ("Add to Wish List button", "button", "Add to Wish List"),
        ("Path In-n-Out Trail, Guilford Township link", "link", "Path In-n-Out Trail, Guilford Township"),
        ("Description text area with placeholder text \"Write a description\"", "text area", "Description"),
        ("the 'Sign in' button", "button", "Sign in"),
        ("Checkbox in the row for Aero Daily Fitness Tee-XS-Brown, ID 544", "checkbox",
         "Checkbox in the row for Aero Daily Fitness Tee-XS-Brown, ID 544"),
    ],
)  # fmt: skip
def test_a_target_description_names_its_element(target, role, name):
    assert split_target(target) == (role, name)


@pytest.mark.parametrize(
    ("tool", "args", "verb", "field", "value"),
    [
        ("mcp__gbox-browser__hover", {"target": "Electronics menu item"}, "hover", "element_label", "Electronics"),
        ("mcp__gbox-browser__scroll", {"direction": "Down", "distance": "medium"}, "scroll", "value", "medium"),
        ("mcp__gbox-browser__switch_tab", {"tabId": "2"}, "tab_focus", "value", "2"),
        ("mcp__gbox-browser__close_tab", {"tabId": "1"}, "close_tab", "value", None),
        ("mcp__gbox-browser__drag", {"target": "map", "destination": "right side"}, "drag", "value", "right side"),
        ("mcp__gbox-browser__navigate", {"url": "http://x/a"}, "goto", "target_url", "http://x/a"),
        ("mcp__browser__go_back", {}, "go_back", "raw", "mcp__browser__go_back: {}"),
        ("mcp__browser__select_option", {"target": "Size dropdown", "option": "XL"}, "select", "value", "XL"),
        ("mcp__gbox-browser__click", {"target": "Row 3", "button": "right"}, "click", "element_label", "Row 3"),
    ],
)  # fmt: skip
def test_each_browser_tool_has_its_verb_and_values(tool, args, verb, field, value):
    call = parse_tool_call(tool, {"boxId": "b", **args})
    assert (call.kind, call.action.verb, getattr(call.action, field)) == ("action", verb, value)
    if args.get("direction"):
        assert call.action.direction == "down"
    if args.get("button") == "right":
        assert call.readable.startswith("Right-click")


def test_tool_calls_map_onto_the_canonical_verbs():
    box = {"boxId": "420081b1"}
    typed = parse_tool_call(
        "mcp__gbox-browser__type", {**box, "content": "Harry Potter", "pressEnterAfterType": True}
    )
    assert (typed.kind, typed.action.verb, typed.action.value, typed.action.key) == (
        "action",
        "type",
        "Harry Potter",
        "Enter",
    )
    assert typed.readable == "Type 'Harry Potter' and press Enter" and "boxId" not in typed.action.raw
    keys = parse_tool_call("mcp__gbox-browser__press_key", {**box, "keys": ["control", "a"]})
    assert (keys.action.verb, keys.action.key) == ("press", "control+a")
    double = parse_tool_call("mcp__gbox-browser__click", {**box, "target": "Row 3", "double": True})
    assert double.action.verb == "dblclick"
    assert parse_tool_call("mcp__gbox-browser__open_tab", {**box, "url": "http://x/a"}).readable == (
        "Open http://x/a in a new tab"
    )
    answer = parse_tool_call("mcp__task-completion__complete_task", {"finalAnswer": "N/A"})
    assert (answer.action.verb, answer.action.answer) == ("answer", "N/A")
    for tool in (
        "mcp__gbox-browser__screenshot",
        "mcp__gbox-browser__wait",
        "mcp__gbox-browser__list_tabs",
        "mcp__gbox-browser__start_browser_box",
        "Bash",
        "Read",
        "Write",
        "TodoWrite",
        "Task",
    ):
        assert parse_tool_call(tool, {}).kind == "observe"
    assert parse_tool_call("mcp__gbox-browser__teleport", box).action.verb == "unknown"


def test_the_executed_text_is_read_back_by_the_judge_and_by_no_other_grammar():
    text = executed_text(
        "mcp__gbox-browser__click", {"boxId": "b", "target": "Go button next to the search box"}
    )
    assert text == "mcp__gbox-browser__click: {'target': 'Go button next to the search box'}"
    assert parse_browsergym(text) is None and parse_webarena(text) is None
    assert parse_executed(text).element_label == "Go"
    canon = canonicalize(text)
    assert (canon.grammar, canon.verb, canon.label) == ("tool", "click", "go")
    assert parse_executed("click [12]") is None and parse_executed("Click link 'Go'") is None


@pytest.mark.parametrize(
    ("stated", "executed", "verdict"),
    [
        # Real statements and calls of the babelcloud run.
        ('Now let me click the "Go" button to search for this location.',
         "mcp__gbox-browser__click: {'target': 'Go button next to the search box'}", True),
        ("Let me click on the search box.",
         "mcp__gbox-browser__click: {'target': 'Search text input field in the top left of the page'}", True),
        ("I'll close this info panel first and then search for restaurants nearby.",
         "mcp__gbox-browser__click: {'target': 'X button to close the Hunt Library info panel'}", True),
        ("Let me click on this suggestion to select it.",
         "mcp__gbox-browser__click: {'target': 'Jakub Klinkovský lahwaacz dropdown option'}", True),
        ('Let me type "Sarah Miller" in the Ship-to Name field:',
         "mcp__gbox-browser__click: {'target': 'Ship-to Name text input field in the filters panel'}", True),
        ("Let me continue scrolling down to see more reviews on page 1.",
         "mcp__gbox-browser__scroll: {'direction': 'down', 'distance': 'medium'}", True),
        ("Let me press Ctrl+F.", "mcp__gbox-browser__press_key: {'keys': ['control', 'f']}", True),
        ("Let me scroll down more to see if there are more activities or comments below.",
         "mcp__gbox-browser__scroll: {'direction': 'up', 'distance': 'medium'}", False),
        ("Let me type the destination.", "mcp__gbox-browser__scroll: {'direction': 'down', 'distance': 'short'}", False),
        ('Let me type "Boston" in the field.', "mcp__gbox-browser__type: {'content': 'NYC'}", False),
    ],
)  # fmt: skip
def test_ear_compares_a_call_with_the_statement_announcing_it(stated, executed, verdict):
    assert decide_stated_vs_executed(stated, executed).verdict is verdict


def test_the_announced_action_is_the_last_sentence_announcing_one():
    thought = (
        'Perfect! I can see the search text has been entered. Now let me click the "Go" button to search.'
    )
    assert announced_action(thought) == 'Now let me click the "Go" button to search.'
    assert announced_action("If that fails, I'll try the menu.") is None and announced_action(None) is None


# -- splitting -----------------------------------------------------------------------------------
_IMAGE = "{'type': 'image', 'source': {'data': '<image_bytes_removed>', 'media_type': 'image/png', 'type': 'base64'}}"


def test_results_go_to_their_calls_in_order_of_issue():
    text = (
        "Let me look.\n"
        "[tool] mcp__gbox-browser__list_tabs: {'boxId': 'b'}\n"
        "[tool] mcp__gbox-browser__screenshot: {'boxId': 'b'}\n"
        "[result] Tabs: 2\n"
        f"[result] {_IMAGE}\n"
        "I'll ask a helper.\n"
        "[tool] Task: {'description': 'find it', 'prompt': 'Where is\\nit?'}\n"
        "[tool] Bash: {'command': 'curl x'}\n"
        "[result] <html>\n"
        "[result] It is on page 2.\n"
        "[tool] mcp__gbox-browser__click: {'boxId': 'b', 'target': 'Go button'}\n"
        "[error] Error: 500 Internal server error (HTTP 500)\n"
        "Details: {\n"
        '  "statusCode": 500\n'
        "}\n"
        "Done.\n"
    )
    calls = split_transcript(text)
    assert [c.tool for c in calls] == [
        "mcp__gbox-browser__list_tabs", "mcp__gbox-browser__screenshot", "Task", "Bash", "mcp__gbox-browser__click",
    ]  # fmt: skip
    assert [c.result for c in calls] == [
        "Tabs: 2", "", "It is on page 2.", "<html>", 'Error: 500 Internal server error (HTTP 500) Details: { "statusCode": 500 }',
    ]  # fmt: skip
    assert calls[1].images == 1 and calls[4].failed and not calls[0].failed
    assert (
        calls[0].thought == "Let me look."
        and calls[1].thought is None
        and calls[2].thought == "I'll ask a helper."
    )
    assert calls[2].args == {"description": "find it", "prompt": "Where is\nit?"}
    assert "".join(c.raw for c in calls) == text  # every character belongs to one step


def test_a_result_continues_onto_later_lines_only_where_the_200_character_cut_ends_one():
    long_result = (
        '{\n  "data": [\n' + '    {"id": "1", "title": "New Tab", "url": "chrome://new-tab-page/"},\n' * 5
    )
    cut = long_result[:RESULT_CUT]
    text = (
        f"[tool] mcp__gbox-browser__list_tabs: {{}}\n[result] {cut}\nI can see the tabs.\n[tool] Bash: {{}}\n"
    )
    calls = split_transcript(text)
    assert calls[0].result == " ".join(cut.split()) and calls[1].thought == "I can see the tabs."
    short = "[tool] mcp__gbox-browser__press_key: {'keys': ['control', 'a']}\n[result] Keys pressed successfully\n"
    short += "[tool] mcp__gbox-browser__type: {'content': 'x'}\n[result] Text typed successfully\n"
    assert [c.result for c in split_transcript(short)] == [
        "Keys pressed successfully",
        "Text typed successfully",
    ]


def test_ear_of_a_session_counts_calls_without_a_statement_as_mismatches(babel: Store):
    """A session's EAR: the announced calls the judge finds equal, over every action of the session
    (a call issued right after another has no statement: a mismatch, as the paper counts it)."""
    from core.measure.judge import Pair
    from core.measure.judge.cascade import CascadeJudge

    (task_id,) = babel.query(
        "SELECT min(task_id) FROM steps WHERE run = 'babelcloud' AND kind = 'action' AND stated_action IS NULL"
        " AND task_id IN (SELECT task_id FROM metrics WHERE run = 'babelcloud' AND ear IS NOT NULL)"
    )[0]
    steps = babel.query(
        "SELECT stated_action, executed_action FROM steps WHERE run = 'babelcloud' AND task_id = ?"
        " AND kind = 'action' ORDER BY idx",
        [task_id],
    )
    stated = [(s, e) for s, e in steps if s]
    assert 0 < len(stated) < len(steps)
    verdicts = CascadeJudge("offline").judge_many([Pair("stated_vs_executed", s, e) for s, e in stated])
    ear = babel.query("SELECT ear FROM metrics WHERE run = 'babelcloud' AND task_id = ?", [task_id])[0][0]
    assert ear == pytest.approx(sum(bool(v.verdict) for v in verdicts) / len(steps)) and ear < 1


def test_each_call_is_timed_from_the_tasks_own_log(babel: Store, shared_data: Path):
    """Task 16's log: list_tabs issued at 14:10:19.653 after 5.83 s of thinking, ran 1.47 s."""
    from datetime import datetime

    first = babel.query_dicts(
        "SELECT started_at, elapsed_s FROM steps WHERE run = 'babelcloud' AND task_id = 16 AND idx = 0"
    )[0]
    assert first == {"started_at": datetime(2025, 10, 27, 14, 10, 13, 823000), "elapsed_s": 7.3}
    timed = babel.query(
        "SELECT count(*), count(started_at), count(elapsed_s) FROM steps s WHERE run = 'babelcloud' AND EXISTS ("
        " SELECT 1 FROM observations o WHERE o.run = s.run AND o.task_id = s.task_id AND o.idx = s.idx"
        " AND o.kind = 'transcript')"
    )[0]
    assert timed[0] == timed[1] == 22062 and timed[2] >= 21_000  # calls without a logged result: no duration
    assert not babel.query("SELECT 1 FROM import_problems WHERE run = 'babelcloud' AND kind = 'log_mismatch'")
    # Within a task the calls are in time order (calls issued together share their thinking: a few ms).
    assert not babel.query(
        """SELECT 1 FROM (SELECT started_at, lag(started_at) OVER (PARTITION BY task_id ORDER BY idx) AS before
           FROM steps WHERE run = 'babelcloud' AND started_at IS NOT NULL)
           WHERE started_at < before - INTERVAL 100 MILLISECOND"""
    )


def test_a_log_whose_calls_differ_leaves_the_steps_untimed():
    from core.ingest.tool_transcript import apply_timings, read_call_timings, transcript_steps

    text = "Look.\n[tool] mcp__gbox-browser__screenshot: {}\n[result] ok\n[tool] mcp__gbox-browser__click: {'target': 'Go'}\n"
    log = [
        "2025-10-27 14:10:19,653 - INFO - 🔧 [+5.83s think] mcp__gbox-browser__screenshot({})\n",
        "2025-10-27 14:10:21,127 - INFO - 📥 [⏱️ 1.47s exec] Tool result: ok\n",
        "2025-10-27 14:10:25,000 - INFO - 🔧 [+2.00s think] mcp__gbox-browser__click({'target': 'Go'})\n",
    ]
    steps = transcript_steps(text, 0, None)
    assert apply_timings(steps, read_call_timings(log))
    assert [s.elapsed_s for s in steps] == [7.3, None] and steps[1].started_at.second == 23
    other = transcript_steps(text.replace("click", "hover"), 0, None)
    assert not apply_timings(other, read_call_timings(log)) and other[0].started_at is None
