"""Benchmarks: `make bench` (or `python -m bench [name ...]`). Each bench_<name>.py has main()."""
