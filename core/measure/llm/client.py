"""`LLMClient`: asks questions of any kind, in the best response mode the server supports, each request
capped to its kind's answer length, each question and each call bounded in time, and counts the outcome.

- The mode comes from `server.server_support` (detected once per server, or configured).
- Every request sends the output cap (`max_tokens`, or `max_completion_tokens` where the server wants
  that): a runaway reply cannot hold a single-slot server for minutes after the client gave up.
- Retries (429, 408, 409, 5xx, timeouts, lost connections) are ours, not the `openai` client's, so that
  each one is counted and none outlives the question's time limit.
- A question that is not answered within `question_timeout_s`, or before the call's `run_timeout_s`
  runs out, or whose reply does not parse against its kind's schema (cut off, malformed, refused), is
  **unresolved**: an `Answer` with `reply=None` and the reason, never cached.
- Questions in flight are as many as the server answers in time: the window halves after a question got
  no reply in time (a single-slot server queues requests, and the later ones would wait past their
  timeout) and grows back as answers come. When the server has not replied at all for twice a
  question's time limit, the rest are not sent.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from core.measure.llm.config import LLMConfig
from core.measure.llm.kinds import Question, QuestionKind, messages
from core.measure.llm.server import (
    ServerSupport,
    ServerUnavailable,
    first_line,
    json_object,
    request_body,
    sampling,
    server_support,
)
from core.progress import ProgressCallback

if TYPE_CHECKING:
    from core.measure.llm.cache import JudgmentCache

# Why a question stayed unresolved: the categories the CLI counts.
TIMED_OUT = "timed out"
RUN_LIMIT = "run time limit"
CUT_OFF = "cut off at the output cap"
MALFORMED = "malformed"
REFUSED = "refused"
SERVER_ERROR = "server error"
NO_CONNECTION = "no connection"
SERVER_UNAVAILABLE = "server unavailable"
SERVER_STOPPED = "server stopped answering"
_SILENT = frozenset({TIMED_OUT, NO_CONNECTION})  # no reply at all from the server


@dataclass(frozen=True)
class Answer:
    reply: BaseModel | None  # the parsed answer; None = unresolved ("could not decide")
    problem: str | None = None  # why unresolved: "<category>: <detail>"
    cached: bool = False


def _unresolved(category: str, detail: str = "") -> Answer:
    return Answer(None, f"{category}: {detail}"[:300] if detail else category)


@dataclass
class LLMStats:
    """What the client did, summed over its calls."""

    mode: str | None = None  # response mode used
    detected_by: str | None = None  # openapi+probe | probe | configured
    detection_requests: int = 0  # probe requests (0 when the detection was cached)
    requests: int = 0  # chat-completion requests sent for questions, retries included
    asked: int = 0  # questions sent (not found in the cache)
    answered: int = 0
    cache_hits: int = 0
    unresolved: Counter = field(default_factory=Counter)  # category -> questions
    seconds: float = 0.0
    by_mode: Counter = field(default_factory=Counter)  # mode -> requests
    output_tokens: int = 0  # completion tokens the server reported, summed

    @property
    def could_not_decide(self) -> int:
        return sum(self.unresolved.values())

    def line(self) -> str:
        """One line for the CLI summary."""
        how = f"{self.mode}, {self.detected_by}" if self.mode else "no mode"
        why = ", ".join(f"{n} {reason}" for reason, n in self.unresolved.most_common())
        return (
            f"LLM ({how}): {self.asked} questions asked, {self.answered} answered, "
            f"{self.could_not_decide} could not decide{f' ({why})' if why else ''}; "
            f"{self.requests + self.detection_requests} requests, {self.cache_hits} cache hits, "
            f"{self.seconds:.1f} s"
        )


class LLMClient:
    def __init__(self, config: LLMConfig):
        self.config = config
        self.stats = LLMStats()

    def ask_many(
        self,
        questions: Sequence[Question],
        kinds: Mapping[str, QuestionKind],
        *,
        cache: JudgmentCache | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> list[Answer]:
        """One answer per question, in order; cached answers first, the rest asked in one bounded call."""
        if not questions:
            return []
        started = time.monotonic()
        found = cache.get_many(questions) if cache else {}
        self.stats.cache_hits += len(found)
        missing = list(dict.fromkeys(q for q in questions if q not in found))
        answers: dict[Any, Answer] = {q: Answer(reply, cached=True) for q, reply in found.items()}
        if missing:
            self.stats.asked += len(missing)
            try:
                support, probes = server_support(self.config)
            except ServerUnavailable as exc:
                fresh = [_unresolved(SERVER_UNAVAILABLE, str(exc))] * len(missing)
            else:
                self.stats.mode, self.stats.detected_by = support.mode, support.detected_by
                self.stats.detection_requests += probes
                done = len(found)

                def progress(n: int, _total: int) -> None:
                    if on_progress:
                        on_progress(done + n, len(found) + len(missing))

                fresh = asyncio.run(self._ask_all(missing, kinds, support, started, progress))
            for question, answer in zip(missing, fresh, strict=True):
                answers[question] = answer
                if answer.reply is None:
                    self.stats.unresolved[(answer.problem or "").split(":", 1)[0]] += 1
                else:
                    self.stats.answered += 1
            if cache:
                cache.put_many((q, a.reply) for q, a in zip(missing, fresh, strict=True))
        self.stats.seconds += time.monotonic() - started
        return [answers[q] for q in questions]

    async def _ask_all(
        self,
        questions: list[Question],
        kinds: Mapping[str, QuestionKind],
        support: ServerSupport,
        started: float,
        on_progress: ProgressCallback,
    ) -> list[Answer]:
        import openai

        config = self.config
        run_deadline = started + config.run_timeout_s if config.run_timeout_s > 0 else float("inf")
        stall_s = 2 * config.question_timeout_s
        window = _Window(max(1, config.concurrency))
        results: list[Answer | None] = [None] * len(questions)
        # The last time the server replied at all (at first: when the first question went out), and
        # whether a question got no reply since: only then can the server be taken for stopped.
        last_reply: float | None = None
        silent_since_reply = False
        done = 0
        client = openai.AsyncOpenAI(
            base_url=config.base_url, api_key=config.api_key, timeout=config.timeout_s, max_retries=0
        )

        async def one(i: int, question: Question) -> None:
            nonlocal last_reply, silent_since_reply, done
            await window.acquire()
            silent = False
            try:
                now = time.monotonic()
                remaining = run_deadline - now
                last_reply = now if last_reply is None else last_reply
                if silent_since_reply and now - last_reply > stall_s:
                    answer = _unresolved(
                        SERVER_STOPPED, f"not sent: no reply from the server for {now - last_reply:.0f} s"
                    )
                elif remaining <= 0:
                    answer = _unresolved(
                        RUN_LIMIT, f"not sent: the call's {config.run_timeout_s:g} s were used up"
                    )
                else:
                    limit = min(config.question_timeout_s, remaining)
                    bound = RUN_LIMIT if remaining < config.question_timeout_s else TIMED_OUT
                    try:
                        answer = await asyncio.wait_for(
                            self._ask_one(client, question, kinds[question.kind], support, now + limit), limit
                        )
                    except TimeoutError:
                        answer = _unresolved(bound, f"no answer within {limit:.1f} s")
                    category = (answer.problem or "").split(":", 1)[0]
                    silent = category in _SILENT
                    silent_since_reply = silent_since_reply or silent
                    if bound == RUN_LIMIT and category == TIMED_OUT:
                        answer = _unresolved(
                            RUN_LIMIT, f"no answer before the call's {config.run_timeout_s:g} s ran out"
                        )
                    if not silent and category != RUN_LIMIT:
                        last_reply, silent_since_reply = time.monotonic(), False
            finally:
                await window.release(silent=silent)
            results[i] = answer
            done += 1
            on_progress(done, len(questions))

        try:
            await asyncio.gather(*(one(i, q) for i, q in enumerate(questions)))
        finally:
            await client.close()
        return [r if r is not None else _unresolved(MALFORMED, "no result") for r in results]

    async def _ask_one(
        self, client, question: Question, kind: QuestionKind, support: ServerSupport, deadline: float
    ) -> Answer:
        import openai

        cap = self.config.max_tokens or kind.max_tokens
        body = sampling(support.temperature) | request_body(
            support.mode, support.token_param, cap, kind.answer_schema(), kind.name
        )
        sent = messages(kind, kind.prompt, question)
        attempt = 0
        while True:
            self.stats.requests += 1
            self.stats.by_mode[support.mode] += 1
            timeout = max(0.001, min(self.config.timeout_s, deadline - time.monotonic()))
            try:
                completion = await client.chat.completions.create(
                    model=self.config.model, messages=sent, extra_body=body, timeout=timeout
                )
            except openai.APIStatusError as exc:
                failure = _unresolved(SERVER_ERROR, f"HTTP {exc.status_code}: {first_line(exc)}")
                retry = exc.status_code in (408, 409, 429) or exc.status_code >= 500
                wait_hint = _retry_after(exc)
            except openai.APITimeoutError as exc:
                failure, retry, wait_hint = _unresolved(TIMED_OUT, first_line(exc)), True, None
            except openai.APIConnectionError as exc:
                failure, retry, wait_hint = _unresolved(NO_CONNECTION, first_line(exc)), True, None
            except openai.APIError as exc:  # a response the client could not read
                return _unresolved(MALFORMED, first_line(exc))
            else:
                self.stats.output_tokens += (
                    getattr(getattr(completion, "usage", None), "completion_tokens", 0) or 0
                )
                return parse_reply(kind, completion, cap)
            attempt += 1
            if not retry or attempt > self.config.max_retries:
                return failure
            delay = (
                wait_hint
                if wait_hint is not None
                else min(8.0, 0.5 * 2 ** (attempt - 1)) * (0.75 + random.random() / 2)
            )  # noqa: S311
            if time.monotonic() + delay >= deadline:
                return failure
            await asyncio.sleep(delay)


class _Window:
    """How many questions may be in flight: the configured concurrency, halved after a question got no
    reply in time (a server that queues requests, such as a single-slot one, makes the later ones wait
    past their timeout), grown back by one after as many answers as the window holds."""

    def __init__(self, size: int):
        self.largest = self.size = size
        self.in_flight = 0
        self.credit = 0
        self.changed = asyncio.Condition()

    async def acquire(self) -> None:
        async with self.changed:
            await self.changed.wait_for(lambda: self.in_flight < self.size)
            self.in_flight += 1

    async def release(self, *, silent: bool) -> None:
        async with self.changed:
            self.in_flight -= 1
            if silent:
                self.size, self.credit = max(1, self.size // 2), 0
            elif self.size < self.largest:
                self.credit += 1
                if self.credit >= self.size:
                    self.size, self.credit = self.size + 1, 0
            self.changed.notify_all()


def _retry_after(exc) -> float | None:
    headers = getattr(getattr(exc, "response", None), "headers", None) or {}
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        try:
            return max(0.0, float(headers.get(name)) * scale) if headers.get(name) else None
        except (TypeError, ValueError):
            continue
    return None


def parse_reply(kind: QuestionKind, completion: Any, cap: int) -> Answer:
    """The reply validated against the kind's schema; anything else is unresolved, never a verdict."""
    try:
        choice = completion.choices[0]
        message = choice.message
    except (IndexError, AttributeError, TypeError):
        return _unresolved(MALFORMED, "a reply without choices")
    if getattr(message, "refusal", None):
        return _unresolved(REFUSED, str(message.refusal))
    content = getattr(message, "content", None) or ""
    try:
        return Answer(kind.reply.model_validate(json_object(content)))
    except ValidationError as exc:
        if getattr(choice, "finish_reason", None) == "length":
            return _unresolved(CUT_OFF, f"the reply reached {cap} tokens: {content[:80]!r}")
        return _unresolved(MALFORMED, (str(exc).splitlines() or ["invalid"])[0] + f": {content[:80]!r}")
