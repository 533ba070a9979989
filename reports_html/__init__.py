"""Self-contained HTML reports (`trajreview report --html`): plotly lives here and in dashboard/, never in
core; the CLI imports this package only when asked for HTML."""
