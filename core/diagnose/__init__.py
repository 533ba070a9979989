"""Suggested causes of failed tasks (`trajreview diagnose`): rules over stored data first, the LLM's
`diagnosis` question for what the rules leave open; the one writer of `failure_causes`.

- `taxonomy`: the cause codes, their precedence, and the reviewer label each becomes when accepted.
"""
