"""The suite's tiers and its build cache do what docs/testing.md says: `make check` leaves out every test
that needs the whole runs, a browser, a server or much time; an expensive database is built once and
copied, never shared, and a change to its inputs builds it anew."""

from __future__ import annotations

import os
import re
from pathlib import Path

import build_cache
import pytest
from conftest import BROWSER_FIXTURES, SLOWEST_FIRST, TIER_MARKS, runs_pages


def test_every_collected_test_carries_the_tier_its_fixtures_need(request):
    items = request.session.items
    assert items
    for item in items:
        fixtures = set(item.fixturenames)
        if "shared_data" in fixtures:
            assert item.get_closest_marker("whole_run"), item.nodeid
        if fixtures & BROWSER_FIXTURES:
            assert item.get_closest_marker("browser"), item.nodeid
        if runs_pages(item):
            assert item.get_closest_marker("pages"), item.nodeid


def test_the_slowest_files_are_collected_first_and_kept_in_that_order(request, repo_root):
    """Every file SLOWEST_FIRST names exists (a renamed file would silently go back to its place), the
    session collects them first in that order, and make keeps xdist from reordering them by test count."""
    tests = {p.name for p in (repo_root / "tests").rglob("test_*.py")}
    assert set(SLOWEST_FIRST) <= tests, set(SLOWEST_FIRST) - tests
    files = list(dict.fromkeys(item.path.name for item in request.session.items))
    present = [name for name in SLOWEST_FIRST if name in files]
    assert files[: len(present)] == present  # in `-k`/`-m` runs, those collected still come first
    makefile = (repo_root / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^PYTEST_ARGS \?= .*--dist loadfile --no-loadscope-reorder", makefile, re.M)


def test_make_check_leaves_out_every_tier_mark(repo_root):
    makefile = (repo_root / "Makefile").read_text(encoding="utf-8")
    (quick,) = re.findall(r"^QUICK := (.+)$", makefile, re.M)
    assert {m.removeprefix("not ") for m in quick.split(" and ")} >= set(TIER_MARKS)
    assert re.search(r'^check: lint\n\t\$\(BIN\)/pytest \$\(PYTEST_ARGS\) -m "\$\(QUICK\)"$', makefile, re.M)
    assert re.search(r"^test: lint pytest$", makefile, re.M)  # the whole suite stays what `make test` runs


def test_make_keeps_compiled_bytecode_in_the_cache(repo_root, tmp_path):
    """docs/testing.md: every make target writes bytecode under .cache/pycache even where the environment
    says not to, so a second run and every worker and served app skip compiling."""
    import subprocess

    probe = tmp_path / "probe.mk"
    probe.write_text(f"include {repo_root / 'Makefile'}\nprobe:\n\t@env\n", encoding="utf-8")
    env = subprocess.run(
        ["make", "-s", "-C", str(repo_root), "-f", str(probe), "probe"],
        capture_output=True, text=True, check=True, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    ).stdout.splitlines()  # fmt: skip
    assert f"PYTHONPYCACHEPREFIX={repo_root / '.cache' / 'pycache'}" in env
    assert not any(line.startswith("PYTHONDONTWRITEBYTECODE=") for line in env)


@pytest.fixture
def cache_root(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setattr(build_cache, "CACHE_ROOT", root)
    monkeypatch.delenv(build_cache.CACHE_ENV, raising=False)
    return root


def _recipe(source: Path, calls: list[int]):
    def build(path: Path) -> None:
        calls.append(1)
        path.write_text(source.read_text())
        Path(str(path) + ".search").mkdir()  # what sits beside a database comes along

    return build


def test_a_build_is_reused_until_its_input_changes_and_each_caller_gets_a_copy(cache_root, tmp_path):
    source = tmp_path / "input.txt"
    source.write_text("one")
    calls: list[int] = []
    build = _recipe(source, calls)
    first = build_cache.cached_build("db", build, tmp_path / "a", [source])
    second = build_cache.cached_build("db", build, tmp_path / "b", [source])
    assert calls == [1] and first.read_text() == second.read_text() == "one"
    assert Path(str(second) + ".search").is_dir()
    second.write_text("written by a test")  # a copy: the entry and the first copy are untouched
    third = build_cache.cached_build("db", build, tmp_path / "c", [source])
    assert calls == [1] and first.read_text() == third.read_text() == "one"
    source.write_text("two")
    changed = build_cache.cached_build("db", build, tmp_path / "d", [source])
    assert calls == [1, 1] and changed.read_text() == "two"


def test_a_failed_build_leaves_no_entry(cache_root, tmp_path):
    def broken(path: Path) -> None:
        path.write_text("half")
        raise RuntimeError("the build failed")

    with pytest.raises(RuntimeError):
        build_cache.cached_build("db", broken, tmp_path / "a")
    assert not [p for p in cache_root.glob("db-*") if p.is_dir()]


def test_turned_off_every_call_builds(cache_root, tmp_path, monkeypatch):
    monkeypatch.setenv(build_cache.CACHE_ENV, "0")
    source = tmp_path / "input.txt"
    source.write_text("one")
    calls: list[int] = []
    for dest in ("a", "b"):
        build_cache.cached_build("db", _recipe(source, calls), tmp_path / dest, [source])
    assert calls == [1, 1] and not cache_root.exists()


def test_an_entry_of_the_official_engines_output_outlives_a_change_of_our_code(
    cache_root, tmp_path, monkeypatch
):
    """`code=False` keys an entry without our code (its content is the official engine's alone); every other
    entry is built anew when our code changes."""
    source = tmp_path / "input.txt"
    source.write_text("one")
    calls: list[int] = []
    build = _recipe(source, calls)
    for code in (True, False):
        build_cache.cached_build(f"db-{code}", build, tmp_path / f"a-{code}", [source], code=code)
    monkeypatch.setattr(build_cache, "code_version", lambda: "our code, changed")
    for code in (True, False):
        build_cache.cached_build(f"db-{code}", build, tmp_path / f"b-{code}", [source], code=code)
    assert len(calls) == 3  # built twice with our code in the key, once without
