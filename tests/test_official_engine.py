"""The official engine imported with pint's unit registry from a definitions cache
(core/scoring/official_engine.py): the same distances, the registry really from the cache (in the fork
server's workers too), a corrupt cache or one open to others left unused, a cache made whole or not at all.

Each case runs in a fresh interpreter (the engine is imported once per process), with the cache in the
test's own directory (`TRAJREVIEW_CACHE_DIR`)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import orjson
import pint
import pytest

from core.ingest.tasks import verified_dataset_path
from core.paths import REPO_ROOT

UNIT = r"km|m|mi|miles?|meters?|kilometers?|ft|feet|yd|yards?|cm|in|inch(?:es)?"


def dataset_distances() -> list[str]:
    """Every distance the dataset's tasks expect (the map tasks: '2km', '338m', '30 km', ...), and the
    same numbers in the other units and spellings the engine's distance type accepts."""
    found: set[str] = set()

    def walk(value: object) -> None:
        if isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, str) and re.fullmatch(rf"\d[\d.,]*\s*(?:{UNIT})", value.strip(), re.I):
            found.add(value)

    walk(orjson.loads(verified_dataset_path().read_bytes()))
    numbers = sorted({re.match(r"[\d.]+", d).group() for d in found})
    variants = [f"{n} {unit}" for n in numbers for unit in ("miles", "ft", "yards", "metres", "inches")]
    return sorted(found) + variants + [f"{n}k" for n in numbers]


PROBE = """
import json, sys
{imports}
from webarena_verified.core.evaluation.data_types import distance
registry = distance._ureg
cache = registry._diskcache
values = {{}}
for text in json.loads(sys.argv[1]):
    try:
        values[text] = str(distance.Distance(text).normalized)
    except ValueError as exc:
        values[text] = "error: " + str(exc)
print("PROBE" + json.dumps({{
    "cache": str(cache.cache_folder) if cache is not None else None,
    "values": values,
    "unit_registry_restored": distance.pint.UnitRegistry is pint.UnitRegistry,
}}))
"""


def probe(cache_root: Path, *, via_cache: bool, texts: list[str]) -> dict:
    loads = "from core.scoring.official_engine import load_engine\nload_engine()\n"
    imports = "import pint\n" + (loads if via_cache else "")
    out = subprocess.run(
        [sys.executable, "-c", PROBE.format(imports=imports), json.dumps(texts)],
        capture_output=True, text=True, cwd=REPO_ROOT, timeout=300,
        env={**os.environ, "TRAJREVIEW_CACHE_DIR": str(cache_root)},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    line = next(line for line in out.stdout.splitlines() if line.startswith("PROBE"))
    return json.loads(line.removeprefix("PROBE"))


def cache_folder(root: Path) -> Path:
    return root / f"pint-{pint.__version__}"


@pytest.mark.slow
def test_distances_parse_identically_with_and_without_the_cache(tmp_path: Path):
    texts = dataset_distances()
    assert {"2km", "338m", "30 km"} <= set(texts) and len(texts) > 50
    plain = probe(tmp_path, via_cache=False, texts=texts)
    assert plain["cache"] is None and not cache_folder(tmp_path).exists()  # the engine as it ships
    first = probe(tmp_path, via_cache=True, texts=texts)  # makes the cache
    warm = probe(tmp_path, via_cache=True, texts=texts)  # reads it
    assert warm["cache"] == str(cache_folder(tmp_path))
    assert first["values"] == warm["values"] == plain["values"]
    assert not any(v.startswith("error") for v in plain["values"].values())
    assert warm["unit_registry_restored"] and first["unit_registry_restored"]
    assert (cache_folder(tmp_path).stat().st_mode & 0o777) == 0o700
    assert list(cache_folder(tmp_path).glob("*.pickle"))
    assert [p.name for p in tmp_path.iterdir()] == [cache_folder(tmp_path).name]  # no temp folder left


@pytest.mark.slow
def test_a_corrupt_cache_falls_back_and_is_made_anew(tmp_path: Path):
    texts = ["2km", "338m", "3.5 miles"]
    expected = probe(tmp_path, via_cache=False, texts=texts)["values"]
    probe(tmp_path, via_cache=True, texts=texts)
    pickles = list(cache_folder(tmp_path).glob("*.pickle"))
    for path in pickles:  # half-written files, as a non-atomic writer would leave them
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    fallback = probe(tmp_path, via_cache=True, texts=texts)
    assert fallback["cache"] is None and fallback["values"] == expected
    again = probe(tmp_path, via_cache=True, texts=texts)  # the corrupt folder was put aside: built anew
    assert again["values"] == expected
    warm = probe(tmp_path, via_cache=True, texts=texts)
    assert warm["cache"] == str(cache_folder(tmp_path)) and warm["values"] == expected


@pytest.mark.slow
def test_a_cache_open_to_other_users_is_not_read(tmp_path: Path):
    probe(tmp_path, via_cache=True, texts=["2km"])
    cache_folder(tmp_path).chmod(0o777)  # anyone could have put a pickle there
    assert probe(tmp_path, via_cache=True, texts=["2km"])["cache"] is None


def worker_registry_cache() -> str | None:
    """In a worker: where the engine's unit registry (built in the fork server's preload) came from."""
    from webarena_verified.core.evaluation.data_types import distance

    cache = distance._ureg._diskcache
    return str(cache.cache_folder) if cache is not None else None


@pytest.mark.slow
def test_the_fork_servers_engine_reads_its_registry_from_the_cache(tmp_path: Path):
    probe(tmp_path, via_cache=True, texts=["2km"])  # a warm cache, as every import after the first
    code = (
        "from core.files.parallel import SCORING_MODULES, WorkerPool\n"
        f"from tests.test_official_engine import {worker_registry_cache.__name__} as probe\n"
        "with WorkerPool(2, preload=SCORING_MODULES) as pool:\n"
        "    assert pool.executor is not None\n"
        "    print('CACHE', pool.call(probe))\n"
    )
    out = _python(code, cache_dir=tmp_path)
    assert f"CACHE {cache_folder(tmp_path)}" in out.stdout.splitlines()


def _python(code: str, cache_dir: Path | None = None) -> subprocess.CompletedProcess:
    """`python -c CODE` from the repository (with its pint cache in `cache_dir`), which must succeed."""
    env = {**os.environ, "TRAJREVIEW_CACHE_DIR": str(cache_dir)} if cache_dir is not None else None
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT, env=env, timeout=300
    )
    assert out.returncode == 0, out.stderr
    return out


@pytest.mark.slow
def test_importing_the_module_does_not_import_the_engine():
    """`core.scoring.official_engine` imports pint, not the engine: `load_engine()` does, once, and the
    engine's pint then is the real one again (the fork server's preload calls it explicitly)."""
    code = (
        "import sys\n"
        "from core.files.parallel import ENGINE_MODULE\n"
        "from core.scoring import official_engine\n"
        "print('BEFORE', ENGINE_MODULE in sys.modules, any(m.startswith('webarena_verified') for m in sys.modules))\n"
        "official_engine.load_engine()\n"
        "import pint\n"
        "print('AFTER', ENGINE_MODULE in sys.modules, pint.UnitRegistry is official_engine.pint.UnitRegistry)\n"
    )
    out = _python(code)
    assert "BEFORE False False" in out.stdout.splitlines()
    assert "AFTER True True" in out.stdout.splitlines()


@pytest.mark.slow
def test_scoring_in_this_process_reads_the_registry_from_the_cache(tmp_path: Path):
    """`--workers 1`: the engine is imported where the task is scored, through `load_engine()` first."""
    probe(tmp_path, via_cache=True, texts=["2km"])  # a warm cache
    code = (
        "from core.scoring.engine import ScoringInput, read_config, score_chunk\n"
        f"from tests.test_official_engine import {worker_registry_cache.__name__} as probe\n"
        "[score] = score_chunk(read_config(None), [ScoringInput(task_id=107, agent_response='x')])\n"
        "print('CACHE', probe(), score.task_id)\n"
    )
    out = _python(code, cache_dir=tmp_path)
    assert f"CACHE {cache_folder(tmp_path)} 107" in out.stdout.splitlines()
