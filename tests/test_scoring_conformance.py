"""Our scoring agrees with the official webarena-verified engine on every input (the engine is the oracle).

A disagreement is a bug in how we feed the engine. Expected statuses are never hard-coded: each test
calls the official `WebArenaVerified.evaluate_task` itself, the way the official CLI does (a HAR file
path, the response text), or with the same in-memory trace when the case is built in the test. The
official verdicts on the 600-odd retrieved-data variants come from the build cache when the engine's
version and every input (the cases' text, the HAR, the config) are unchanged (tests/build_cache.py).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from urllib.parse import urlencode

import orjson
import pytest
from build_cache import built_db

from core.scoring.engine import ScoringInput, score_inputs

# One origin per site so URLs derender unambiguously.
ORIGINS = {
    "__GITLAB__": "http://localhost:8023",
    "__SHOPPING__": "http://localhost:7770",
    "__SHOPPING_ADMIN__": "http://localhost:7780/admin",
    "__REDDIT__": "http://localhost:9999",
    "__MAP__": "http://localhost:3000",
    "__WIKIPEDIA__": "http://localhost:8888",
}
MATRIX_CONFIG = {"environments": {k: {"urls": [v]} for k, v in ORIGINS.items()}}


@pytest.fixture(scope="session")
def wv_dir(shipped_data: Path) -> Path:
    return shipped_data / "webarena-verified"


@pytest.fixture(scope="session")
def official_demo(wv_dir: Path):
    """The oracle with the demo config: one WebArenaVerified per session."""
    from webarena_verified.api.webarena_verified import WebArenaVerified

    return WebArenaVerified(config=wv_dir / "config.demo.json")


@pytest.fixture(scope="session")
def official_matrix():
    from webarena_verified.api.webarena_verified import WebArenaVerified
    from webarena_verified.types.config import WebArenaVerifiedConfig

    return WebArenaVerified(config=WebArenaVerifiedConfig.model_validate(MATRIX_CONFIG))


@pytest.fixture(scope="session")
def demo_entries(wv_dir: Path) -> list[dict]:
    return orjson.loads((wv_dir / "demo-run" / "107" / "network.har").read_bytes())["log"]["entries"]


def _assertion_names(evaluator: dict) -> set[str]:
    return {a["assertion_name"] for a in evaluator.get("assertions") or ()}


# -- 1. the demo run against its stored official results ------------------------------------------------
@pytest.mark.parametrize("task_id", [107, 108])
def test_demo_run_matches_stored_official_result(
    wv_dir: Path, demo_entries: list[dict], task_id: int
) -> None:
    task_dir = wv_dir / "demo-run" / str(task_id)
    stored = json.loads((task_dir / "eval_result.json").read_text())
    [ours] = score_inputs(
        [
            ScoringInput(
                task_id=task_id,
                agent_response=(task_dir / "agent_response.json").read_text(),
                har_entries=demo_entries,
            )
        ],
        config=wv_dir / "config.demo.json",
        workers=1,
    )
    assert ours.status == stored["status"]
    assert ours.score == stored["score"]
    assert [e["evaluator_name"] for e in ours.eval_result["evaluators_results"]] == [
        e["evaluator_name"] for e in stored["evaluators_results"]
    ]
    for mine, theirs in zip(
        ours.eval_result["evaluators_results"], stored["evaluators_results"], strict=True
    ):
        assert _assertion_names(mine) == _assertion_names(theirs)
    assert [r.assertions is not None for r in ours.evaluator_results] == [
        bool(e.get("assertions")) for e in stored["evaluators_results"]
    ]


# -- 2. every retrieved-data variant of the official e2e test assets ---------------------------------------
def _retrieve_response(task, retrieved_data) -> str:
    expected = task.eval[0].expected
    return json.dumps(
        {"task_type": expected.task_type, "status": expected.status, "retrieved_data": retrieved_data}
    )


@pytest.fixture(scope="module")
def variant_cases(wv_dir: Path, official_demo) -> list[tuple[int, str, str]]:
    """(task, label, response) for every retrieved-data variant of the official test assets."""
    variants = json.loads((wv_dir / "test-assets" / "e2e_test_retrieved_data.json").read_text())
    cases = []
    for task_id, kinds in variants.items():
        task = official_demo.get_task(int(task_id))
        cases.append((int(task_id), "exact_match", _retrieve_response(task, kinds["exact_match"])))
        for group in ("valid", "invalid"):
            for name, value in kinds[group].items():
                cases.append((int(task_id), f"{group}:{name}", _retrieve_response(task, value)))
    return cases


@pytest.fixture(scope="module")
def official_variant_verdicts(wv_dir: Path, official_demo, variant_cases, tmp_path_factory) -> list[str]:
    """The official engine's status for each variant (35 s of its own HAR parsing), kept in the build cache
    under the cases' text, the HAR, the config and the engine's version: our code cannot change them."""
    har = wv_dir / "demo-run" / "107" / "network.har"
    cases = tmp_path_factory.mktemp("variant-cases") / "cases.json"
    cases.write_bytes(orjson.dumps(variant_cases))

    def build(path: Path) -> None:
        verdicts = [
            official_demo.evaluate_task(task_id=task_id, agent_response=text, network_trace=har).status.value
            for task_id, _, text in orjson.loads(cases.read_bytes())
        ]
        path.write_bytes(orjson.dumps(verdicts))

    inputs = (cases, har, wv_dir / "config.demo.json")
    built = built_db(tmp_path_factory, "official-variants", build, inputs, "verdicts.json", code=False)
    return orjson.loads(built.read_bytes())


@pytest.mark.slow
def test_every_retrieved_data_variant_agrees_with_official(
    wv_dir: Path, demo_entries: list[dict], variant_cases, official_variant_verdicts
) -> None:
    cases = variant_cases
    ours = score_inputs(
        [ScoringInput(task_id=t, agent_response=text, har_entries=demo_entries) for t, _, text in cases],
        config=wv_dir / "config.demo.json",
        workers=2,
    )
    disagreements = []
    for (task_id, label, _), mine, theirs in zip(cases, ours, official_variant_verdicts, strict=True):
        if mine.status != theirs or mine.task_id != task_id:
            disagreements.append((task_id, label, mine.status, theirs))
    assert len(cases) > 600
    assert disagreements == []
    # The agent-response evaluator alone must accept exact answers and reject invalid ones, as the
    # assets promise; this keeps the comparison above from being vacuous.
    first = {(t, label): s for (t, label, _), s in zip(cases, ours, strict=True)}
    assert any(
        s.evaluator_results[0].status == "success"
        for (_, label), s in first.items()
        if label == "exact_match"
    )
    assert any(
        s.evaluator_results[0].status == "failure" for (_, label), s in first.items() if "invalid" in label
    )


# -- 3. a network matrix from the official HAR entry template --------------------------------------------------
@pytest.fixture(scope="session")
def template(wv_dir: Path) -> dict:
    return json.loads((wv_dir / "test-assets" / "har_entry_template.json").read_text())


def _url(template_url: str) -> str:
    for placeholder, origin in ORIGINS.items():
        template_url = template_url.replace(placeholder, origin)
    return template_url


DOC_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
XHR_ACCEPT = "application/json, text/javascript, */*; q=0.01"


def _entry(
    template: dict,
    method: str,
    url: str,
    *,
    status: int = 200,
    referer: str | None = None,
    document: bool = True,
    post: dict | None = None,
    redirect: str = "",
    mime: str = "text/html",
) -> dict:
    entry = copy.deepcopy(template)
    request, response = entry["request"], entry["response"]
    request["method"], request["url"] = method, _url(url)
    headers = [h for h in request["headers"] if h["name"] not in ("Referer", "Accept")]
    headers.append({"name": "Accept", "value": DOC_ACCEPT if document else XHR_ACCEPT})
    if document and method == "GET":
        headers += [
            {"name": "sec-fetch-dest", "value": "document"},
            {"name": "sec-fetch-mode", "value": "navigate"},
            {"name": "sec-fetch-user", "value": "?1"},
        ]
    if referer is not None:
        headers.append({"name": "Referer", "value": _url(referer)})
    request["headers"] = headers
    if post is not None:
        request["postData"] = {"mimeType": "application/x-www-form-urlencoded", "text": urlencode(post)}
    response["status"], response["statusText"] = status, "OK"
    response["content"]["mimeType"] = mime
    response["redirectURL"] = _url(redirect)
    return entry


def _matrix(t: dict) -> list[tuple[str, int, list[dict]]]:
    """(case, task id, trace) against real tasks: 156 navigate with a query param, 269 navigate with an
    ignored-param pattern, 448 POST form with 302, 610 POST with a referer, 118 last_event_only,
    528 should_not_exist, 750 POST with ignored query params."""
    mr = "__GITLAB__/dashboard/merge_requests"
    profile = "__GITLAB__/-/profile"
    good_post = {"user[website_url]": "https://egg.tart.com", "utf8": "✓"}
    book = "__REDDIT__/f/books/12/to-kill-a-mockingbird-by-harper-lee"
    comment = "__REDDIT__/f/books/12/-/comment"
    comment_body = {"reply_to_submission_12[comment]": "good book!"}
    shoes = "__SHOPPING__/clothing-shoes-jewelry/women/shoes.html"
    return [
        ("nav right url", 156, [_entry(t, "GET", f"{mr}?assignee_username=byteblaze")]),
        (
            "nav wrong path",
            156,
            [_entry(t, "GET", "__GITLAB__/dashboard/issues?assignee_username=byteblaze")],
        ),
        ("nav query mismatch", 156, [_entry(t, "GET", f"{mr}?assignee_username=someone")]),
        ("nav query missing", 156, [_entry(t, "GET", mr)]),
        ("nav param order a", 156, [_entry(t, "GET", f"{mr}?assignee_username=byteblaze&state=opened")]),
        ("nav param order b", 156, [_entry(t, "GET", f"{mr}?state=opened&assignee_username=byteblaze")]),
        (
            "nav xhr not document",
            156,
            [_entry(t, "GET", f"{mr}?assignee_username=byteblaze", document=False)],
        ),
        (
            "nav then static asset",
            156,
            [
                _entry(t, "GET", f"{mr}?assignee_username=byteblaze"),
                _entry(t, "GET", "__GITLAB__/assets/application.css", mime="text/css"),
            ],
        ),
        (
            "static asset only",
            156,
            [_entry(t, "GET", "__GITLAB__/dashboard/merge_requests.js", mime="text/javascript")],
        ),
        (
            "nav right then wrong last",
            156,
            [
                _entry(t, "GET", f"{mr}?assignee_username=byteblaze"),
                _entry(t, "GET", "__GITLAB__/dashboard/todos"),
            ],
        ),
        (
            "nav redirect chain",
            156,
            [
                _entry(
                    t,
                    "GET",
                    f"{mr}?assignee_username=byteblaze",
                    status=302,
                    redirect="__GITLAB__/users/sign_in",
                ),
                _entry(t, "GET", "__GITLAB__/users/sign_in"),
            ],
        ),
        ("volatile param ignored", 269, [_entry(t, "GET", f"{shoes}?price=0-25&product_list_order=name")]),
        ("volatile param only", 269, [_entry(t, "GET", f"{shoes}?product_list_order=name")]),
        ("post 302", 448, [_entry(t, "POST", profile, status=302, post=good_post, redirect=profile)]),
        ("post 200 instead of 302", 448, [_entry(t, "POST", profile, status=200, post=good_post)]),
        ("get instead of post", 448, [_entry(t, "GET", profile, status=302, redirect=profile)]),
        (
            "post body mismatch",
            448,
            [_entry(t, "POST", profile, status=302, post={"user[website_url]": "https://wrong.example"})],
        ),
        (
            "post redirect chain",
            448,
            [
                _entry(t, "POST", profile, status=302, post=good_post, redirect=profile),
                _entry(t, "GET", profile),
            ],
        ),
        (
            "match earlier, any event counts",
            448,
            [
                _entry(t, "POST", profile, status=302, post=good_post, redirect=profile),
                _entry(t, "POST", profile, status=302, post={"user[website_url]": "https://later.example"}),
            ],
        ),
        (
            "wrong path post",
            448,
            [_entry(t, "POST", "__GITLAB__/-/profile/account", status=302, post=good_post)],
        ),
        ("referer right", 610, [_entry(t, "POST", comment, status=302, referer=book, post=comment_body)]),
        ("referer missing", 610, [_entry(t, "POST", comment, status=302, post=comment_body)]),
        (
            "referer wrong",
            610,
            [
                _entry(
                    t,
                    "POST",
                    comment,
                    status=302,
                    referer="__REDDIT__/f/books/12/other-book",
                    post=comment_body,
                )
            ],
        ),
        (
            "last_event_only match last",
            118,
            [
                _entry(t, "GET", "__SHOPPING__/electronics.html"),
                _entry(t, "GET", "__SHOPPING__/dental-night-guard-pack.html"),
            ],
        ),
        (
            "last_event_only match earlier",
            118,
            [
                _entry(t, "GET", "__SHOPPING__/dental-night-guard-pack.html"),
                _entry(t, "GET", "__SHOPPING__/mouth-guard-for-sports.html", status=404),
            ],
        ),
        ("should_not_exist absent", 528, [_entry(t, "GET", "__SHOPPING__/contact")]),
        (
            "should_not_exist present",
            528,
            [_entry(t, "POST", "__SHOPPING__/contact/index/post", status=302, post={"comment": "hi"})],
        ),
        (
            "ignored query param",
            750,
            [
                _entry(
                    t,
                    "POST",
                    "__GITLAB__/api/v4/projects/42/invitations?serializer=x",
                    status=201,
                    document=False,
                    post={"user_id": "278", "access_level": "30"},
                )
            ],
        ),
    ]


def _expected_response(official, task_id: int) -> str:
    expected = official.get_task(task_id).eval[0].expected
    return json.dumps({"task_type": expected.task_type, "status": expected.status, "retrieved_data": None})


def test_network_matrix_agrees_with_official(template: dict, official_matrix) -> None:
    from webarena_verified.types.tracing import NetworkTrace

    matrix = _matrix(template)
    responses = {task_id: _expected_response(official_matrix, task_id) for _, task_id, _ in matrix}
    ours = score_inputs(
        [
            ScoringInput(task_id=task_id, agent_response=responses[task_id], har_entries=trace)
            for _, task_id, trace in matrix
        ],
        config=MATRIX_CONFIG,
        workers=1,
    )
    rows = []
    for (case, task_id, trace), mine in zip(matrix, ours, strict=True):
        theirs = official_matrix.evaluate_task(
            task_id=task_id, agent_response=responses[task_id], network_trace=NetworkTrace.from_content(trace)
        )
        per_evaluator = [str(e.status) for e in theirs.evaluators_results]
        rows.append(
            (
                case,
                mine.status,
                theirs.status.value,
                [r.status for r in mine.evaluator_results],
                per_evaluator,
            )
        )
    assert [r for r in rows if r[1] != r[2] or r[3] != r[4]] == []
    # The matrix exercises both outcomes of the network evaluators.
    network_statuses = {s for r in rows for s in r[3][1:]}
    assert {"success", "failure"} <= network_statuses


@pytest.mark.slow
def test_network_matrix_through_the_importer_agrees_with_official(
    template: dict, official_matrix, tasks_store, tmp_path: Path
) -> None:
    """The same matrix as HAR files imported with `import wav-run`: our own HAR parser, the static-asset
    cut and the stored rows must not change a single verdict."""
    from core.ingest.wav_run import import_wav_run

    matrix = _matrix(template)
    config = tmp_path / "matrix-config.json"
    config.write_text(json.dumps(MATRIX_CONFIG))
    disagreements, seen = [], set()
    for n, (case, task_id, trace) in enumerate(matrix):
        run_dir = tmp_path / f"case{n}"
        task_dir = run_dir / str(task_id)
        task_dir.mkdir(parents=True)
        response = _expected_response(official_matrix, task_id)
        (task_dir / "agent_response.json").write_text(response)
        har = task_dir / "network.har"
        har.write_bytes(orjson.dumps({"log": {"version": "1.2", "entries": trace}}))
        import_wav_run(tasks_store, run_dir, f"case{n}", config=config, workers=1)
        mine = tasks_store.query("SELECT status FROM evaluations WHERE run = ?", [f"case{n}"])[0][0]
        theirs = official_matrix.evaluate_task(task_id=task_id, agent_response=response, network_trace=har)
        seen.add(mine)
        if mine != theirs.status.value:
            disagreements.append((case, task_id, mine, theirs.status.value))
        stored = tasks_store.query("SELECT count(*) FROM network_events WHERE run = ?", [f"case{n}"])[0][0]
        assert stored == len(trace), case
    assert disagreements == []
    assert len(matrix) >= 15 and {"success", "failure"} <= seen


def test_no_secret_of_a_hostile_har_reaches_the_database(
    template: dict, official_matrix, tasks_store, tmp_path: Path
) -> None:
    """Secrets in user info, query strings (percent-encoded names too), fragments, Referer headers,
    cookies and form bodies stay out of every table: stored events, and the engine's own report
    (`actual`, explanations) of failing network evaluators, which quote the events they looked at."""
    from core.ingest.wav_run import import_wav_run

    mr = "__GITLAB__/dashboard/merge_requests"
    secrets = {
        "userinfo": "Pw-userinfo-1",
        "query": "Tok-query-22",
        "encoded": "Pw-encoded-333",
        "fragment": "Tok-fragment-4",
        "referer": "Fk-referer-55",
        "cookie": "Ck-cookie-666",
        "body": "Pw-body-7777",
    }
    nav = _entry(
        template,
        "GET",
        f"{mr}?assignee_username=someone&private_token={secrets['query']}&p%61ssword={secrets['encoded']}"
        f"#access_token={secrets['fragment']}",
        referer=f"__GITLAB__/?form_key={secrets['referer']}",
    )
    nav["request"]["url"] = nav["request"]["url"].replace("://", f"://root:{secrets['userinfo']}@")
    nav["request"]["headers"].append({"name": "Cookie", "value": f"_gitlab_session={secrets['cookie']}"})
    post = _entry(
        template, "POST", "__GITLAB__/-/profile", post={"user[website_url]": "x", "password": secrets["body"]}
    )
    config = tmp_path / "matrix-config.json"
    config.write_text(json.dumps(MATRIX_CONFIG))
    for task_id, trace in ((156, [nav]), (448, [post, nav])):
        task_dir = tmp_path / str(task_id) / str(task_id)
        task_dir.mkdir(parents=True)
        response = _expected_response(official_matrix, task_id)
        (task_dir / "agent_response.json").write_text(response)
        har = task_dir / "network.har"
        har.write_bytes(orjson.dumps({"log": {"version": "1.2", "entries": trace}}))
        import_wav_run(tasks_store, task_dir.parent, f"hostile{task_id}", config=config, workers=1)
        mine = tasks_store.query("SELECT status FROM evaluations WHERE run = ?", [f"hostile{task_id}"])
        theirs = official_matrix.evaluate_task(task_id=task_id, agent_response=response, network_trace=har)
        assert mine == [(theirs.status.value,)] == [("failure",)]
    text = "\n".join(
        json.dumps(tasks_store.query(f'SELECT COLUMNS(*)::VARCHAR FROM "{table}"'), default=str)
        for table in tasks_store.tables()
    )
    assert "localhost:8023/dashboard/merge_requests" in text  # the events are stored, only redacted
    assert [name for name, secret in secrets.items() if secret in text] == []
