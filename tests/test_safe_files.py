"""`core.files.safe_files.check` with a root: a regular file named directly in the root passes without
resolving its path (the worker checks two such files per task), a path through a sub-folder is resolved,
so a linked sub-folder leading outside is still refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.files import safe_files


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    """(root, outside): root holds a file, a sub-folder with a file, a link to outside and a linked
    sub-folder leading outside."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.json").write_text("{}")
    root = tmp_path / "run" / "107"
    (root / "sub").mkdir(parents=True)
    (root / "network.har").write_text("{}")
    (root / "sub" / "network.har").write_text("{}")
    (root / "linked.har").symlink_to(outside / "secret.json")
    (root / "away").symlink_to(outside, target_is_directory=True)
    return root, outside


def test_a_file_named_directly_in_the_root_passes_without_resolving(tree, monkeypatch):
    root, _ = tree
    resolved = []
    real = safe_files.inside
    monkeypatch.setattr(safe_files, "inside", lambda p, r: (resolved.append(p), real(p, r)))
    assert safe_files.check(root / "network.har", "network trace", root=root).st_size == 2
    assert safe_files.check(root / "sub" / "network.har", "network trace", root=root).st_size == 2
    assert resolved == [root / "sub" / "network.har"]


def test_a_root_reached_through_a_link_still_holds_its_own_files(tree, tmp_path):
    root, _ = tree
    alias = tmp_path / "alias"
    alias.symlink_to(root, target_is_directory=True)
    assert safe_files.read_bytes(alias / "network.har", "network trace", root=alias) == b"{}"


def test_links_and_linked_sub_folders_leading_outside_are_refused(tree):
    root, _ = tree
    with pytest.raises(safe_files.UnsafeFile, match="symbolic link"):
        safe_files.check(root / "linked.har", "network trace", root=root)
    with pytest.raises(safe_files.UnsafeFile, match="leads outside"):
        safe_files.check(root / "away" / "secret.json", "agent response", root=root)
    with pytest.raises(safe_files.UnsafeFile, match="leads outside"):
        safe_files.read_bytes(root / "away" / "secret.json", "agent response", root=root)
    # The same file named with `..` through the root: its parent is not the root as written, so resolved.
    with pytest.raises(safe_files.UnsafeFile, match="leads outside"):
        safe_files.check(root / ".." / ".." / "outside" / "secret.json", "agent response", root=root)
