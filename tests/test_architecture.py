"""Architecture rules that must not erode."""

from __future__ import annotations

import pkgutil
import re
import subprocess
import sys

import pytest

import core


@pytest.mark.slow
def test_core_never_loads_streamlit_or_plotly():
    modules = sorted(m.name for m in pkgutil.walk_packages(core.__path__, "core."))
    assert "core.store" in modules and "core.cli.main" in modules
    script = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('streamlit', 'plotly'))\n"
        "print(','.join(bad))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == ""


def test_no_absolute_machine_paths_in_tracked_files(repo_root):
    files = subprocess.run(
        ["git", "ls-files"], cwd=repo_root, capture_output=True, text=True, check=True
    ).stdout.split()
    # Written as alternatives after one slash so this file does not match itself.
    pattern = re.compile(r"/(?:work|farm|root|home/[a-z]+|Users/[A-Za-z]+)/")
    offenders = []
    for name in files:
        path = repo_root / name
        if path.suffix in {".py", ".md", ".toml", ".sql", ".txt", ".json", ".cfg"} or name in ("Makefile",):
            text = path.read_text(encoding="utf-8", errors="replace")
            if pattern.search(text):
                offenders.append(name)
    assert offenders == []


# -- the tree and its import directions ---------------------------------------------------------------
# Rank of each package: a module may import its own package and packages of a lower rank, never a higher
# one, and never another package of the same rank (docs/architecture.md draws the same picture).
CORE_RANKS = {
    "core": 0,  # the root: store, store_host, errors, paths, progress, values
    "core.files": 1,
    "core.search": 1,
    "core.measure": 2,
    "core.scoring": 3,
    "core.ingest": 4,
    "core.gold": 5,
    "core.review": 5,
    "core.export": 5,
    "core.diagnose": 5,
    "core.queries": 6,
    "core.cli": 7,
}
DASHBOARD_RANKS = {
    "dashboard": 0,  # the package itself holds nothing
    "dashboard.text": 1,
    "dashboard.state": 1,
    "dashboard.charts": 2,
    "dashboard.db": 2,
    "dashboard.identity": 3,
    "dashboard.prewarm": 3,  # reads through db; app.py hands it each page run's reads
    "dashboard.report": 3,
    "dashboard.components": 4,
    "dashboard.views": 5,
    "dashboard.app": 6,
}
# The import that goes up, declared here and lazy (inside the function): `trajreview report --html`
# renders the dashboard's charts (so `core` still never loads plotly).
DECLARED_UPWARD = {("core.cli.metrics", "dashboard.report")}
# __init__, errors, paths, progress, values, store and store_host (the app's DuckDB instance that files are
# attached to: the store's concern, kept apart so store.py stays under ~400 lines).
CORE_ROOT_MODULES_MAX = 7


def _package(module: str) -> str:
    parts = module.split(".")
    if parts[0] == "core":
        if len(parts) > 1 and parts[1] in {p.split(".")[1] for p in CORE_RANKS if "." in p}:
            return "core." + parts[1]
        return "core"
    if len(parts) > 1 and f"dashboard.{parts[1]}" in DASHBOARD_RANKS:
        return "dashboard." + parts[1]
    return "dashboard"


def _rank(package: str) -> tuple[int, int]:
    """(layer, rank): every dashboard package sits above every core package."""
    return (0, CORE_RANKS[package]) if package.startswith("core") else (1, DASHBOARD_RANKS[package])


def _our_modules(repo_root, *tops):
    for top in tops:
        for path in sorted((repo_root / top).rglob("*.py")):
            module = ".".join(path.relative_to(repo_root).with_suffix("").parts).removesuffix(".__init__")
            yield module, path


def _imports(path):
    """(imported module, line, inside a function?) for every import of a module of ours."""
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"))
    functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    nested = {id(n) for f in functions for n in ast.walk(f) if n is not f}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
            # `from core.files import har` imports the module core.files.har.
            names += [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for name in names:
            if name.split(".")[0] in ("core", "dashboard"):
                yield name, node.lineno, id(node) in nested


@pytest.mark.slow
def test_imports_never_go_up(repo_root):
    offenders, declared_seen = [], set()
    for module, path in _our_modules(repo_root, "core", "dashboard"):
        mine = _package(module)
        for name, line, lazy in _imports(path):
            theirs = _package(name)
            if theirs == mine:
                continue
            if (module, theirs) in DECLARED_UPWARD:
                assert lazy, f"{path}:{line}: the declared import of {theirs} must stay inside the command"
                declared_seen.add((module, theirs))
                continue
            if name.startswith("core.cli") or _rank(theirs) >= _rank(mine):
                offenders.append(f"{path.relative_to(repo_root)}:{line}: {mine} imports {name}")
    assert offenders == []
    assert declared_seen == DECLARED_UPWARD  # a declared exception that no longer exists is removed


def test_the_import_direction_test_catches_an_upward_import():
    assert _rank(_package("core.ingest.wav_run")) > _rank(_package("core.scoring.engine"))
    assert _rank(_package("core.queries.triage")) > _rank(_package("core.ingest.gold"))
    assert _rank(_package("dashboard.views.task")) > _rank(_package("dashboard.components.steps_panel"))
    assert _rank(_package("dashboard.db")) < _rank(_package("dashboard.components.steps_panel"))
    assert _rank(_package("core.review.annotations")) == _rank(_package("core.gold.editing"))


def test_core_root_holds_only_the_store_errors_paths_and_shared_helpers(repo_root):
    modules = sorted(p.name for p in (repo_root / "core").glob("*.py"))
    assert len(modules) <= CORE_ROOT_MODULES_MAX, modules
    packages = sorted(p.name for p in (repo_root / "core").iterdir() if (p / "__init__.py").exists())
    expected = {name.split(".")[1] for name in CORE_RANKS if "." in name}
    assert set(packages) - {"migrations"} == expected, packages
    assert not (repo_root / "reports_html").exists()


@pytest.mark.slow
def test_no_module_imports_another_modules_private_name(repo_root):
    """`from x import _name` nowhere; in core, dashboard and bench not even `module._name`. Tests may
    reach into a module's internals by attribute only, to inject faults."""
    import ast

    offenders = []
    for top in ("core", "dashboard", "bench", "tests"):
        for path in sorted((repo_root / top).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            ours: set[str] = set()  # local names bound to modules of ours
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    if node.module.split(".")[0] not in ("core", "dashboard", "bench"):
                        continue
                    for alias in node.names:
                        if alias.name.startswith("_") and not alias.name.startswith("__"):
                            offenders.append(f"{path.relative_to(repo_root)}:{node.lineno}: {alias.name}")
                        ours.add(alias.asname or alias.name)
                elif isinstance(node, ast.Import):
                    for alias in node.names:
                        if alias.name.split(".")[0] in ("core", "dashboard", "bench"):
                            ours.add(alias.asname or alias.name.split(".")[0])
            if top == "tests":
                continue
            for node in ast.walk(tree):
                if (
                    isinstance(node, ast.Attribute)
                    and node.attr.startswith("_")
                    and not node.attr.startswith("__")
                    and isinstance(node.value, ast.Name)
                    and node.value.id in ours
                ):
                    offenders.append(
                        f"{path.relative_to(repo_root)}:{node.lineno}: {node.value.id}.{node.attr}"
                    )
    assert offenders == []


def test_no_cli_name_is_registered_twice():
    """Typer lets a later registration of a name silently replace an earlier one (`import opagent` was
    registered by two areas, and the one that holds the file only for its final write never ran)."""
    import typer.main

    from core.cli.main import app

    def walk(group: typer.Typer, path: str) -> list[str]:
        names = [
            f"{path} {c.name or typer.main.get_command_name(c.callback.__name__)}".strip()
            for c in group.registered_commands
        ]
        for sub in group.registered_groups:
            names += walk(sub.typer_instance, f"{path} {sub.name}".strip())
            names.append(f"{path} {sub.name}".strip())
        return names

    names = walk(app, "")
    assert len(names) > 25 and "import opagent" in names
    assert sorted(n for n in set(names) if names.count(n) > 1) == []


def store_modes(fn) -> set[str]:
    """How a command opens the database, read from its code (and same-module helpers it calls)."""
    import ast
    import inspect
    import textwrap

    module = inspect.getmodule(fn)
    modes: set[str] = set()
    seen: set[str] = set()

    def visit(func) -> None:
        if func.__name__ in seen:
            return
        seen.add(func.__name__)
        tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name == "import_store":
                modes.add("short reads and its final transaction")
            elif name == "store_from":
                read_only = next((k.value for k in node.keywords if k.arg == "read_only"), None)
                constant = isinstance(read_only, ast.Constant) and read_only.value is True
                modes.add("read-only" if constant else "read-write while it runs")
            elif name in ("build_diagnosed_demo", "_serve"):
                modes.add("read-write while it runs")
            elif isinstance(node.func, ast.Name) and inspect.isfunction(getattr(module, name, None)):
                helper = getattr(module, name)
                if helper.__module__ == module.__name__:
                    visit(helper)

    visit(fn)
    return modes


def test_commands_hold_the_file_as_documented(repo_root):
    """docs/architecture.md says, per command, how long it holds the database file; the code agrees."""
    import typer.main

    from core.cli.main import app

    documented: dict[str, str] = {}
    text = (repo_root / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## Who holds the database file")[1].split("\n## ")[0]
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 2 and "`" in cells[0]:
            for name in re.findall(r"`([^`]+)`", cells[0]):
                documented[name] = cells[1]

    def commands(group: typer.Typer, path: str):
        for c in group.registered_commands:
            yield f"{path} {c.name or typer.main.get_command_name(c.callback.__name__)}".strip(), c.callback
        for sub in group.registered_groups:
            yield from commands(sub.typer_instance, f"{path} {sub.name}".strip())

    order = ["read-only", "short reads and its final transaction", "read-write while it runs"]
    found = {}
    for name, callback in commands(app, ""):
        modes = store_modes(callback)
        if modes:
            found[name] = max(modes, key=order.index)
    assert found == documented


SHARED_HELPERS = {
    "ProgressCallback": "core/progress.py",
    "is_missing": "core/values.py",
    "or_none": "core/values.py",
    "normalise_text": "core/values.py",
}


@pytest.mark.slow
def test_each_shared_helper_is_defined_once(repo_root):
    """One ProgressCallback, one missing-value check: a second definition (a class, a def or an alias
    assignment of the same name, or a private copy such as `_is_missing`) anywhere in the code fails."""
    import ast

    found: dict[str, list[str]] = {name: [] for name in SHARED_HELPERS}
    for path in sorted((repo_root / "core").rglob("*.py")) + sorted((repo_root / "dashboard").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.FunctionDef | ast.ClassDef):
                names = [node.name]
            elif isinstance(node, ast.Assign):
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names = [node.target.id]
            for name in names:
                if name.lstrip("_") in found:
                    found[name.lstrip("_")].append(path.relative_to(repo_root).as_posix())
    assert found == {name: [home] for name, home in SHARED_HELPERS.items()}


# An INSERT that selects from a registered Arrow table: the bulk insert core.store.insert_rows makes.
_HAND_BULK_INSERT = re.compile(
    r"INSERT\s+(?:OR\s+\w+\s+)?INTO\b[^\"']*\bSELECT\b[^\"']*\bFROM\b", re.IGNORECASE
)


def test_every_bulk_insert_goes_through_insert_rows(repo_root):
    """Writers build their rows with core.store.rows_table (lone surrogates kept as escapes) and insert them
    with insert_rows; no module registers an Arrow table and inserts from it by hand."""
    offenders = [
        path.relative_to(repo_root).as_posix()
        for path in sorted((repo_root / "core").rglob("*.py"))
        if path.name != "store.py" and _HAND_BULK_INSERT.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []
