"""Measuring trajectories: the action grammar, the semantic judge, the paper's metrics (pure functions in
`metrics`, the run orchestration in `metrics_run`), partial-success requirements, judge agreement and
the statistics (Wilson, bootstrap, McNemar) every figure uses."""
