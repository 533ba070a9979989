"""A restricted unpickler for hostile pickles (BrowserGym/AgentLab step files, exp_args.pkl).

`find_class` never imports anything and never returns a real callable that could act on the world:
every global a pickle names becomes an inert stand-in class (`Inert`) whose instances only collect
their constructor arguments and state as plain data. REDUCE, NEWOBJ, BUILD, APPEND(S), SETITEM(S)
on stand-ins just record what they were given. A handful of harmless value types (datetime, sets,
OrderedDict, complex) are rebuilt for real because their constructors only build values. numpy arrays
keep their shape and dtype and drop their bytes (screenshots come from the PNG files).

So a pickle whose `__reduce__` names `os.system` yields an `Inert` named `os.system` holding the
command string as data; nothing runs. `pickle.load`/`pickle.loads` are never called on user files.
"""

from __future__ import annotations

import collections
import datetime
import gc
import io
import pickle
import threading
import zlib
from pathlib import Path
from typing import Any

from core.errors import first_line
from core.files.pickle_limits import LOAD_HEADROOM, MAX_CLASSES, MAX_OBJECTS, memory_ceiling, objects_bound

# Size cap per pickle, compressed file and decompressed data alike: real step pickles decompress to
# at most 1.6 MB (AgentLab runs keeping screenshots in obs, ~10 MB). Unpickling can multiply bytes
# by ~60 in objects (one EMPTY_DICT byte makes a 64-byte dict), so this also bounds memory.
MAX_DECOMPRESSED_BYTES = 64 * 1024 * 1024

# Value types whose constructors only build values from their arguments: rebuilt for real.
_SAFE_TYPES: dict[tuple[str, str], type] = {
    ("datetime", "datetime"): datetime.datetime,
    ("datetime", "date"): datetime.date,
    ("datetime", "time"): datetime.time,
    ("datetime", "timedelta"): datetime.timedelta,
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("builtins", "set"): set,
    ("builtins", "frozenset"): frozenset,
    ("builtins", "complex"): complex,
    ("__builtin__", "set"): set,
    ("__builtin__", "frozenset"): frozenset,
    ("__builtin__", "complex"): complex,
}

_NUMPY_RECONSTRUCT = frozenset({"numpy.core.multiarray._reconstruct", "numpy._core.multiarray._reconstruct"})
_NUMPY_DTYPE = "numpy.dtype"
# Raw byte payloads kept inside stand-in state beyond this size are replaced by their length.
_MAX_KEPT_BYTES = 4096


class SafePickleError(Exception):
    """The data is not a readable pickle (corrupt, truncated, or not a pickle at all)."""


class Inert:
    """Stand-in for an object of a class we refuse to import. Holds plain data only.

    `qualname` is the dotted name the pickle gave (e.g. `browsergym.experiments.loop.StepInfo`);
    `args` the constructor/call arguments; `state` what BUILD set; `items`/`mapping` what
    APPEND(S)/SETITEM(S) added.
    """

    __slots__ = ("args", "state", "items", "mapping")
    qualname = "?"

    def __new__(cls, *args: Any, **kwargs: Any) -> Inert:
        obj = object.__new__(cls)
        obj.args = args + ((kwargs,) if kwargs else ())
        obj.state = None
        obj.items = []
        obj.mapping = {}
        return obj

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass  # everything was recorded by __new__

    # BUILD: record the state; numpy arrays keep only their metadata.
    def __setstate__(self, state: Any) -> None:
        if self.qualname in _NUMPY_RECONSTRUCT and isinstance(state, tuple) and len(state) >= 3:
            self.state = {"shape": state[1], "dtype": _dtype_name(state[2])}
        elif isinstance(state, bytes | bytearray) and len(state) > _MAX_KEPT_BYTES:
            self.state = {"bytes": len(state)}
        else:
            self.state = state

    # REDUCE on a stand-in instance (e.g. the result of `getattr(EnvArgs, 'x')` called later).
    # One result class per callee class, and a call of a call result is of that same class: a chain
    # of calls must not grow names (quadratic memory) or create a class per call.
    def __call__(self, *args: Any, **kwargs: Any) -> Inert:
        cls = type(self)
        call = cls if cls.qualname.endswith("()") else cls.__dict__.get("_call_result")
        if call is None:
            call = cls._call_result = _stand_in_class(f"{cls.qualname}()")
        return call.__new__(call, self, *args, **kwargs)

    def append(self, item: Any) -> None:
        self.items.append(item)

    def extend(self, items: Any) -> None:
        self.items.extend(items)

    def add(self, item: Any) -> None:
        self.items.append(item)

    def __setitem__(self, key: Any, value: Any) -> None:
        try:
            self.mapping[key] = value
        except TypeError:  # unhashable key from a hostile pickle: keep it as a pair
            self.items.append((key, value))

    @property
    def fields(self) -> dict[str, Any]:
        """The object's attributes as a dict: dict state, (dict, slots) state and set items merged."""
        out: dict[str, Any] = {}
        state = self.state
        if (
            isinstance(state, tuple)
            and len(state) == 2
            and all(s is None or isinstance(s, dict) for s in state)
        ):
            for part in state:
                out.update(part or {})
        elif isinstance(state, dict):
            out.update(state)
        out.update({k: v for k, v in self.mapping.items() if isinstance(k, str)})
        return out

    def get(self, key: str, default: Any = None) -> Any:
        return self.fields.get(key, default)

    def __repr__(self) -> str:
        return f"<inert {self.qualname}>"


def _dtype_name(dtype: Any) -> str:
    if isinstance(dtype, Inert) and dtype.args and isinstance(dtype.args[0], str):
        order = dtype.state[1] if isinstance(dtype.state, tuple) and len(dtype.state) > 1 else ""
        return f"{order if order in ('<', '>') else ''}{dtype.args[0]}"
    return str(dtype)


def _stand_in_class(qualname: str) -> type[Inert]:
    # A fresh subclass per name: NEWOBJ needs a real type, and the name is kept as data.
    return type("Inert", (Inert,), {"__slots__": (), "qualname": qualname})


_GENERIC_RECONSTRUCTOR = _stand_in_class("copyreg._reconstructor")
_GENERIC_NEWOBJ = _stand_in_class("copyreg.__newobj__")
_GENERIC_ENCODE = _stand_in_class("_codecs.encode")


def _reconstructor(cls: Any, base: Any = None, state: Any = None, *rest: Any) -> Any:
    """copyreg._reconstructor / __newobj__ stand-in: make an inert instance of a stand-in class."""
    if isinstance(cls, type) and issubclass(cls, Inert):
        obj = cls.__new__(cls)
        if state is not None:
            obj.__setstate__(state)
        return obj
    return _GENERIC_RECONSTRUCTOR.__new__(_GENERIC_RECONSTRUCTOR, cls, base, state, *rest)


def _newobj(cls: Any, *args: Any) -> Any:
    if isinstance(cls, type) and issubclass(cls, Inert):
        return cls.__new__(cls, *args)
    return _GENERIC_NEWOBJ.__new__(_GENERIC_NEWOBJ, cls, *args)


def _latin1_bytes(text: Any, encoding: str = "latin1") -> Any:
    """`_codecs.encode` as protocol-2 pickles use it for bytes: only str -> latin-1 bytes, else inert."""
    if isinstance(text, str) and encoding in ("latin1", "latin-1"):
        return text.encode("latin1")
    return _GENERIC_ENCODE.__new__(_GENERIC_ENCODE, text, encoding)


class _SafeFunction:
    """What `find_class` hands out for a whitelisted function: callable, but BUILD cannot touch it.

    Returning the module's function itself would let BUILD (`inst.__dict__.update(state)` and
    `setattr(inst, k, v)` for objects without `__setstate__`) rewrite its `__defaults__` or attributes
    for every later load in the process.
    """

    __slots__ = ("_fn",)

    def __init__(self, fn: Any) -> None:
        self._fn = fn

    def __call__(self, *args: Any) -> Any:
        return self._fn(*args)

    def __setstate__(self, state: Any) -> None:
        raise pickle.UnpicklingError("cannot set the state of a function")

    def __repr__(self) -> str:
        return f"<safe {self._fn.__name__}>"


_SAFE_FUNCTIONS = {
    ("_codecs", "encode"): _SafeFunction(_latin1_bytes),
    ("copyreg", "_reconstructor"): _SafeFunction(_reconstructor),
    ("copy_reg", "_reconstructor"): _SafeFunction(_reconstructor),
    ("copyreg", "__newobj__"): _SafeFunction(_newobj),
    ("copy_reg", "__newobj__"): _SafeFunction(_newobj),
}


class RestrictedUnpickler(pickle.Unpickler):
    """`find_class` returns stand-ins or whitelisted value types; it never imports a module."""

    def __init__(self, file: Any) -> None:
        super().__init__(file)
        self._classes: dict[str, type[Inert]] = {}

    def find_class(self, module: str, name: str) -> Any:
        key = (str(module), str(name))
        if key in _SAFE_TYPES:
            return _SAFE_TYPES[key]
        if key in _SAFE_FUNCTIONS:
            return _SAFE_FUNCTIONS[key]
        qualname = f"{key[0]}.{key[1]}"
        cls = self._classes.get(qualname)
        if cls is None:
            if len(self._classes) >= MAX_CLASSES:
                raise pickle.UnpicklingError(f"names more than {MAX_CLASSES:,} classes")
            cls = self._classes[qualname] = _stand_in_class(qualname)
        return cls

    def persistent_load(self, pid: Any) -> Any:
        raise pickle.UnpicklingError("persistent ids are not supported")


# Hashing a tuple recurses in C with no depth check (CPython 3.11): a dict key nested 10^6 tuples deep
# (one TUPLE1 byte per level) overflows the C stack and kills the process. A tuple's nesting is at most
# the number of tuple opcodes, which is at most the count of their bytes (TUPLE1-3; TUPLE needs a MARK).
# At most about 64 bytes of stack per level: 50,000 levels fit a default 8 MB stack twice over. Real
# step files bound at ~2% of their bytes (1.6 MB: 27,000) and load inline; a thread costs ~2x.
_INLINE_TUPLE_DEPTH = 50_000
_MAX_TUPLE_DEPTH = 2_000_000  # real step files: ~2% of their bytes; 64 MB of random bytes: 1.6%
_STACK_PER_LEVEL = 128
_STACK_BASE = 16 * 1024 * 1024
_STACK_LOCK = threading.Lock()


_TUPLE_BYTES = b"\x85\x86\x87t("  # TUPLE1, TUPLE2, TUPLE3, TUPLE, MARK
_OTHER_BYTES = bytes(b for b in range(256) if b not in _TUPLE_BYTES)


def _tuple_depth_bound(data: bytes) -> int:
    kept = data.translate(None, _OTHER_BYTES)  # one pass; the rest counts a few thousand bytes
    n_tuple, n_mark = kept.count(b"t"), kept.count(b"(")
    return 1 + len(kept) - n_tuple - n_mark + min(n_tuple, n_mark)


def loads(data: bytes) -> Any:
    """Unpickle untrusted bytes into plain data and `Inert` stand-ins. Raises SafePickleError, also for
    a pickle that could build or reference more than MAX_OBJECTS objects, names more than MAX_CLASSES classes or needs
    more than LOAD_HEADROOM of memory (core.files.pickle_limits).

    The result may share one object many times (the pickle memo): whoever copies it out counts what it
    copies with a `Budget` (see MAX_MATERIALISED_BYTES); `to_plain` does.
    """
    objects = objects_bound(data)
    if objects > MAX_OBJECTS:
        raise SafePickleError(
            f"would build or reference up to {objects:,} objects (at most {MAX_OBJECTS:,}); refused"
        )
    depth = _tuple_depth_bound(data)
    if depth > _MAX_TUPLE_DEPTH:
        raise SafePickleError(f"not a readable pickle (up to {depth} nested tuples; refused)")
    with memory_ceiling():
        if depth <= _INLINE_TUPLE_DEPTH:
            return _load(data)
        return _load_with_stack(data, _STACK_BASE + _STACK_PER_LEVEL * depth)


# A pickle's memo lets one 1 MiB string be referenced thousands of times for a few bytes each; copied
# out (to_plain, JSON, a joined chat) every reference becomes a copy: a 15 KB step file made a 3 GiB
# string. Real step files copy out at most 13 MB (docs/limits.md); this is ten times that. Counting
# happens where data is copied, not by walking every loaded object (that walk doubled import CPU time).
MAX_MATERIALISED_BYTES = 128 * 1024 * 1024
# What one container or scalar costs besides its text: bounds the work too (a memo-shared tree of
# lists doubles per level) to limit / 64 visits.
_NODE_COST = 64


class Budget:
    """Bytes one pickle's data may still materialise; shared references are charged each time copied."""

    __slots__ = ("left", "limit")

    def __init__(self, limit: int = MAX_MATERIALISED_BYTES) -> None:
        self.limit = self.left = limit

    def take(self, n: int) -> None:
        self.left -= n
        if self.left < 0:
            raise SafePickleError(
                f"expands to more than {self.limit >> 20} MB when its shared references are copied out; refused"
            )


def _load_with_stack(data: bytes, stack_bytes: int) -> Any:
    """`_load` in a thread whose stack holds the deepest tuple the data can nest (reserved, not used)."""
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(_load(data))
        except SafePickleError as exc:
            outcome.append(exc)

    with _STACK_LOCK:  # stack_size is process-wide: set it only for this thread
        previous = threading.stack_size(stack_bytes)
        try:
            thread = threading.Thread(target=run, name="safe_pickle", daemon=True)
            thread.start()
        except (RuntimeError, ValueError, MemoryError) as exc:
            raise SafePickleError(f"not a readable pickle (no stack for its nesting: {exc})") from None
        finally:
            threading.stack_size(previous)
    thread.join()
    if not outcome or isinstance(outcome[0], SafePickleError):
        raise outcome[0] if outcome else SafePickleError("not a readable pickle")
    return outcome[0]


def _load(data: bytes) -> Any:
    # The cyclic GC only slows the millions of small containers a step builds; none forms a cycle.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return RestrictedUnpickler(io.BytesIO(data)).load()
    except MemoryError:  # the ceiling of core.files.pickle_limits.memory_ceiling
        raise SafePickleError(
            f"needs more than {LOAD_HEADROOM >> 20} MB of memory to load; refused"
        ) from None
    except Exception as exc:  # a hostile pickle may raise anything from the opcodes it uses
        raise SafePickleError(f"not a readable pickle ({type(exc).__name__}: {first_line(exc)})") from None
    finally:
        if was_enabled:
            gc.enable()


def gunzip(data: bytes, limit: int = MAX_DECOMPRESSED_BYTES) -> bytes:
    """Decompress a gzip stream; a stream cut before its end raises SafePickleError (truncated)."""
    d = zlib.decompressobj(wbits=31)
    try:
        out = d.decompress(data, limit)
    except zlib.error as exc:
        raise SafePickleError(f"not a gzip file ({first_line(exc)})") from None
    if d.unconsumed_tail:
        raise SafePickleError(f"decompresses to more than {limit} bytes")
    if not d.eof:
        raise SafePickleError("truncated gzip stream (ended before the end-of-stream marker)")
    return out


def load_path(path: str | Path, limit: int = MAX_DECOMPRESSED_BYTES) -> Any:
    """Read a `.pkl.gz` or `.pkl` file safely (gzip detected by its magic bytes)."""
    with open(path, "rb") as fh:
        raw = fh.read(limit + 1)  # never the whole of a huge file
    if len(raw) > limit:
        raise SafePickleError(f"file larger than {limit} bytes")
    if raw[:2] == b"\x1f\x8b":
        raw = gunzip(raw, limit)
    return loads(raw)


def to_plain(obj: Any, _seen: set[int] | None = None, budget: Budget | None = None) -> Any:
    """Stand-ins and containers as JSON-like data: {"__class__": name, "args", "state", ...}.

    Raises SafePickleError past `budget` (default MAX_MATERIALISED_BYTES): every shared reference is a copy.
    """
    seen = set() if _seen is None else _seen
    budget = Budget() if budget is None else budget
    budget.take(_NODE_COST + (len(obj) if isinstance(obj, str | bytes | bytearray) else 0))
    if obj is None or isinstance(obj, str | int | float | bool):
        return obj
    if isinstance(obj, bytes | bytearray):
        return {"__bytes__": len(obj)}
    if id(obj) in seen:
        return "<cycle>"
    seen.add(id(obj))
    try:
        if isinstance(obj, Inert):
            out: dict[str, Any] = {"__class__": obj.qualname}
            if obj.args:
                out["args"] = to_plain(list(obj.args), seen, budget)
            if obj.state is not None:
                out["state"] = to_plain(obj.state, seen, budget)
            if obj.items:
                out["items"] = to_plain(obj.items, seen, budget)
            if obj.mapping:
                out["mapping"] = to_plain(obj.mapping, seen, budget)
            return out
        if isinstance(obj, dict):
            return {str(k): to_plain(v, seen, budget) for k, v in obj.items()}
        if isinstance(obj, list | tuple | set | frozenset):
            return [to_plain(v, seen, budget) for v in obj]
        if isinstance(obj, datetime.date | datetime.time | datetime.timedelta):
            return str(obj)
        if isinstance(obj, type) and issubclass(obj, Inert):
            return f"<class {obj.qualname}>"
        return repr(obj)
    finally:
        seen.discard(id(obj))
