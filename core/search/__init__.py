"""The full-text search index beside the database file (tantivy): written after each run import, read by
`core.queries.search`."""
