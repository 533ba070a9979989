"""The restricted unpickler: hostile pickles stay inert, real BrowserGym step files still read."""

from __future__ import annotations

import datetime
import gzip
import io
import os
import pickle
import subprocess
import sys
import zlib

import pytest
from build_cache import built_db

from core.files import safe_pickle
from core.files.safe_pickle import Inert, SafePickleError

RUN = "browsergym-run"


class _RunsShell:
    """Trusted pickling side only: unpickling this with pickle.load would run a shell command."""

    def __init__(self, command: str):
        self.command = command

    def __reduce__(self):
        return (os.system, (self.command,))


class _WritesOnSetstate:
    """A BUILD that would write a file if the real class were used."""

    def __init__(self, path: str):
        self.path = path

    def __setstate__(self, state):  # pragma: no cover - must never run during safe loading
        with open(state["path"], "w") as fh:
            fh.write("ran")


@pytest.mark.parametrize("protocol", range(0, pickle.HIGHEST_PROTOCOL + 1))
def test_os_system_reduce_is_inert(tmp_path, protocol):
    marker = tmp_path / "pwned"
    data = pickle.dumps(_RunsShell(f"touch {marker}"), protocol=protocol)
    assert b"system" in data  # the pickle really names os.system

    obj = safe_pickle.loads(data)

    assert not marker.exists()
    assert isinstance(obj, Inert)
    assert obj.qualname == f"{os.system.__module__}.system"
    assert obj.args == (f"touch {marker}",)  # the command is kept as plain data, never run


def test_setstate_of_a_real_class_is_never_called(tmp_path):
    marker = tmp_path / "written"
    data = pickle.dumps(_WritesOnSetstate(str(marker)), protocol=4)
    obj = safe_pickle.loads(data)
    assert not marker.exists()
    assert obj.qualname.endswith("_WritesOnSetstate")
    assert obj.fields == {"path": str(marker)}


def test_chained_getattr_call_stays_inert(tmp_path):
    marker = tmp_path / "chained"
    # getattr(os.system, '__call__')('touch marker'), written by hand in protocol 0.
    data = b"cbuiltins\ngetattr\n(cos\nsystem\nS'__call__'\ntR(S'touch " + str(marker).encode() + b"'\ntR."
    obj = safe_pickle.loads(data)
    assert not marker.exists()
    assert isinstance(obj, Inert)
    assert obj.qualname == "builtins.getattr()"


def test_find_class_never_imports_a_module(tmp_path, monkeypatch):
    # A module that writes a marker when imported: naming it in a pickle must not import it.
    marker = tmp_path / "imported"
    (tmp_path / "evil_module_for_test.py").write_text(
        f"open({str(marker)!r}, 'w').write('x')\nclass Thing: pass\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    data = b"\x80\x04cevil_module_for_test\nThing\n)\x81."
    obj = safe_pickle.loads(data)
    assert isinstance(obj, Inert) and obj.qualname == "evil_module_for_test.Thing"
    assert "evil_module_for_test" not in sys.modules
    assert not marker.exists()


def test_value_types_are_rebuilt_for_real():
    value = {"when": datetime.datetime(2026, 7, 1, 16, 46, 46), "tags": {"a", "b"}, "z": complex(1, 2)}
    assert safe_pickle.loads(pickle.dumps(value, protocol=2)) == value


def test_garbage_and_truncation_are_refused(tmp_path):
    with pytest.raises(SafePickleError):
        safe_pickle.loads(os.urandom(64) + b"\x00")
    with pytest.raises(SafePickleError, match="not a gzip"):
        safe_pickle.gunzip(b"\x1f\x8bnot really gzip")
    cut = gzip.compress(pickle.dumps(list(range(10000))))[:-40]
    with pytest.raises(SafePickleError, match="truncated"):
        safe_pickle.gunzip(cut)


def test_gzip_bomb_stops_at_the_limit():
    bomb = gzip.compress(b"\x00" * (4 * 1024 * 1024))
    with pytest.raises(SafePickleError, match="more than"):
        safe_pickle.gunzip(bomb, limit=1024 * 1024)
    assert len(safe_pickle.gunzip(bomb)) == 4 * 1024 * 1024


def test_load_path_bounds_what_it_reads_and_what_it_inflates(tmp_path):
    # 300 MB of EMPTY_LIST+APPEND opcodes gzip to 300 KB; the old 512 MB cap let them through, and
    # unpickled they are ~10 GB of lists. A plain (not gzipped) file was read whole, however large.
    limit = safe_pickle.MAX_DECOMPRESSED_BYTES
    assert limit <= 64 * 1024 * 1024
    bomb = tmp_path / "step_0.pkl.gz"
    with gzip.open(bomb, "wb", compresslevel=1) as fh:
        fh.write(b"\x80\x04]")
        for _ in range(limit // (1 << 20) + 1):
            fh.write(b"]a" * (1 << 19))
        fh.write(b".")
    with pytest.raises(SafePickleError, match="more than"):
        safe_pickle.load_path(bomb)
    plain = tmp_path / "exp_args.pkl"
    plain.write_bytes(pickle.dumps(b"x" * 4096, protocol=4))
    with pytest.raises(SafePickleError, match="larger than"):
        safe_pickle.load_path(plain, limit=1024)
    assert safe_pickle.load_path(plain) == b"x" * 4096


def test_real_step_file_reads_as_plain_data(shared_data):
    # README (browsergym-run, "step_<n>.pkl.gz (StepInfo fields)"): a StepInfo with obs, action, profiling;
    # obs.active_page_index and obs.elapsed_time are numpy arrays.
    step = safe_pickle.load_path(shared_data / RUN / "webarena.188" / "step_0.pkl.gz")
    assert step.qualname == "browsergym.experiments.loop.StepInfo"
    fields = step.fields
    assert fields["step"] == 0
    assert isinstance(fields["action"], str) and fields["action"].startswith("click(")
    obs = fields["obs"]
    assert isinstance(obs["axtree_txt"], str) and obs["axtree_txt"]
    for array in (obs["active_page_index"], obs["elapsed_time"]):
        assert isinstance(array, Inert)
        assert isinstance(array.state["shape"], tuple) and array.state["dtype"]  # metadata, no bytes
    assert fields["profiling"].qualname.endswith("StepTimestamps")
    assert all(isinstance(v, int | float) for v in fields["profiling"].fields.values())


def test_the_sample_truncated_gzip_raises(shared_data):
    # README: `2026-06-30_20-03-06_..._webarena.26_6/step_1.pkl.gz` is a truncated gzip (unreadable).
    (episode,) = [p for p in (shared_data / RUN).iterdir() if p.name.endswith("webarena.26_6")]
    with pytest.raises(SafePickleError, match="truncated"):
        safe_pickle.load_path(episode / "step_1.pkl.gz")
    assert isinstance(safe_pickle.load_path(episode / "step_0.pkl.gz"), Inert)


def test_exp_args_with_getattr_reduce_reads(shared_data):
    # README "Reading notes": exp_args.pkl fails on a getattr(EnvArgs, 'make_env_with_proxy') reduce
    # unless the stand-in allows it; ours records it.
    exp = safe_pickle.load_path(shared_data / RUN / "webarena.22" / "exp_args.pkl")
    env_args = exp.fields["env_args"].fields
    assert env_args["task_name"] == "webarena.22"
    assert env_args["make_env"].qualname == "builtins.getattr"
    plain = safe_pickle.to_plain(exp)
    assert plain["__class__"] == "browsergym.experiments.loop.ExpArgs"


def test_no_pickle_load_on_user_files_in_core(repo_root):
    # The only unpickler in core is the restricted one.
    offenders = []
    for path in (repo_root / "core").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        if "pickle.load(" in text or "pickle.loads(" in text or "pickle.Unpickler(" in text:
            offenders.append(path.name)
    assert offenders == []


def test_zlib_wbits_matches_gzip():
    # gunzip uses zlib with the gzip wrapper; a normal gzip round-trips.
    data = b"hello" * 1000
    assert safe_pickle.gunzip(gzip.compress(data)) == data
    with pytest.raises(SafePickleError):
        safe_pickle.gunzip(zlib.compress(data))  # zlib stream, not gzip


@pytest.mark.parametrize("module, name", [("copyreg", "_reconstructor"), ("_codecs", "encode")])
def test_build_cannot_rewrite_the_whitelisted_functions(module, name):
    # GLOBAL names a whitelisted function, BUILD then sets its attributes: with the real function
    # this rewrote `__defaults__` of core.files.safe_pickle's own code for every later load.
    slots = pickle.dumps((None, {"__defaults__": ("owned",), "owned": True}), protocol=2)[2:-1]
    data = b"\x80\x02c" + f"{module}\n{name}\n".encode() + slots + b"b."
    before = (safe_pickle._reconstructor.__defaults__, safe_pickle._latin1_bytes.__defaults__)
    with pytest.raises(SafePickleError):
        safe_pickle.loads(data)
    assert (safe_pickle._reconstructor.__defaults__, safe_pickle._latin1_bytes.__defaults__) == before
    assert not hasattr(safe_pickle._reconstructor, "owned") and not hasattr(
        safe_pickle._latin1_bytes, "owned"
    )


def test_a_chain_of_calls_stays_small():
    # x.y() called on its result 20,000 times (2 bytes per call): each result used to get a new class
    # named one "()" longer, so memory grew with the square of the chain (40 KB -> 400 MB).
    n = 20_000
    data = b"\x80\x02cx\ny\n)\x81" + b")R" * n + b"."
    obj = safe_pickle.loads(data)
    assert obj.qualname == "x.y()"
    classes, depth = set(), 0
    while isinstance(obj, Inert) and obj.args:
        classes.add(type(obj))
        obj, depth = obj.args[0], depth + 1
    assert depth == n and obj.qualname == "x.y"  # the whole chain is kept as data
    assert len(classes | {type(obj)}) == 2  # the stand-in x.y and one class for its call results


def _nested_tuple_key(depth: int) -> bytes:
    # {((...((),)...),): None}: a dict key `depth` tuples deep, one TUPLE1 byte per level.
    return b"\x80\x02}" + b")" + b"\x85" * depth + b"Ns."


def test_a_deeply_nested_dict_key_does_not_crash_the_process(repo_root):
    # Hashing the key recursed in C without a depth check: a 1 MB pickle (a few KB gzipped) was a
    # segmentation fault of the whole import. Run in a child so a crash fails this test, not pytest.
    code = (
        "import sys; from core.files import safe_pickle\n"
        f"data = b'\\x80\\x02}}' + b')' + b'\\x85' * {10**6} + b'Ns.'\n"
        "(key,) = safe_pickle.loads(data)\n"
        "depth = 0\n"
        "while key:\n"
        "    (key,), depth = key, depth + 1\n"
        "print(depth)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=repo_root)
    assert done.returncode == 0, done.stderr[-500:]
    assert done.stdout.strip() == str(10**6)  # read in full, in a thread with a stack to match


def test_tuple_nesting_beyond_any_real_file_is_refused():
    with pytest.raises(SafePickleError, match="nested tuples"):
        safe_pickle.loads(_nested_tuple_key(safe_pickle._MAX_TUPLE_DEPTH + 1))


def test_shared_references_count_each_time_they_are_copied_out():
    """A pickle's memo shares one 1 MiB string 3,000 times in a few KB: copying it out must stop at
    the budget, not build 3 GiB (the issue's segfault inside orjson.dumps)."""
    data = pickle.dumps(["A" * (1 << 20)] * 3000, protocol=4)
    assert len(data) < 2 << 20
    obj = safe_pickle.loads(data)
    with pytest.raises(safe_pickle.SafePickleError, match="shared references"):
        safe_pickle.to_plain(obj)
    assert len(safe_pickle.to_plain(safe_pickle.loads(pickle.dumps(["A" * 1000] * 30)))) == 30


# -- bounds on what a pickle builds (core.files.pickle_limits) -------------------------------------------
def _child_load(repo_root, path) -> tuple[str, float, float]:
    """Load `path` in a child process: (its one line, seconds, peak RSS in MB). The peak is the child's
    own (VmHWM of its image): ru_maxrss would also count the parent's pages it had before exec."""
    code = (
        "import re, sys, time\n"
        "from core.files import safe_pickle\n"
        "started = time.perf_counter()\n"
        "try:\n"
        "    safe_pickle.load_path(sys.argv[1]); line = 'loaded'\n"
        "except safe_pickle.SafePickleError as exc:\n"
        "    line = str(exc)\n"
        "peak = int(re.search(r'VmHWM:\\s+(\\d+) kB', open('/proc/self/status').read()).group(1)) / 1024\n"
        "print(line, time.perf_counter() - started, peak, sep='\\t')\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, cwd=repo_root,
                          timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    line, seconds, rss = done.stdout.rstrip("\n").split("\t")
    return line, float(seconds), float(rss)


def _gzip_repeated(opcodes: bytes, times: int, head: bytes = b"\x80\x04(", tail: bytes = b"l.") -> bytes:
    out = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = opcodes * (1 << 20)
    parts = [out.compress(head)]
    for _ in range(times // (1 << 20)):
        parts.append(out.compress(block))
    parts += [out.compress(opcodes * (times % (1 << 20)) + tail), out.flush()]
    return b"".join(parts)


def test_a_step_file_of_60_million_empty_dicts_is_refused_within_500_mb(repo_root, tmp_path):
    """The issue's case: 60 MB of EMPTY_DICT opcodes (58 KB gzipped) built 60 million dicts, 5.6 GB."""
    path = tmp_path / "step_1.pkl.gz"
    path.write_bytes(_gzip_repeated(b"}", 60_000_000))
    assert round(path.stat().st_size / 1000) == 58  # "58 KB gzipped" (docs/limits.md)
    line, seconds, rss = _child_load(repo_root, path)
    assert line == "would build or reference up to 60,000,002 objects (at most 3,000,000); refused"
    assert rss <= 500 and seconds < 60, (rss, seconds)


# Built when the case runs, not at collection: pytest-xdist's workers must collect identical ids (gzip
# stamps the time), and collection stays quick.
HOSTILE_STEP_FILES = {
    # 9 bytes: a memo index of 2**30 makes the C unpickler allocate and zero a 16 GB table.
    "memo index 2**30": (lambda: gzip.compress(b"\x80\x04}r" + (1 << 30).to_bytes(4, "little") + b"."), "memory"),
    "60 million DUPs": (lambda: _gzip_repeated(b"2", 60_000_000, head=b"\x80\x04(}"), "objects"),
    "60 million MEMOIZEs": (lambda: _gzip_repeated(b"\x94", 60_000_000, head=b"\x80\x04}", tail=b"."), "objects"),
    "2.9 million empty sets": (lambda: _gzip_repeated(b"\x8f", 2_900_000), "loaded"),  # just under the count
    "20,000 classes": (
        lambda: gzip.compress(b"\x80\x04(" + b"".join(b"c%x\n%x\n" % (i, i) for i in range(20_000)) + b"l."),
        "classes",
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", list(HOSTILE_STEP_FILES))
def test_hostile_step_files_stay_within_2_gb_and_60_s(name, repo_root, tmp_path):
    data, says = HOSTILE_STEP_FILES[name]
    path = tmp_path / "step_1.pkl.gz"
    path.write_bytes(data())
    line, seconds, rss = _child_load(repo_root, path)
    assert says in line and "\n" not in line, line
    assert rss <= 2048 and seconds < 60, (rss, seconds)


def _real_steps(shared_data) -> list[bytes]:
    found = []
    for path in sorted((shared_data / RUN).rglob("*.pkl*")):
        raw = path.read_bytes()
        try:
            found.append(safe_pickle.gunzip(raw) if raw[:2] == b"\x1f\x8b" else raw)
        except SafePickleError:  # the sample's one truncated file
            continue
    return found


def _stand_in(qualname: str) -> None:
    """Only named in `_TreePickler`'s output; never called."""


class _TreePickler(pickle.Pickler):
    """Pickles a loaded tree with each stand-in as its name and fields, and each stand-in class as its name
    (each load makes its own classes); everything else as pickle writes it, types and order included."""

    def reducer_override(self, obj):  # called in C only for what is not a plain value or container
        if isinstance(obj, Inert):  # the fields as BUILD state: written after the object, so a cycle ends
            return _stand_in, (obj.qualname,), (obj.args, obj.state, obj.items, obj.mapping)
        if isinstance(obj, type) and issubclass(obj, Inert):
            return _stand_in, (f"class {obj.qualname}",)
        return NotImplemented


def _tree_bytes(tree) -> bytes:
    buffer = io.BytesIO()
    _TreePickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(tree)
    return buffer.getvalue()


def _same_tree(a, b) -> bool:
    """`a` and `b` are the same tree: the same types, stand-ins of the same names with the same fields, the
    same items in the same order, the same objects shared. What comparing their `to_plain` forms asserts,
    without building them (8 s for the 74 real step files; walking both trees in Python, 10 s): their
    pickles, written in C, are equal."""
    return _tree_bytes(a) == _tree_bytes(b)


class _Step:
    """A step-like object of a class the safe unpickler does not import (it becomes a stand-in)."""

    def __init__(self) -> None:
        self.steps = [{"action": "click('12')"}, {"action": "fill('3', 'x')"}]
        self.obs = {"url": "http://localhost:7770/", "shape": (2, 3)}


def test_same_tree_tells_the_trees_apart():
    """The comparison the bounds test relies on finds a difference anywhere in a tree."""
    data = pickle.dumps(_Step())
    one, other = safe_pickle.loads(data), safe_pickle.loads(data)
    assert _same_tree(one, other)
    other.state["steps"][1]["action"] = "click('13')"
    assert not _same_tree(one, other)
    assert not _same_tree({"a": [1, 2]}, {"a": [1, 2.0]}) and not _same_tree({"a": 1}, {"b": 1})
    assert not _same_tree([1, {2}], [1, {3}]) and _same_tree([1, {2}], [1, {2}])


@pytest.fixture(scope="module")
def objects_built(shared_data, tmp_path_factory) -> int:
    """The most objects a real step file's opcodes build or reference (pickletools' opcode walk, 7-15 s
    in Python), kept in the build cache under the files' bytes and our code."""
    import pickletools

    from core.files import pickle_limits

    def build(path) -> None:
        counts = [
            sum(op.name in pickle_limits.COUNTED_OPCODES for op, _, _ in pickletools.genops(data))
            for data in _real_steps(shared_data)
        ]
        path.write_text(str(max(counts)))

    return int(
        built_db(tmp_path_factory, "pickle-opcodes", build, (shared_data / RUN,), "built.txt").read_text()
    )


def test_real_step_files_are_far_below_every_bound(shared_data, repo_root, objects_built):
    """docs/limits.md gives these counts; the bounds keep their headroom over them, and a real file
    loads to exactly what the unpickler builds without the bounds."""
    from core.files import pickle_limits

    steps = _real_steps(shared_data)
    assert len(steps) >= 50
    bound = max(pickle_limits.objects_bound(data) for data in steps)
    built = objects_built
    classes = 0
    for data in steps:
        unpickler = safe_pickle.RestrictedUnpickler(io.BytesIO(data))
        unbounded = unpickler.load()
        classes = max(classes, len(unpickler._classes))
        assert _same_tree(safe_pickle.loads(data), unbounded)
    limits = " ".join((repo_root / "docs" / "limits.md").read_text(encoding="utf-8").split())
    assert f"at most {bound:,} (their opcodes build or reference {built:,} objects)" in limits
    assert f"name at most {classes} classes" in limits
    assert 4 * bound <= pickle_limits.MAX_OBJECTS and 1000 * classes <= pickle_limits.MAX_CLASSES
    # and the bounds are the ones the page states
    assert f"more than {pickle_limits.MAX_OBJECTS:,} objects is refused" in limits
    assert f"more than {pickle_limits.MAX_CLASSES:,} distinct classes" in limits
    assert f"grow by at most {pickle_limits.LOAD_HEADROOM >> 30} GB (RLIMIT_DATA)" in limits


def test_the_memory_ceiling_is_lifted_after_each_load():
    import resource

    before = resource.getrlimit(resource.RLIMIT_DATA)
    with pytest.raises(SafePickleError, match="memory"):
        safe_pickle.loads(b"\x80\x04}r" + (1 << 30).to_bytes(4, "little") + b".")
    assert safe_pickle.loads(pickle.dumps({"a": [1, 2]})) == {"a": [1, 2]}
    assert resource.getrlimit(resource.RLIMIT_DATA) == before
