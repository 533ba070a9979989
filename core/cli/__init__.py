"""The `trajreview` command line: a thin layer over core (one module per area)."""
