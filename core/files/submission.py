"""Run directories and submission tarballs in the official WebArena-Verified layout, read safely.

A submission made by `webarena-verified create-submission-pkg` is hostile input like any file: only
regular-file members named `[prefix/]<task_id>/<known file>` are copied, under names we build, into a
temporary directory; nothing is extracted by the archive's own names.
"""

from __future__ import annotations

import re
import shutil
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

from core.errors import InputError, Problem
from core.files import safe_files
from core.files.har import TRACE_FILES

AGENT_RESPONSE_FILE = "agent_response.json"
SUBMISSION_SUMMARY = "summary.json"
_SUBMISSION_MEMBER = re.compile(
    r"^(?:[^/]+/)?([0-9]{1,10})/(" + "|".join(map(re.escape, (AGENT_RESPONSE_FILE, *TRACE_FILES))) + ")$"
)
# A submission expanding beyond this is refused (decompression bomb): 812 tasks of real size take ~1 GB.
_MAX_EXTRACTED = 4 << 30


@contextmanager
def run_directory(path: Path) -> Iterator[tuple[Path, list[Problem]]]:
    """The run directory to read: PATH itself, or a temp dir holding a submission's safe members."""
    if path.is_dir():
        yield path, []
        return
    if not path.exists():
        raise InputError(path, "no such file or directory")
    # The archive the user named (a link to it is theirs to make) must be a regular file: a FIFO blocks.
    safe_files.check_named(path, "submission")
    if not tarfile.is_tarfile(path):
        raise InputError(path, "neither a run directory nor a submission .tar.gz")
    with tempfile.TemporaryDirectory(prefix="trajreview-wav-") as tmp:
        problems = _extract_submission(path, Path(tmp))
        yield Path(tmp), problems


def _extract_submission(path: Path, dest: Path) -> list[Problem]:
    """Copy a submission's task files into `dest` under names we build ourselves.

    Only regular-file members named `[prefix/]<digits>/<known file>` are read; links, devices,
    absolute or `..` names are skipped and recorded. Nothing is extracted by name from the archive.
    """
    problems: list[Problem] = []
    found_summary = False
    n_files = 0
    total = 0
    try:
        with tarfile.open(path, "r:*") as archive:
            for member in archive:
                name = member.name
                parts = PurePosixPath(name).parts
                if name.startswith("/") or ".." in parts:
                    problems.append(Problem(task_id=None, source_path=f"{path}:{name}", kind="unsafe_member",
                                            message=f"{name}: unsafe path in archive, skipped"))  # fmt: skip
                    continue
                if PurePosixPath(name).name == SUBMISSION_SUMMARY and len(parts) <= 2:
                    found_summary = True
                    continue
                match = _SUBMISSION_MEMBER.match(name.removeprefix("./"))
                if not match:
                    continue
                task_id = int(match.group(1))
                if not safe_files.task_id_ok(task_id):
                    problems.append(Problem(task_id=None, source_path=f"{path}:{name}", kind="not_a_task_dir",
                                            message=f"{name}: task id out of range, skipped"))  # fmt: skip
                    continue
                if not member.isfile():
                    problems.append(Problem(task_id=task_id, source_path=f"{path}:{name}",
                                            kind="unsafe_member",
                                            message=f"{name}: not a regular file (link or device), skipped"))  # fmt: skip
                    continue
                kind = "agent response" if match.group(2) == AGENT_RESPONSE_FILE else "network trace"
                if member.size > safe_files.LIMITS[kind]:
                    # Not extracted, so neither our reader nor the engine ever sees it.
                    limit = safe_files.LIMITS[kind] // safe_files.MB
                    problems.append(Problem(task_id=task_id, source_path=f"{path}:{name}", kind="refused_file",
                                            message=f"{name}: {member.size} bytes, more than the {limit} MB "
                                            f"limit for a {kind} (docs/limits.md); skipped"))  # fmt: skip
                    continue
                total += member.size
                if total > _MAX_EXTRACTED:
                    raise InputError(path, "submission expands beyond 4 GiB; refusing to read it")
                source = archive.extractfile(member)
                if source is None:
                    continue
                task_dir = dest / str(task_id)
                task_dir.mkdir(exist_ok=True)
                with source, (task_dir / match.group(2)).open("wb") as target:
                    shutil.copyfileobj(source, target, 1 << 20)
                n_files += 1
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise InputError(path, f"unreadable .tar.gz ({exc})") from None
    if not found_summary and n_files == 0:
        raise InputError(
            path, f"not a webarena-verified submission (no {SUBMISSION_SUMMARY} and no <task_id>/ files)"
        )
    return problems
