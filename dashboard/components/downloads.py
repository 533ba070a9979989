"""Download buttons for a table: CSV and xlsx of exactly the rows shown (never agent HTML)."""

from __future__ import annotations

import functools
import io
import re

import pandas as pd


def xlsx_bytes(df: pd.DataFrame) -> bytes:
    buffer = io.BytesIO()
    with pd.ExcelWriter(buffer, engine="openpyxl") as writer:
        df.to_excel(writer, index=False, sheet_name="table")
    return buffer.getvalue()


def table_downloads(where, df: pd.DataFrame, name: str, *, markdown: str | None = None) -> None:
    """A CSV and an xlsx button for `df`, and a Markdown button for `markdown` when given (text built by
    core, e.g. core.queries.defects.defects_markdown); `name` becomes the file name (made filesystem-safe)."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-") or "table"
    if markdown is not None:
        left, right, md = where.columns(3)
        md.download_button("Markdown", markdown.encode(), f"{stem}.md", "text/markdown",
                           key=f"md-{stem}", icon=":material/download:", on_click="ignore")  # fmt: skip
    else:
        left, right = where.columns(2)
    left.download_button("CSV", df.to_csv(index=False).encode(), f"{stem}.csv", "text/csv",
                         key=f"csv-{stem}", icon=":material/download:", on_click="ignore")  # fmt: skip
    right.download_button(
        # Built only when clicked (a callable): the workbook costs more than the page.
        "xlsx", functools.partial(xlsx_bytes, df), f"{stem}.xlsx",
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        key=f"xlsx-{stem}", icon=":material/download:", on_click="ignore",
    )  # fmt: skip
