"""Read models: plain functions `(store, *args) -> DataFrame | dict | list`, shared by the CLI and the pages.

One module per area. They only read; the pages hold no SQL and call these through `dashboard.db.read`.
"""
