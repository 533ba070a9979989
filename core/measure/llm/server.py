"""What an OpenAI-compatible server supports, detected once per base URL and model, then cached for the
life of the process.

1. `GET /openapi.json` (FastAPI servers publish it: llama-cpp-python, vLLM): the `response_format` types
   the chat-completions request accepts, whether its `json_object` format takes a `schema`
   (llama-cpp-python builds a grammar from it), and whether the output cap is `max_tokens`.
2. Probe requests, best mode first (one tiny question each, no retries): the first mode the server
   answers with a JSON object is the mode used. A mode counts as unsupported only when the server refused
   it and a later mode then worked: never from an error's status alone (llama-cpp-python answers an
   unsupported `json_schema` with HTTP 500, OpenAI and vLLM with 400).

A server that cannot be reached, refuses the key or the model, or answers no probe at all raises
`ServerUnavailable`; that outcome is not cached, so the next run tries again.
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import orjson

from core.measure.llm.config import MODES, LLMConfig

_PROBE_SCHEMA = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}},
    "required": ["ok"],
    "additionalProperties": False,
}
_PROBE_MESSAGES = [
    {"role": "system", "content": "Reply with JSON only."},
    {"role": "user", "content": 'Is 3 greater than 2? Reply with JSON only: {"ok": true} or {"ok": false}'},
]
_PROBE_MAX_TOKENS = 48
_OPENAPI_MAX_BYTES = 8 * 1024 * 1024


class ServerUnavailable(Exception):
    """The server could not be used at all (unreachable, key or model refused, no probe answered)."""


@dataclass(frozen=True)
class ServerSupport:
    modes: tuple[str, ...]  # response modes the server accepts, best first
    token_param: str  # the output cap's name: max_tokens, or max_completion_tokens
    detected_by: str  # openapi+probe | probe | configured
    temperature: bool = True  # send temperature 0 (some reasoning models accept only their default)

    @property
    def mode(self) -> str:
        return self.modes[0]


_detected: dict[tuple[str, str], ServerSupport] = {}
_detected_lock = threading.Lock()


def server_support(config: LLMConfig) -> tuple[ServerSupport, int]:
    """(what the server supports, chat requests this call made to find out: 0 when cached or configured)."""
    if config.mode != "auto":
        return ServerSupport((config.mode,), "max_tokens", "configured"), 0
    key = (config.base_url or "https://api.openai.com/v1", config.model)
    with _detected_lock:  # one detection per server even when several stages start at once
        if key in _detected:
            return _detected[key], 0
        support, requests = _detect(config)
        _detected[key] = support
        return support, requests


def _detect(config: LLMConfig) -> tuple[ServerSupport, int]:
    published = _from_openapi(config)
    candidates = published[0] if published else ("json_schema", "json_object", "text")
    token_param = published[1] if published else "max_tokens"
    client = _probe_client(config)
    requests, refusals, temperature = 0, [], True
    try:
        for mode in candidates:
            for _ in range(3):
                outcome, detail = _probe(client, config, mode, token_param, temperature)
                requests += 1
                # The server names a parameter it does not take (OpenAI's reasoning models): drop or rename
                # it, once each, and ask again.
                if outcome == "token_param" and token_param == "max_tokens":
                    token_param = "max_completion_tokens"
                elif outcome == "temperature" and temperature:
                    temperature = False
                else:
                    break
            if outcome == "ok":
                modes = tuple(m for m in candidates if MODES.index(m) >= MODES.index(mode))
                how = "openapi+probe" if published else "probe"
                return ServerSupport(modes, token_param, how, temperature), requests
            if outcome == "unavailable":
                raise ServerUnavailable(detail)
            refusals.append(f"{mode}: {detail}")
    finally:
        client.close()
    raise ServerUnavailable("the server answered no probe request (" + "; ".join(refusals) + ")")


def _probe_client(config: LLMConfig):
    import openai

    return openai.OpenAI(
        base_url=config.base_url, api_key=config.api_key, timeout=config.timeout_s, max_retries=0
    )


def sampling(temperature: bool) -> dict[str, Any]:
    """Temperature 0 (the same question, the same answer) where the model accepts it."""
    return {"temperature": 0} if temperature else {}


def request_body(mode: str, token_param: str, max_tokens: int, schema: dict[str, Any], name: str) -> dict:
    """The request fields that ask for the answer's shape and cap its length."""
    body: dict[str, Any] = {token_param: max_tokens}
    if mode == "json_schema":
        body["response_format"] = {
            "type": "json_schema", "json_schema": {"name": name, "strict": True, "schema": schema}
        }  # fmt: skip
    elif mode == "json_object_schema":
        body["response_format"] = {"type": "json_object", "schema": schema}
    elif mode == "json_object":
        body["response_format"] = {"type": "json_object"}
    return body


def _probe(client, config: LLMConfig, mode: str, token_param: str, temperature: bool) -> tuple[str, str]:
    """ok | refused | token_param | temperature | unavailable, and a one-line detail."""
    import openai

    body = request_body(mode, token_param, _PROBE_MAX_TOKENS, _PROBE_SCHEMA, "probe")
    try:
        completion = client.chat.completions.create(
            model=config.model, messages=_PROBE_MESSAGES, extra_body=sampling(temperature) | body
        )
    except (openai.AuthenticationError, openai.PermissionDeniedError, openai.NotFoundError) as exc:
        return "unavailable", f"HTTP {exc.status_code}: {first_line(exc)}"
    except openai.APIStatusError as exc:
        text = str(exc)
        if exc.status_code == 400 and "max_tokens" in text and "max_completion_tokens" in text:
            return "token_param", first_line(exc)
        if exc.status_code == 400 and "temperature" in text and "max_tokens" not in text:
            return "temperature", first_line(exc)
        return "refused", f"HTTP {exc.status_code}: {first_line(exc)}"
    except openai.APIError as exc:  # connection refused, timeout, an unreadable response
        return "unavailable", f"{type(exc).__name__}: {first_line(exc)}"
    try:
        content = completion.choices[0].message.content or ""
    except (IndexError, AttributeError):
        return "refused", "a reply without a message"
    if mode != "text" and not isinstance(json_object(content), dict):
        return "refused", f"the reply was not a JSON object: {content[:80]!r}"
    return "ok", ""


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__


def json_object(content: str) -> Any:
    """The JSON value of a reply: the whole text, the inside of a ``` fence, or else the first JSON object
    in it (small models in text mode often write a sentence around it); None when there is none."""
    text = content.strip()
    if text.startswith("```"):
        text = text.strip("`").strip()
        text = text[4:] if text.lower().startswith("json") else text
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        pass
    start = text.find("{")
    if start < 0:
        return None
    try:
        return json.JSONDecoder().raw_decode(text, start)[0]
    except ValueError:
        return None


# -- /openapi.json --------------------------------------------------------------------------------------
def _from_openapi(config: LLMConfig) -> tuple[tuple[str, ...], str] | None:
    """(modes best first, the output cap's name) from the server's published OpenAPI document, or None
    when it publishes none or nothing about response formats."""
    if not config.base_url:
        return None
    parts = urlsplit(config.base_url)
    if parts.scheme not in ("http", "https"):
        return None
    origin = f"{parts.scheme}://{parts.netloc}"
    prefix = parts.path.rstrip("/").removesuffix("/v1")
    for url in dict.fromkeys([origin + prefix + "/openapi.json", origin + "/openapi.json"]):
        document = _get_json(url, min(config.timeout_s, 10.0))
        found = modes_from_openapi(document) if isinstance(document, dict) else None
        if found:
            return found
    return None


def _get_json(url: str, timeout_s: float) -> Any:
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:  # noqa: S310  (http(s) only)
            return orjson.loads(response.read(_OPENAPI_MAX_BYTES))
    except (urllib.error.URLError, OSError, ValueError):
        return None


def modes_from_openapi(document: dict[str, Any]) -> tuple[tuple[str, ...], str] | None:
    components = (document.get("components") or {}).get("schemas") or {}

    def resolve(node: Any) -> Any:
        for _ in range(20):  # a $ref chain, never a cycle
            if not (isinstance(node, dict) and isinstance(node.get("$ref"), str)):
                break
            node = components.get(node["$ref"].rsplit("/", 1)[-1], {})
        return node

    def variants(node: Any) -> list[dict[str, Any]]:
        node = resolve(node)
        if not isinstance(node, dict):
            return []
        nested = [v for key in ("anyOf", "oneOf", "allOf") for v in node.get(key) or []]
        return [node, *(found for v in nested for found in variants(v))]

    def properties(node: Any) -> dict[str, Any]:
        merged: dict[str, Any] = {}
        for variant in variants(node):
            merged.update(variant.get("properties") or {})
        return merged

    request = None
    for path, item in (document.get("paths") or {}).items():
        if str(path).rstrip("/").endswith("/chat/completions") and isinstance(item, dict):
            body = ((item.get("post") or {}).get("requestBody") or {}).get("content") or {}
            request = (body.get("application/json") or {}).get("schema")
            break
    if request is None:
        return None
    fields = properties(request)
    types: set[str] = set()
    json_object_takes_schema = False
    for variant in variants(fields.get("response_format")):
        own = variant.get("properties") or {}
        names: set[str] = set()
        for type_node in variants(own.get("type")):
            names.update(v for v in type_node.get("enum") or [] if isinstance(v, str))
            if isinstance(type_node.get("const"), str):
                names.add(type_node["const"])
        types |= names
        json_object_takes_schema |= "json_object" in names and "schema" in own
    if not types:
        return None
    modes = [m for m in ("json_schema",) if m in types]
    if "json_object" in types:
        modes += ["json_object_schema"] if json_object_takes_schema else []
        modes.append("json_object")
    modes.append("text")
    token_param = (
        "max_completion_tokens"
        if "max_tokens" not in fields and "max_completion_tokens" in fields
        else "max_tokens"
    )
    return tuple(modes), token_param
