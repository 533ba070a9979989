"""Suggested causes of failed tasks (`trajreview diagnose`): rules over stored data first, the LLM's
`diagnosis` question for what the rules leave open; the one writer of `failure_causes`.

- `taxonomy`: the cause codes, their precedence, and the reviewer label each becomes when accepted;
- `facts`: what the rules read of a run, in a few set-based queries;
- `findings`, `rules`, `rules_site`: what a rule returns, and the rules;
- `model`: the diagnosis question for what the rules leave open;
- `run`: `diagnose_run`, the one writer of `failure_causes`;
- `agreement`: the suggestions against reviewer labels (precision, recall, kappa).
"""
