"""Question kinds: what is asked (a prompt file in `prompts/`), what must come back (a JSON answer schema)
and how long that answer may be (the output cap sent with every request).

Every question fills the three data slots of its prompt, `$a`, `$b` and `$context`, each quoted as one
JSON string literal so that agent text cannot end the data and add instructions of its own. A new kind
plugs into the client, its cache and its bounds by defining a `QuestionKind` and a prompt file.
"""

from __future__ import annotations

import copy
import hashlib
from dataclasses import dataclass
from pathlib import Path
from string import Template
from typing import Any, Protocol

import orjson
from pydantic import BaseModel

from core.errors import InputError
from core.paths import PROMPTS_DIR


class Question(Protocol):
    """What one question asks: its kind's name and the three data slots (the judge's `Pair` is one)."""

    @property
    def kind(self) -> str: ...
    @property
    def a(self) -> str: ...
    @property
    def b(self) -> str: ...
    @property
    def context(self) -> str: ...


@dataclass(frozen=True)
class Prompt:
    kind: str
    version: str
    template: Template


@dataclass(frozen=True)
class QuestionKind:
    """A kind of question. `max_tokens` is sized to the answer the schema describes: a longer reply is cut
    by the server and recorded as unresolved. `verdict_field` / `rationale_field` name the answer fields
    stored in the `judgments` columns `verdict` and `rationale` (the whole answer is in `answer`)."""

    name: str
    reply: type[BaseModel]
    max_tokens: int
    system: str
    prompt: Prompt
    verdict_field: str | None = None
    rationale_field: str | None = None

    @property
    def version(self) -> str:
        """The prompt's version as it enters the cache key."""
        return prompt_version(self.prompt, self.system)

    def answer_schema(self) -> dict[str, Any]:
        """The reply's JSON schema in the strict form structured-output servers require: every property
        required, no other property allowed, no defaults."""
        return strict_schema(self.reply.model_json_schema())


def load_prompt(kind: str, directory: Path = PROMPTS_DIR) -> Prompt:
    """`prompts/<kind>.txt`: its first line `version: N` enters the cache key, the rest is the template."""
    path = directory / f"{kind}.txt"
    first, _, body = path.read_text(encoding="utf-8").partition("\n")
    if not first.startswith("version:"):
        raise InputError(path, "first line must be 'version: N'")
    return Prompt(kind, first.split(":", 1)[1].strip(), Template(body))


def prompt_version(prompt: Prompt, system: str) -> str:
    """The declared `version: N` plus a digest of everything sent besides the data, so an edited prompt (or
    system message) can never reuse answers cached for the old wording."""
    digest = hashlib.sha256(f"{system}\0{prompt.template.template}".encode()).hexdigest()[:12]
    return f"{prompt.version}+{digest}"


def _literal(text: str) -> str:
    return orjson.dumps(text).decode()


def messages(kind: QuestionKind, prompt: Prompt, question: Question) -> list[dict[str, str]]:
    content = prompt.template.safe_substitute(
        a=_literal(question.a), b=_literal(question.b), context=_literal(question.context or "(none)")
    )
    return [{"role": "system", "content": kind.system}, {"role": "user", "content": content}]


def strict_schema(schema: dict[str, Any]) -> dict[str, Any]:
    schema = copy.deepcopy(schema)

    def walk(node: Any) -> None:
        if isinstance(node, list):
            for value in node:
                walk(value)
        if not isinstance(node, dict):
            return
        node.pop("default", None)
        properties = node.get("properties")
        if isinstance(properties, dict):
            node["required"] = list(properties)
            node["additionalProperties"] = False
            for value in properties.values():  # property names are not keywords: never pop them
                walk(value)
        for key, value in node.items():
            if key != "properties":
                walk(value)

    walk(schema)
    return schema
