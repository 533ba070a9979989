"""docs/schema.md is the public contract: every table and every column of a fresh database is in it."""

from __future__ import annotations

import re


def _documented(repo_root) -> dict[str, set[str]]:
    """{table: column names} from docs/schema.md: `## table` headings and the first cell of table rows
    (a cell may name several columns: `run, task_id`)."""
    sections: dict[str, set[str]] = {}
    current = None
    for line in (repo_root / "docs" / "schema.md").read_text(encoding="utf-8").splitlines():
        heading = re.match(r"^## (\w+)\s*$", line)
        if heading:
            current = sections.setdefault(heading.group(1), set())
        elif current is not None and line.startswith("|") and not line.startswith("|---"):
            first = line.split("|")[1]
            current.update(name.strip(" `") for name in first.split(","))
    return sections


def test_every_table_and_column_is_documented(store, repo_root):
    documented = _documented(repo_root)
    rows = store.query(
        "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'main' ORDER BY ALL"
    )
    missing = [f"{table}.{column}" for table, column in rows if column not in documented.get(table, set())]
    assert {t for t, _ in rows} <= set(documented), "tables without a section in docs/schema.md"
    assert missing == []


def test_documentation_names_no_column_that_does_not_exist(store, repo_root):
    actual: dict[str, set[str]] = {}
    for table, column in store.query(
        "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'main'"
    ):
        actual.setdefault(table, set()).add(column)
    stale = [
        f"{table}.{column}"
        for table, columns in _documented(repo_root).items()
        if table in actual
        for column in columns - {"column"}
        if column not in actual[table]
    ]
    assert stale == []
