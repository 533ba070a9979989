"""Importers, one module per source format. Each one validates and parses everything first, then
writes the whole run in one transaction through `core.ingest.writer`."""
