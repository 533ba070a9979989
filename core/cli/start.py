"""The `trajreview` command's entry point: light at import, and the scoring workers' start first.

Two reasons to keep this apart from `core.cli.main`:
- A command that scores in worker processes (`import wav-run`, `evaluate`; not with `--workers 1`)
  starts their fork server here, from a look at the arguments, before the command line (typer and every
  area's commands) is even imported: the server's imports (the engine, about a second) begin about
  0.2 s sooner. The command then finds the server running (`core.files.parallel.start_fork_server`).
- multiprocessing runs the program's script again in every worker it starts (as `__mp_main__`), and the
  script imports this module: the workers do not import the command line.

Such a command, when it succeeds, also ends without the interpreter's teardown (about 0.1 s of freeing every module's
objects: DuckDB, Arrow, pydantic): once its threads are joined (the workers have exited then) and every
other exit handler has run, the process flushes its output and leaves with its exit code
(`os._exit`). Its files are closed by then: the store is opened per operation
(`ShortLivedStore`) and the search index is committed before the command returns.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
from collections.abc import Sequence

# The commands that score in a worker pool (`--workers`, default 2), as words after the global options.
POOLED_COMMANDS = (("import", "wav-run"), ("evaluate",))
_GLOBAL_OPTIONS_WITH_VALUE = ("--db",)


def starts_scoring_workers(args: Sequence[str]) -> bool:
    """Whether `trajreview ARGS` is a command that scores in workers (read cheaply; typer parses it for
    real later, and a wrong guess only starts or skips the server early)."""
    if any(arg in ("--help", "-h") for arg in args):
        return False
    words: list[str] = []
    rest = iter(args)
    for arg in rest:
        if arg in _GLOBAL_OPTIONS_WITH_VALUE:
            next(rest, None)
        elif not arg.startswith("-"):
            words.append(arg)
    if not any(tuple(words[: len(command)]) == command for command in POOLED_COMMANDS):
        return False
    for i, arg in enumerate(args):
        value = arg.removeprefix("--workers=") if arg.startswith("--workers=") else None
        if arg == "--workers" and i + 1 < len(args):
            value = args[i + 1]
        if value is not None and value.strip() == "1":
            return False
    return True


def main() -> None:
    pooled = starts_scoring_workers(sys.argv[1:])
    exit_code: list[int] = []
    if pooled:
        # Registered first, so it runs last of the exit handlers (they run in reverse order).
        atexit.register(_exit_without_teardown, exit_code)
        from core.files.parallel import SCORING_MODULES, start_fork_server

        start_fork_server(SCORING_MODULES)
    from core.cli.main import main as run_command

    try:
        run_command()
    except SystemExit as exc:
        code = exc.code
        exit_code.append(0 if code is None else code if isinstance(code, int) else 1)
        raise
    exit_code.append(0)


def _exit_without_teardown(exit_code: list[int]) -> None:
    """The end of a command that succeeded: nothing left to free. A failed command takes the ordinary
    exit: its workers may have been stopped mid-start, and the interpreter's own exit lets their queues'
    semaphores be released in order (without it the resource tracker could warn about one)."""
    if exit_code == [0]:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing more to say
                stream.flush()
        os._exit(exit_code[0])


if __name__ == "__main__":  # `python -m core.cli.start ARGS`: the console script's entry, as tests run it
    main()
