"""Offline WebArena evaluation: the original evaluators of a task re-run on what a run recorded (its final
answer and last page URL), for runs without network traces. See docs/offline-evaluation.md.

- `webarena`: the evaluators as pure functions (string_match, url_match, program_html);
- `urls`: site placeholders, so a run's hosts and the original configs' placeholders compare;
- `run`: load a stored run, evaluate, write `evaluator_results` and the offline columns of `evaluations`;
- `agreement`: how often the offline result agrees with the run's own verdict;
- `fuzzy`: the LLM questions (fuzzy_match, ua_match) through the judge's LLM stage, cached.
"""

# Run formats without network traces: the official engine cannot score them, the offline evaluators can.
# Here, not in `run`, so a WAV import can ask without importing the evaluators (about 30 ms of its write).
NO_TRACE_FORMATS = frozenset({"webarena-render", "agentlab", "jsonl", "opagent"})
