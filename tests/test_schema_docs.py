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


def test_docs_name_exactly_the_null_reasons_the_metrics_write(repo_root):
    """Every reason `metrics.null_reasons` can hold is in docs/metrics.md and docs/schema.md, and they
    name no other (coordinate_actions was once missing)."""
    from core.measure.metrics_run import NULL_REASONS

    metrics_doc = (repo_root / "docs" / "metrics.md").read_text(encoding="utf-8")
    paragraph = metrics_doc.split("**Why NULL**")[1].split("\n\n")[0].split("\n- ")[0]
    schema_row = next(
        line
        for line in (repo_root / "docs" / "schema.md").read_text(encoding="utf-8").splitlines()
        if line.startswith("| null_reasons |")
    )
    for text in (paragraph, schema_row):
        named = set(re.findall(r"`([a-z_0-9]+)`", text)) - {"metrics", "null_reasons"}
        assert named == set(NULL_REASONS), text


def test_every_module_and_name_the_docs_point_to_exists(repo_root):
    """A file path `core/…py` or a dotted `core.x.y[.Name]` in README or docs/ names something real (docs
    once pointed to modules that had moved)."""
    import importlib

    texts = [repo_root / "README.md", *sorted((repo_root / "docs").glob("*.md"))]
    missing = []
    for path in texts:
        text = path.read_text(encoding="utf-8")
        for file in re.findall(r"\b((?:core|dashboard|bench|tests)/[\w/]+\.py)\b", text):
            if not (repo_root / file).exists():
                missing.append(f"{path.name}: {file}")
        for dotted in re.findall(r"`((?:core|dashboard)(?:\.\w+)+)`", text):
            parts = dotted.split(".")
            for cut in range(len(parts), 0, -1):
                try:
                    obj = importlib.import_module(".".join(parts[:cut]))
                except ModuleNotFoundError:
                    continue
                for attr in parts[cut:]:
                    obj = getattr(obj, attr, None)
                if obj is None:
                    missing.append(f"{path.name}: {dotted}")
                break
            else:
                missing.append(f"{path.name}: {dotted}")
    assert missing == []
