"""What one untrusted pickle may build while it loads (core.files.safe_pickle applies these bounds).

The byte limit bounds the input, not what it builds: one EMPTY_DICT byte makes a 64-byte dict, so a
step file of 60 MB of them (a few KB gzipped) built 60 million dicts and reached 5.6 GB. So:

- **Objects are counted before loading.** Every object a pickle builds (a container, an instance, a
  class, a number, a string) and every reference it pushes onto the unpickler's stack or memo (MARK,
  DUP, PUT, GET, a shared constant) takes one opcode; every opcode is one byte of the stream, and a
  pickle never loops. So the bytes whose value is such an opcode bound what it can build, counted in one
  pass over the bytes (some sit inside strings: the count is high, never low). Refused above
  `MAX_OBJECTS`; docs/limits.md gives the count of the real step files.
- **Stand-in classes are counted while loading** (`MAX_CLASSES`): each distinct global a pickle names
  becomes a class of ~1 KB.
- **Memory is capped while loading** for what no count sees before: a memo index of 2**30 in 9 bytes
  (LONG_BINPUT) makes the C unpickler allocate and zero a 16 GB table. The process's data segment may
  grow by at most `LOAD_HEADROOM` during a load (RLIMIT_DATA, Linux): past it an allocation fails and the
  file is refused.
"""

from __future__ import annotations

import pickletools
import re
import resource
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

# Opcodes that build an object or push a reference: all but those that only fill a container
# (APPEND(S), SETITEM(S), ADDITEMS), pop (POP, POP_MARK), or frame and end the stream.
_NOT_COUNTED = frozenset({"APPEND", "APPENDS", "SETITEM", "SETITEMS", "ADDITEMS", "POP", "POP_MARK", "PROTO",
                          "FRAME", "STOP"})  # fmt: skip
COUNTED_OPCODES = frozenset(op.name for op in pickletools.opcodes) - _NOT_COUNTED
_COUNTED_BYTES = bytes(
    op.code.encode("latin-1")[0] for op in pickletools.opcodes if op.name in COUNTED_OPCODES
)

MAX_OBJECTS = 3_000_000
MAX_CLASSES = 10_000
LOAD_HEADROOM = 1024 * 1024 * 1024

_VM_DATA = re.compile(rb"VmData:\s+(\d+) kB")
_CEILING_LOCK = threading.Lock()


def objects_bound(data: bytes) -> int:
    """How many objects `data` can build or reference at most: its bytes whose value is such an opcode."""
    return len(data) - len(data.translate(None, _COUNTED_BYTES))


def _data_segment() -> int:
    match = _VM_DATA.search(Path("/proc/self/status").read_bytes())
    return int(match.group(1)) * 1024 if match else 0


@contextmanager
def memory_ceiling(headroom: int = LOAD_HEADROOM) -> Iterator[None]:
    """While inside, the process's data segment may grow by at most `headroom` bytes (an allocation past
    it raises MemoryError). Process-wide: loads take turns, and nothing else should allocate much
    meanwhile (the importer only loads)."""
    with _CEILING_LOCK:
        soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
        ceiling = _data_segment() + headroom
        for limit in (soft, hard):
            if limit != resource.RLIM_INFINITY:
                ceiling = min(ceiling, limit)
        resource.setrlimit(resource.RLIMIT_DATA, (ceiling, hard))
        try:
            yield
        finally:
            resource.setrlimit(resource.RLIMIT_DATA, (soft, hard))
