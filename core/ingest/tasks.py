"""Task datasets: the 812 WebArena-Verified tasks and the original WebArena test.raw.json.

Both ship inside the installed `webarena-verified` package; a user may also give their own JSON file
of the same shape. Loading validates the whole file first and writes in one transaction, so bad input
leaves the database unchanged.
"""

from __future__ import annotations

import hashlib
from importlib import resources
from pathlib import Path
from typing import Annotated, Any

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from core.errors import InputError
from core.files.safe_files import MAX_TASK_ID
from core.store import Store, insert_rows, utcnow

VERIFIED_DATASET = "webarena-verified"
ORIGINAL_DATASET = "webarena-original"
_PACKAGE_DATASET_DIR = ("assets", "dataset")


def package_dataset_path(filename: str) -> Path:
    """A dataset file shipped inside the installed webarena-verified package."""
    root = resources.files("webarena_verified").joinpath(*_PACKAGE_DATASET_DIR, filename)
    return Path(str(root))


def verified_dataset_path() -> Path:
    return package_dataset_path("webarena-verified.json")


def original_dataset_path() -> Path:
    return package_dataset_path("test.raw.json")


def hard_subset_ids() -> set[int]:
    """Task ids of the official hard subset (the package's subset file, checksum-validated there)."""
    path = package_dataset_path("subsets").joinpath("webarena-verified-hard.json")
    return set(orjson.loads(path.read_bytes())["task_ids"])


def site_key(sites: list[str]) -> str:
    """The official per-site bucket: a task's sorted sites joined with '-'."""
    return "-".join(sorted(sites))


# Ids and numbers the store keeps as INTEGER: a value beyond them is an input error naming the task,
# never a database error at insert time.
TaskId = Annotated[int, Field(ge=0, le=MAX_TASK_ID)]
StoredInt = Annotated[int, Field(ge=-MAX_TASK_ID - 1, le=MAX_TASK_ID)]


class VerifiedTask(BaseModel):
    """One task of webarena-verified.json, as much as we rely on."""

    model_config = ConfigDict(extra="allow")
    task_id: TaskId
    sites: list[str] = Field(min_length=1)
    intent: str
    eval: list[dict[str, Any]] = Field(min_length=1)
    intent_template_id: StoredInt | None = None
    intent_template: str | None = None
    instantiation_dict: dict[str, Any] | None = None
    start_urls: list[str] = Field(default_factory=list)
    revision: StoredInt | None = None


class OriginalTask(BaseModel):
    """One task of the original WebArena test.raw.json."""

    model_config = ConfigDict(extra="allow")
    task_id: TaskId
    sites: list[str] = Field(min_length=1)
    intent: str
    eval: dict[str, Any]
    intent_template_id: StoredInt | None = None
    start_url: str | None = None
    require_login: bool | None = None


def _read_json_list(path: Path) -> tuple[list[Any], str]:
    try:
        raw = path.read_bytes()
    except FileNotFoundError as exc:
        raise InputError(path, "no such file") from exc
    except OSError as exc:
        raise InputError(path, f"cannot read: {exc.strerror}") from exc
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise InputError(path, f"not valid JSON ({exc})") from exc
    if not isinstance(data, list):
        raise InputError(path, f"expected a JSON list of tasks, got {type(data).__name__}")
    if not data:
        raise InputError(path, "the task list is empty")
    return data, hashlib.sha256(raw).hexdigest()


def _validate(path: Path, items: list[Any], model: type[BaseModel]) -> list[BaseModel]:
    tasks = []
    seen: set[int] = set()
    for position, item in enumerate(items):
        try:
            task = model.model_validate(item)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "task"
            ident = item.get("task_id", f"#{position}") if isinstance(item, dict) else f"#{position}"
            raise InputError(path, f"task {ident}: {where}: {first['msg']}") from exc
        if task.task_id in seen:
            raise InputError(path, f"duplicate task_id {task.task_id}")
        seen.add(task.task_id)
        tasks.append(task)
    return tasks


def _agent_response_expectation(evals: list[dict[str, Any]]) -> tuple[str | None, str | None]:
    for config in evals:
        if config.get("evaluator") == "AgentResponseEvaluator":
            expected = config.get("expected") or {}
            task_type = expected.get("task_type")
            return (task_type.lower() if isinstance(task_type, str) else None, expected.get("status"))
    return None, None


def _json(value: Any) -> str | None:
    return None if value is None else orjson.dumps(value).decode()


def _verified_rows(tasks: list[VerifiedTask], name: str, checksum: str) -> list[dict[str, Any]]:
    hard = hard_subset_ids()
    rows = []
    for t in tasks:
        task_type, status = _agent_response_expectation(t.eval)
        rows.append(
            {
                "task_id": t.task_id,
                "sites": t.sites,
                "site_key": site_key(t.sites),
                "intent": t.intent,
                "intent_template_id": t.intent_template_id,
                "intent_template": t.intent_template,
                "instantiation_dict": _json(t.instantiation_dict),
                "start_urls": t.start_urls,
                "task_type": task_type,
                "expected_status": status,
                "eval": _json(t.eval),
                "revision": t.revision,
                "in_hard_subset": t.task_id in hard,
                "dataset_name": name,
                "dataset_checksum": checksum,
            }
        )
    return rows


def _as_str_list(value: Any) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, list):
        return [str(v) for v in value]
    return [str(value)]


def _original_rows(tasks: list[OriginalTask], name: str, checksum: str) -> list[dict[str, Any]]:
    rows = []
    for t in tasks:
        ev = t.eval
        answers = ev.get("reference_answers") or None
        rows.append(
            {
                "task_id": t.task_id,
                "sites": t.sites,
                "intent": t.intent,
                "intent_template_id": t.intent_template_id,
                "start_url": t.start_url,
                "require_login": t.require_login,
                "eval_types": _as_str_list(ev.get("eval_types")),
                "reference_answers": _json(answers),
                "must_include": _as_str_list(answers.get("must_include")) if answers else None,
                "exact_match": str(answers["exact_match"]) if answers and "exact_match" in answers else None,
                "fuzzy_match": _json(answers.get("fuzzy_match")) if answers else None,
                "reference_url": ev.get("reference_url") or None,
                "program_html": _json(ev.get("program_html")),
                "string_note": ev.get("string_note") or None,
                "dataset_name": name,
                "dataset_checksum": checksum,
            }
        )
    return rows


def _display_path(path: Path, packaged: bool) -> str:
    # Never store a machine's absolute path for the packaged file: name it by package.
    return f"webarena_verified:assets/dataset/{path.name}" if packaged else str(path)


def import_tasks(store: Store, path: Path | None = None, *, original: bool = False) -> dict[str, int]:
    """Load the verified tasks (and, with `original`, the original WebArena tasks) into the store.

    Idempotent: a dataset whose checksum is already recorded is not rewritten. Returns the number
    of tasks per dataset name.
    """
    return _import_tasks(store, path, original=original)[0]


def _import_tasks(store: Store, path: Path | None, *, original: bool) -> tuple[dict[str, int], set[int]]:
    """`import_tasks`, and the tasks table's ids as its transaction leaves them (read inside it)."""
    plans = []
    packaged = path is None
    verified_path = verified_dataset_path() if packaged else Path(path)
    items, checksum = _read_json_list(verified_path)
    verified = _validate(verified_path, items, VerifiedTask)
    name = VERIFIED_DATASET if packaged else verified_path.stem
    plans.append(
        ("verified", name, verified_path, checksum, "tasks", _verified_rows(verified, name, checksum))
    )
    if original:
        original_path = original_dataset_path()
        items, o_checksum = _read_json_list(original_path)
        tasks = _validate(original_path, items, OriginalTask)
        plans.append(
            (
                "original",
                ORIGINAL_DATASET,
                original_path,
                o_checksum,
                "original_tasks",
                _original_rows(tasks, ORIGINAL_DATASET, o_checksum),
            )
        )

    counts: dict[str, int] = {}
    with store.transaction() as cur:
        for kind, name, source, checksum, table, rows in plans:
            counts[name] = len(rows)
            recorded = cur.execute(
                "SELECT checksum FROM datasets WHERE kind = ? AND name = ?", [kind, name]
            ).fetchone()
            table_rows = cur.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            if recorded and recorded[0] == checksum and table_rows == len(rows):
                continue
            # One dataset of each kind is current: loading another replaces it whole.
            cur.execute(f"DELETE FROM {table}")
            cur.execute("DELETE FROM datasets WHERE kind = ?", [kind])
            insert_rows(cur, table, rows)
            cur.execute(
                "INSERT INTO datasets VALUES (?, ?, ?, ?, ?, ?)",
                [name, kind, _display_path(source, packaged), checksum, len(rows), utcnow()],
            )
        ids = {task_id for (task_id,) in cur.execute("SELECT task_id FROM tasks").fetchall()}
    return counts, ids


def ensure_tasks(store: Store, *, original: bool = True) -> None:
    """Load the packaged datasets if the store has none yet (used by importers and the demo)."""
    have = {k for (k,) in store.query("SELECT kind FROM datasets")}
    if _missing(have, original):
        import_tasks(store, original=original)


def known_task_ids(store: Store) -> set[int]:
    """The tasks table's ids, the packaged datasets loaded first if missing: one read of the file in the
    usual case (a `ShortLivedStore` leaves a turn between two operations, `TURN_S`); on a new file, that
    read and the datasets' transaction, which reads the ids back itself."""
    with store.reading() as cur:
        have = {k for (k,) in cur.execute("SELECT kind FROM datasets").fetchall()}
        known = {task_id for (task_id,) in cur.execute("SELECT task_id FROM tasks").fetchall()}
    if _missing(have, original=True):
        known = _import_tasks(store, None, original=True)[1]
    return known


def _missing(have: set[str], original: bool) -> bool:
    return "verified" not in have or (original and "original" not in have)
