"""`LLMConfig`: the server, the model and the bounds of every LLM question, from `TRAJREVIEW_LLM_*`."""

from __future__ import annotations

import os
from dataclasses import dataclass

from core.errors import InputError

ENV_PREFIX = "TRAJREVIEW_LLM_"

# How the answer's JSON shape is asked for, best first. `auto` detects what the server supports.
#   json_schema         response_format {"type": "json_schema", ...} (OpenAI, vLLM, Ollama)
#   json_object_schema  {"type": "json_object", "schema": ...}: llama-cpp-python's grammar from a schema
#   json_object         {"type": "json_object"}: valid JSON of any shape (the prompt states the shape)
#   text                no response_format; the first JSON object in the reply is parsed
MODES: tuple[str, ...] = ("json_schema", "json_object_schema", "json_object", "text")
_MODE_ALIASES = {"parse": "json_schema"}  # the name this setting had before detection existed


@dataclass(frozen=True)
class LLMConfig:
    base_url: str | None
    api_key: str
    model: str
    concurrency: int = 8  # questions in flight at once
    timeout_s: float = 60.0  # one HTTP request, time queued at the server included
    max_retries: int = 2  # per question, for 429, 408, 409, 5xx, timeouts and lost connections
    question_timeout_s: float = 120.0  # one question, its retries and back-offs included
    run_timeout_s: float = 3600.0  # all the questions of one call; 0 = no limit
    mode: str = "auto"  # auto | one of MODES (no detection)
    max_tokens: int | None = None  # replaces every kind's own output cap when set

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> LLMConfig | None:
        """TRAJREVIEW_LLM_BASE_URL / _API_KEY / _MODEL, and optional _CONCURRENCY, _TIMEOUT, _MAX_RETRIES,
        _QUESTION_TIMEOUT, _RUN_TIMEOUT, _MODE, _MAX_TOKENS. None when no model is configured: the judge
        then runs offline. A value that cannot be used is an InputError naming the variable."""
        env = dict(os.environ if env is None else env)
        model = env.get(ENV_PREFIX + "MODEL")
        if not model:
            return None
        mode = env.get(ENV_PREFIX + "MODE", "auto").strip() or "auto"
        mode = _MODE_ALIASES.get(mode, mode)
        if mode != "auto" and mode not in MODES:
            raise InputError(ENV_PREFIX + "MODE", f"{mode!r} is not auto or one of {', '.join(MODES)}")
        max_tokens = _number(env, "MAX_TOKENS", int, None)
        return cls(
            base_url=env.get(ENV_PREFIX + "BASE_URL") or None,
            # Local servers (vLLM, Ollama, llama.cpp) accept any key; the client insists on one.
            api_key=env.get(ENV_PREFIX + "API_KEY") or env.get("OPENAI_API_KEY") or "not-needed",
            model=model,
            concurrency=_number(env, "CONCURRENCY", int, cls.concurrency, minimum=1),
            timeout_s=_number(env, "TIMEOUT", float, cls.timeout_s, minimum=0.001),
            max_retries=_number(env, "MAX_RETRIES", int, cls.max_retries),
            question_timeout_s=_number(env, "QUESTION_TIMEOUT", float, cls.question_timeout_s, minimum=0.001),
            run_timeout_s=_number(env, "RUN_TIMEOUT", float, cls.run_timeout_s),
            mode=mode,
            max_tokens=max_tokens if max_tokens is None else max(1, max_tokens),
        )


def _number(env: dict[str, str], name: str, kind: type, default, *, minimum: float = 0):
    raw = env.get(ENV_PREFIX + name)
    if raw is None or not raw.strip():
        return default
    try:
        value = kind(raw)
    except ValueError:
        raise InputError(ENV_PREFIX + name, f"{raw!r} is not a number") from None
    if value < minimum:
        raise InputError(ENV_PREFIX + name, f"must be at least {minimum}")
    return value
