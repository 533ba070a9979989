"""The LLM client every question kind goes through (the judge's pairs, WebArena's fuzzy questions, the
failure diagnosis): any OpenAI-compatible server (OpenAI, vLLM, Ollama, llama.cpp).

- `config`: `LLMConfig` from `TRAJREVIEW_LLM_*`;
- `server`: what a server supports (response formats, the output-cap parameter), detected once per
  base URL and model, from its `/openapi.json` or by probe requests, never from an error's status alone;
- `kinds`: a question kind = a prompt file in `prompts/`, a JSON answer schema (pydantic) and an output
  cap sized to that answer;
- `client`: `LLMClient.ask_many`: the requests, the fallback of response formats, retries, the time
  bounds per question and per call, and the counts of what happened;
- `cache`: answers cached in the `judgments` table, so a second run asks nothing;
- `diagnosis`: the `diagnosis` question kind (suggest the cause of a failed task, with reasoning).

A question the server did not answer in time, or answered with something that does not parse against
its kind's schema, is **unresolved** ("could not decide"): never a verdict, never cached.
"""
