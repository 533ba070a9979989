"""Exports for other tools: every table as Parquet (`parquet`). The HTML report lives in
`dashboard.report` (it renders the dashboard's charts) and `report --html` imports it lazily."""
