"""The judge cache: the `judgments` table, keyed by a hash of everything that can change a verdict.

Only resolved LLM verdicts are stored: rule, lexical and embedding stages are deterministic and faster to
recompute than to look up, and an unresolved pair (API failure) must be asked again next time.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence

import orjson
import pyarrow as pa

from core.measure.judge import JUDGE_VERSION, Pair, Verdict
from core.store import ShortLivedStore, Store, utcnow


def cache_key(
    pair: Pair, *, model: str | None, prompt_version: str | None, judge_version: str = JUDGE_VERSION
) -> str:
    payload = orjson.dumps([judge_version, prompt_version, model, pair.kind, pair.a, pair.b, pair.context])
    return hashlib.sha256(payload).hexdigest()


class JudgmentCache:
    def __init__(self, store: Store | ShortLivedStore, *, model: str | None, prompt_versions: dict[str, str]):
        self.store = store
        self.model = model
        self.prompt_versions = prompt_versions

    def key(self, pair: Pair) -> str:
        return cache_key(pair, model=self.model, prompt_version=self.prompt_versions.get(pair.kind))

    def get_many(self, pairs: Sequence[Pair]) -> dict[Pair, Verdict]:
        """Cached verdicts of the given pairs (missing pairs are absent from the result)."""
        if not pairs:
            return {}
        keys = {self.key(p): p for p in pairs}
        table = pa.table({"key": list(keys)})
        # One short read: a long command's store (ShortLivedStore) holds the file only for this statement.
        with self.store.reading() as cur:
            cur.register("_wanted_keys", table)
            try:
                rows = cur.execute(
                    "SELECT j.key, j.verdict, j.score, j.source, j.rationale FROM judgments j "
                    "JOIN _wanted_keys w ON j.key = w.key"
                ).fetchall()
            finally:
                cur.unregister("_wanted_keys")
        return {
            keys[key]: Verdict(verdict, source, score, rationale=rationale)
            for key, verdict, score, source, rationale in rows
        }

    def put_many(self, decided: Iterable[tuple[Pair, Verdict]]) -> int:
        now = utcnow()
        rows = [
            {
                "key": self.key(p), "kind": p.kind, "a": p.a, "b": p.b, "context": p.context or None,
                "verdict": v.verdict, "score": v.score, "source": v.source, "model": self.model,
                "judge_version": JUDGE_VERSION, "prompt_version": self.prompt_versions.get(p.kind),
                "rationale": v.rationale, "created_at": now,
            }
            for p, v in decided
            if v.verdict is not None
        ]  # fmt: skip
        if not rows:
            return 0
        data = pa.Table.from_pylist(rows)
        with self.store.transaction() as cur:
            cur.register("_new_judgments", data)
            try:
                cols = ", ".join(data.column_names)
                cur.execute(f"INSERT OR IGNORE INTO judgments ({cols}) SELECT {cols} FROM _new_judgments")
            finally:
                cur.unregister("_new_judgments")
        return len(rows)
