"""Architecture rules that must not erode."""

from __future__ import annotations

import pkgutil
import re
import subprocess
import sys

import core


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
