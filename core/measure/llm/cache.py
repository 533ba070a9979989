"""The LLM's answers cached in the `judgments` table, keyed by a hash of everything that can change them.

Only answers that parsed against their kind's schema are stored: rule, lexical and embedding verdicts are
deterministic and faster to recompute than to look up, and an unresolved question (API failure, timeout,
malformed reply) must be asked again next time. A stored answer that no longer parses against its kind's
schema counts as missing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence

import orjson
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import BaseModel, ValidationError

from core.measure.llm.kinds import Question, QuestionKind
from core.store import ShortLivedStore, Store, insert_rows, rows_table, utcnow

# Bump when the judge's decisions change: it enters every cache key.
JUDGE_VERSION = "1"


def cache_key(
    question: Question, *, model: str | None, prompt_version: str | None, judge_version: str = JUDGE_VERSION
) -> str:
    payload = orjson.dumps(
        [judge_version, prompt_version, model, question.kind, question.a, question.b, question.context]
    )
    return hashlib.sha256(payload).hexdigest()


class JudgmentCache:
    def __init__(
        self, store: Store | ShortLivedStore, *, model: str | None, kinds: Mapping[str, QuestionKind]
    ):
        self.store = store
        self.model = model
        self.kinds = kinds
        self.versions = {name: kind.version for name, kind in kinds.items()}

    def key(self, question: Question) -> str:
        return cache_key(question, model=self.model, prompt_version=self.versions.get(question.kind))

    def get_many(self, questions: Sequence[Question]) -> dict[Question, BaseModel]:
        """Cached answers of the given questions (missing ones are absent from the result)."""
        if not questions:
            return {}
        keys = {self.key(q): q for q in questions}
        # One short read: a long command's store (ShortLivedStore) holds the file only for this statement.
        with self.store.reading() as cur:
            cur.register("_wanted_keys", pa.table({"key": list(keys)}))
            try:
                rows = cur.execute(
                    "SELECT j.key, j.answer FROM judgments j JOIN _wanted_keys w ON j.key = w.key"
                    " WHERE j.answer IS NOT NULL"
                ).fetchall()
            finally:
                cur.unregister("_wanted_keys")
        found = {}
        for key, answer in rows:
            question = keys[key]
            try:
                found[question] = self.kinds[question.kind].reply.model_validate_json(answer)
            except ValidationError:
                continue  # asked again: the kind's schema changed since
        return found

    def put_many(self, answered: Iterable[tuple[Question, BaseModel | None]]) -> int:
        """Store the parsed answers (None: unresolved, not stored); a key already stored keeps its answer.
        Returns how many rows were written."""
        now = utcnow()
        rows: dict[str, dict] = {}  # one row per key: the same question asked twice in one batch
        for q, reply in answered:
            if reply is None:
                continue
            kind = self.kinds[q.kind]
            answer = reply.model_dump(mode="json")
            verdict = answer.get(kind.verdict_field) if kind.verdict_field else None
            rationale = answer.get(kind.rationale_field) if kind.rationale_field else None
            key = self.key(q)
            rows.setdefault(
                key,
                {
                    "key": key, "kind": q.kind, "a": q.a, "b": q.b, "context": q.context or None,
                    "verdict": verdict if isinstance(verdict, bool) else None,
                    "score": (1.0 if verdict else 0.0) if isinstance(verdict, bool) else None,
                    "source": "llm", "model": self.model, "judge_version": JUDGE_VERSION,
                    "prompt_version": self.versions.get(q.kind),
                    "rationale": str(rationale)[:500] if rationale is not None else None,
                    "created_at": now, "answer": orjson.dumps(answer).decode(),
                }
            )  # fmt: skip
        if not rows:
            return 0
        data = rows_table(rows.values())  # built before the transaction, which holds the file only to write
        with self.store.transaction() as cur:
            stored = cur.execute(
                "SELECT key FROM judgments WHERE key IN (SELECT unnest(?::VARCHAR[]))", [list(rows)]
            ).fetchall()
            if stored:  # answered meanwhile by another process: the first answer stays
                data = data.filter(pc.invert(pc.is_in(data["key"], pa.array([k for (k,) in stored]))))
            return insert_rows(cur, "judgments", data)
