"""Secrets found by value (core/files/redaction.py): signed-URL parameters, OAuth codes, API keys, credential
objects, token shapes, passwords in free text stay out of the database; ordinary ids the evaluators
compare stay as they are; and the engine's verdicts on the conformance corpus do not change."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
import test_scoring_conformance as conformance
from test_scoring_conformance import MATRIX_CONFIG, _entry, _expected_response, _matrix

from core.files.network_events import network_events_table
from core.files.redaction import looks_secret, redact_report


def _event_rows(run: str, task_id: int, entries) -> list[dict]:
    """`network_events` rows of one task's trace as dicts (seq = index of the entry)."""
    return network_events_table(run, task_id, entries).to_pylist()


# The conformance corpus's fixtures (real tasks, the official HAR entry template, the official engine).
template = conformance.template
official_matrix = conformance.official_matrix
wv_dir = conformance.wv_dir

# Planted values: random-looking, as real signatures, codes and keys are.
SECRETS = {
    "amz_credential": "AKIAIOSFODNN7EXAMPLE/20250101/us-east-1/s3/aws4_request",
    "amz_signature": "9f2c1e7b4a6d8c0e2f4a6b8d0c2e4f6a8b0d2c4e6f8a0b2c4d6e8f0a2b4c6d8e",
    "amz_token": "IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJHMEUCIQDx",
    "sig": "sv2024Xq8ZkP3mN7rT1wY5bH9cJ4dF6gL0",
    "api_key": "AIzaSyD4x7Qk9Lm2Np8Rt5Vw1Yz3Bc6Ef0Gh",
    "oauth_code": "4/0AeanS0bKx9qL2mP7rT3vW8yZ1cF5hJ6k",
    "client_secret": "GOCSPX-8kQ2mP7rT3vW9yZ1cF5hJ6kL0",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "aws_key_in_path": "AKIAZ7Q3X9M2P4R6T8V1",
    "github_token": "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
    "credentials_str": "deploy:Hunter2-Credentials-99",
    "credentials_nested": "Nested-Pw-8842-xyz",
    "deep_password": "Deep-Pw-1f9e-77",
    "form_client_secret": "Form-Secret-Zz81-q3",
}


def _hostile_entries(t: dict) -> list[dict]:
    s = SECRETS
    signed = (
        "__SHOPPING__/media/catalog/x.jpg?X-Amz-Algorithm=AWS4-HMAC-SHA256"
        f"&X-Amz-Credential={s['amz_credential'].replace('/', '%2F')}&X-Amz-Date=20250101T000000Z"
        f"&X-Amz-Security-Token={s['amz_token']}&X-Amz-Signature={s['amz_signature']}"
    )
    nav = _entry(t, "GET", f"__GITLAB__/oauth/callback?code={s['oauth_code']}&state=opened&sig={s['sig']}")
    api = _entry(t, "GET", f"__MAP__/api/geocode?key={s['api_key']}&q=pittsburgh", document=False)
    path_key = _entry(
        t, "GET", f"__GITLAB__/files/{s['aws_key_in_path']}/raw", referer=f"__GITLAB__/?t={s['github_token']}"
    )
    body = _entry(t, "POST", "__GITLAB__/api/v4/session", document=False)
    body["request"]["postData"] = {
        "mimeType": "application/json",
        "text": json.dumps({
            "credentials": s["credentials_str"],
            "auth_data": {"credentials": {"username": "root", "pw": s["credentials_nested"]}},
            "profile": {"a": [{"b": {"password": s["deep_password"]}}]},
            "data": s["jwt"],
        }),
    }  # fmt: skip
    form = _entry(t, "POST", "__GITLAB__/oauth/token", post={"client_secret": s["form_client_secret"]})
    return [_entry(t, "GET", signed, document=False), nav, api, path_key, body, form]


def _stored_text(rows: list[dict]) -> str:
    return json.dumps(rows, default=str)


def test_value_shaped_secrets_never_reach_network_events(template: dict) -> None:
    rows = _event_rows("r", 1, _hostile_entries(template))
    text = _stored_text(rows)
    assert [name for name, secret in SECRETS.items() if secret in text] == []
    # What is not secret stays: the algorithm, the date, the OAuth state, the search query, the paths.
    for kept in ("AWS4-HMAC-SHA256", "20250101T000000Z", "state=opened", "pittsburgh", "/oauth/callback"):
        assert kept in text, kept


ORDINARY = [
    "__SHOPPING_ADMIN__/sales/order/view/order_id/170/",
    "__SHOPPING__/catalogsearch/result/?q=yoga+pants&product_list_order=price&p=2",
    "__SHOPPING__/checkout/cart/add/uenc/aHR0cDovL2xvY2FsaG9zdA,,/product/1054/?sku=MH01-XS-Black&qty=1",
    "__GITLAB__/byteblaze/a11y-syntax-highlighting/-/issues/?state=opened&label_name[]=bug&sort=created_date",
    "__GITLAB__/api/v4/projects/42/repository/commits/7d1f3c2a9b8e4f6d0c5a1b2e3f4d5c6b7a8e9f0d",
    "__SHOPPING__/directory/currency/switch/?currency_code=EUR&country_code=US&region_code=PA",
    "__MAP__/search?query=Carnegie%20Mellon%20University#map=17/40.44/-79.94",
    "__REDDIT__/f/books/12/to-kill-a-mockingbird-by-harper-lee?key=12&hash=top",
]


def test_ordinary_ids_the_evaluators_compare_are_kept(template: dict) -> None:
    entries = [_entry(template, "GET", url) for url in ORDINARY]
    rows = _event_rows("r", 1, entries)
    assert [r["url"] for r in rows] == [e["request"]["url"] for e in entries]
    assert "[REDACTED]" not in _stored_text([{k: r[k] for k in ("url", "url_path", "query")} for r in rows])


@pytest.mark.parametrize(
    ("value", "secret"),
    [
        ("9f2c1e7b4a6d8c0e2f4a6b8d", True), ("AIzaSyD4x7Qk9Lm2Np8Rt5Vw1Yz3", True),
        ("0000000000000170", False), ("MH01-XS-Black", False), ("yoga pants and shoes 2024", False),
        ("http://localhost:7770/abc123def456", False), ("aaaaaaaaaaaaaaaaaaaaaa1", False), ("US", False),
    ],
)  # fmt: skip
def test_looks_secret_separates_tokens_from_ids(value: str, secret: bool) -> None:
    assert looks_secret(value) is secret


def test_passwords_in_free_text_bodies_are_redacted_in_reports() -> None:
    report = {
        "actual": "username=root&password=Txt-Pw-1234 remember=1",
        "body": 'login: {"user": "root", "passwd": "Json-Pw-5678"}',
        "note": "token: eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "url": "http://localhost:8023/dashboard/merge_requests?assignee_username=byteblaze",
    }
    text = json.dumps(redact_report(report))
    for secret in ("Txt-Pw-1234", "Json-Pw-5678", "eyJhbGciOiJIUzI1NiJ9"):
        assert secret not in text
    assert "username=root" in text and "assignee_username=byteblaze" in text


@pytest.mark.slow
def test_engine_verdicts_unchanged_on_the_conformance_corpus_with_secrets_planted(
    template: dict,
    official_matrix,
    tasks_store,
    tmp_path: Path,
) -> None:
    """The conformance matrix with a signed-URL event and a credentials body added to every trace,
    imported with `import wav-run`: every verdict equals the official engine's on the same file, and
    no planted secret is stored anywhere (events, evaluator reports)."""
    from core.ingest.wav_run import import_wav_run

    config = tmp_path / "matrix-config.json"
    config.write_text(json.dumps(MATRIX_CONFIG))
    extra = _hostile_entries(template)
    disagreements, seen = [], set()
    for n, (case, task_id, trace) in enumerate(_matrix(template)):
        task_dir = tmp_path / f"case{n}" / str(task_id)
        task_dir.mkdir(parents=True)
        response = _expected_response(official_matrix, task_id)
        (task_dir / "agent_response.json").write_text(response)
        har = task_dir / "network.har"
        har.write_bytes(orjson.dumps({"log": {"version": "1.2", "entries": [*extra, *trace]}}))
        import_wav_run(tasks_store, task_dir.parent, f"case{n}", config=config, workers=1)
        mine = tasks_store.query("SELECT status FROM evaluations WHERE run = ?", [f"case{n}"])[0][0]
        theirs = official_matrix.evaluate_task(task_id=task_id, agent_response=response, network_trace=har)
        seen.add(mine)
        if mine != theirs.status.value:
            disagreements.append((case, task_id, mine, theirs.status.value))
    assert disagreements == []
    assert {"success", "failure"} <= seen
    text = "\n".join(
        json.dumps(tasks_store.query(f'SELECT COLUMNS(*)::VARCHAR FROM "{table}"'), default=str)
        for table in tasks_store.tables()
    )
    assert "localhost:8023/oauth/callback" in text  # the events are stored, only redacted
    assert [name for name, secret in SECRETS.items() if secret in text] == []
