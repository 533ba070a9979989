"""The hostile-input corpus: malformed, hostile and odd inputs for every importer, generated on demand.

Every case writes its input under a directory of its own (large files are sparse or generated there,
never committed) and names the `trajreview import ...` arguments to run on it and the outcome expected:

- `refused`: exit code 2, one line `error: ...` naming `names`, the database unchanged;
- `problem`: exit code 0, a problem recorded in `import_problems` naming `names`;
- `imported`: exit code 0 (problems allowed).

A pickle case plants `MARKER` commands: no file named MARKER may ever appear. `run_corpus.py` runs the
corpus and prints the table (tried, clean, problem recorded, traceback, crash, hang); `test_hostile.py`
runs it under pytest.
"""

from __future__ import annotations

import dataclasses
import gzip
import io
import os
import pickle
import shutil
import tarfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import orjson

MARKER = "MARKER"
SECRET = "SECRET-OUTSIDE-THE-FOLDER-7f3a"
MB = 1 << 20


@dataclass(frozen=True)
class Case:
    name: str
    importer: str
    build: Callable[[Path], list[str]]  # writes the input under the directory, returns the CLI args
    expect: str  # refused | problem | imported
    names: str  # what the error line or a problem must name (a file or folder name)
    says: str = ""  # what the error line or that problem must also say (the reason), when it matters
    needs_shared: bool = False  # builds on a file only ../shared/data has (the AgentLab episodes)


def shipped() -> Path:
    """The demo set shipped in data/demo: real files every case can start from."""
    from core.paths import SHIPPED_DATA

    return SHIPPED_DATA


def shared() -> Path:
    from core.paths import shared_data_dir

    return shared_data_dir()


def _secret(root: Path) -> Path:
    """A file outside the imported folder that a link may point at."""
    outside = root / "outside"
    outside.mkdir(exist_ok=True)
    path = outside / "id_rsa"
    path.write_text(f'"{SECRET}"\n')
    return path


def _sparse(path: Path, size: int, head: bytes = b"") -> Path:
    """A file of `size` bytes that takes no disk space (its reader must refuse it before reading)."""
    with open(path, "wb") as handle:
        handle.write(head)
        handle.truncate(size)
    return path


def _fifo(path: Path) -> Path:
    if path.exists() or path.is_symlink():
        path.unlink()
    os.mkfifo(path)
    return path


def _link(path: Path, target: Path) -> Path:
    if path.exists() or path.is_symlink():
        path.unlink()
    path.symlink_to(target)
    return path


# -- WebArena-Verified run directories and submissions ------------------------------------------------
def _wav_dir(root: Path, task: str = "107") -> tuple[Path, Path]:
    run = root / "run"
    src = shipped() / "webarena-verified" / "demo-run" / "107"
    task_dir = run / task
    task_dir.mkdir(parents=True)
    for name in ("agent_response.json", "network.har"):
        shutil.copy(src / name, task_dir / name)
    return run, task_dir


def _wav_args(run: Path, *extra: str, score: bool = False) -> list[str]:
    return [
        "wav-run",
        str(run),
        "--run",
        "hostile",
        "--workers",
        "1",
        *(() if score else ("--no-score",)),
        *extra,
    ]


def _wav_case(name: str, mutate: Callable[[Path, Path], None], expect: str, names: str, score: bool = False):
    def build(root: Path) -> list[str]:
        run, task_dir = _wav_dir(root)
        mutate(root, task_dir)
        return _wav_args(run, score=score)

    return Case(f"wav/{name}", "wav-dir", build, expect, names)


def _har(entries: list) -> bytes:
    return orjson.dumps({"log": {"version": "1.2", "entries": entries}})


def _entry(url: str = "http://localhost:7780/", **over) -> dict:
    entry = {
        "startedDateTime": "2025-01-01T00:00:00.000Z", "time": 1.0,
        "request": {"method": "GET", "url": url, "headers": [{"name": "Accept", "value": "text/html"}]},
        "response": {"status": 200, "headers": [], "content": {"size": 1, "mimeType": "text/html"}},
    }  # fmt: skip
    entry.update(over)
    return entry


def _write(name: str, data: bytes | str) -> Callable[[Path, Path], None]:
    def mutate(root: Path, task_dir: Path) -> None:
        payload = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
        (task_dir / name).write_bytes(payload)

    return mutate


def wav_cases() -> list[Case]:
    c = []
    c.append(_wav_case("response-link-outside", lambda r, t: _link(t / "agent_response.json", _secret(r)),
                       "problem", "agent_response.json"))  # fmt: skip
    c.append(_wav_case("har-link-outside", lambda r, t: _link(t / "network.har", _secret(r)),
                       "problem", "network.har"))  # fmt: skip
    c.append(_wav_case("response-fifo", lambda r, t: _fifo(t / "agent_response.json"), "problem",
                       "agent_response.json"))  # fmt: skip
    c.append(_says(_wav_case("har-fifo", lambda r, t: _fifo(t / "network.har"), "problem", "network.har"),
                   "FIFO"))  # fmt: skip
    c.append(_wav_case("har-fifo-scored", lambda r, t: _fifo(t / "network.har"), "problem", "network.har",
                       score=True))  # fmt: skip
    c.append(_wav_case("har-300mb-sparse", lambda r, t: _sparse(t / "network.har", 300 * MB, b'{"log":'),
                       "problem", "network.har"))  # fmt: skip
    c.append(_wav_case("response-10mb-sparse", lambda r, t: _sparse(t / "agent_response.json", 10 * MB),
                       "problem", "agent_response.json"))  # fmt: skip
    c.append(_wav_case("response-link-scored", lambda r, t: _link(t / "agent_response.json", _secret(r)),
                       "problem", "agent_response.json", score=True))  # fmt: skip
    c.append(_wav_case("har-directory", lambda r, t: ((t / "network.har").unlink(), (t / "network.har").mkdir()),
                       "problem", "network.har"))  # fmt: skip
    c.append(_wav_case("har-not-json", _write("network.har", b"not json at all"), "problem", "network.har"))
    c.append(_wav_case("har-truncated", _write("network.har", _har([_entry()] * 3)[:-40]), "problem",
                       "network.har"))  # fmt: skip
    c.append(_wav_case("har-entries-not-list", _write("network.har", b'{"log":{"entries":{"a":1}}}'),
                       "problem", "network.har"))  # fmt: skip
    c.append(_wav_case("har-lone-surrogates", _write("network.har", _har([_entry()]).replace(
        b"localhost", b"\\udc00\\ud800host")), "imported", "network.har"))  # fmt: skip
    c.append(_wav_case("har-deep-nesting", _write("network.har", b'{"log":{"entries":[' + b"[" * 200_000
                       + b"]" * 200_000 + b"]}}"), "imported", "network.har"))  # fmt: skip
    c.append(_wav_case("har-impossible-times", _write("network.har", _har([
        _entry(startedDateTime="2025-13-45T99:99:99Z", time="inf"), _entry(startedDateTime=1e300),
        _entry(startedDateTime="-999999-01-01T00:00:00Z")])), "imported", "network.har"))  # fmt: skip
    c.append(_wav_case("har-odd-types", _write("network.har", _har([
        1, "x", None, {"request": 5}, {"request": {"headers": [1, {"name": 2, "value": []}], "url": 7,
                                                  "postData": {"mimeType": 5, "text": {"a": 1}}}},
        _entry(response={"status": 1e300, "content": {"size": -1e300}})])),
        "imported", "network.har"))  # fmt: skip
    c.append(_wav_case("har-huge-int", _write("network.har", _har([_entry()]).replace(
        b'"time":1.0', b'"time":' + b"9" * 5000)), "imported", "network.har"))  # fmt: skip
    c.append(_wav_case("har-postdata-bomb", _write("network.har", _har([_entry(request={
        "method": "POST", "url": "http://localhost:7780/x", "headers": [],
        "postData": {"mimeType": "application/json", "text": "[" * 100_000 + "]" * 100_000}})])),
        "imported", "network.har"))  # fmt: skip
    c.append(_wav_case("response-not-utf8", _write("agent_response.json", b"\xff\xfe\x00bad"), "problem",
                       "agent_response.json"))  # fmt: skip
    c.append(
        _wav_case("response-empty", _write("agent_response.json", b""), "problem", "agent_response.json")
    )
    c.append(_wav_case("response-lone-surrogate", _write("agent_response.json",
                       b'{"task_type":"RETRIEVE","status":"SUCCESS","retrieved_data":["\\ud800"]}'),
                       "imported", "agent_response.json", score=True))  # fmt: skip
    c.append(_wav_case("response-deep", _write("agent_response.json", b"[" * 100_000 + b"]" * 100_000),
                       "imported", "agent_response.json", score=True))  # fmt: skip
    c.append(_wav_case("trace-zip-not-zip", lambda r, t: ((t / "network.har").unlink(),
                       (t / "trace.zip").write_bytes(b"PK\x03\x04garbage")), "problem", "trace.zip"))  # fmt: skip
    c.append(_wav_case("trace-zip-link", lambda r, t: ((t / "network.har").unlink(),
                       _link(t / "trace.zip", _secret(r))), "problem", "trace.zip"))  # fmt: skip
    c.append(_wav_case("trace-network-garbage", lambda r, t: ((t / "network.har").unlink(),
                       (t / "trace.network").write_bytes(b'{"type":"x"}\n\xff\xfe{{{\n')), "problem",
                       "trace.network"))  # fmt: skip

    def zip_bomb(root: Path, task_dir: Path) -> None:
        (task_dir / "network.har").unlink()
        path = task_dir / "trace.zip"
        with (
            zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as z,
            z.open("trace.network", "w", force_zip64=True) as member,
        ):
            for _ in range(300):
                member.write(b"\n" * MB)

    c.append(_wav_case("trace-zip-bomb-300mb", zip_bomb, "problem", "trace.zip"))

    def dir_case(name: str, make: Callable[[Path], None], expect: str, names: str) -> Case:
        def build(root: Path) -> list[str]:
            run, _ = _wav_dir(root)
            make(run)
            return _wav_args(run)

        return Case(f"wav/{name}", "wav-dir", build, expect, names)

    c.append(dir_case("task-id-beyond-integer", lambda run: (run / "107").rename(run / "99999999999"),
                      "problem", "99999999999"))  # fmt: skip
    c.append(dir_case("task-id-5000-digits", lambda run: (run / "107").rename(run / ("9" * 200)),
                      "problem", "999999"))  # fmt: skip
    c.append(dir_case("task-id-arabic-digits", lambda run: (run / "107").rename(run / "١٠٧"),
                      "problem", "١٠٧"))  # fmt: skip
    c.append(dir_case("task-dir-link-outside", lambda run: _link(run / "108", _secret(run.parent).parent),
                      "problem", "108"))  # fmt: skip
    c.append(dir_case("run-config-fifo", lambda run: _fifo(run / "run_config.json"), "refused",
                      "run_config.json"))  # fmt: skip
    c.append(dir_case("run-config-link-outside", lambda run: _link(run / "run_config.json", _secret(run.parent)),
                      "refused", "run_config.json"))  # fmt: skip
    c.append(dir_case("run-config-not-json", lambda run: (run / "run_config.json").write_bytes(b"{{"),
                      "refused", "run_config.json"))  # fmt: skip

    def empty(root: Path) -> list[str]:
        (root / "empty").mkdir()
        return _wav_args(root / "empty")

    def fifo_arg(root: Path) -> list[str]:
        return _wav_args(_fifo(root / "run.tar.gz"))

    def markup_name(root: Path) -> list[str]:
        run, _ = _wav_dir(root)
        return ["wav-run", str(run), "--run", "[/bad] [bold]x", "--workers", "1", "--no-score"]

    c.append(Case("wav/empty-dir", "wav-dir", empty, "refused", "empty"))
    c.append(Case("wav/fifo-as-argument", "wav-dir", fifo_arg, "refused", "run.tar.gz"))
    c.append(Case("wav/run-name-markup", "wav-dir", markup_name, "imported", ""))
    return c


def _tar(root: Path, members: list[tuple[tarfile.TarInfo, bytes | None]], name: str = "sub.tar.gz") -> Path:
    path = root / name
    with tarfile.open(path, "w:gz", compresslevel=1) as archive:
        for info, data in members:
            archive.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


def _member(name: str, data: bytes = b"", kind: bytes = tarfile.REGTYPE, link: str = "") -> tuple:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    info.size = len(data) if kind == tarfile.REGTYPE else 0
    return info, data if kind == tarfile.REGTYPE else None


def _real_task(task: str = "107", prefix: str = "sub/") -> list[tuple]:
    src = shipped() / "webarena-verified" / "demo-run" / "107"
    return [
        _member(f"{prefix}{task}/{n}", (src / n).read_bytes()) for n in ("agent_response.json", "network.har")
    ]


def tar_cases() -> list[Case]:
    def case(name: str, members: Callable[[], list[tuple]], expect: str, names: str, score: bool = False):
        def build(root: Path) -> list[str]:
            return _wav_args(_tar(root, [_member("sub/summary.json", b"{}"), *members()]), score=score)

        return Case(f"tar/{name}", "wav-tar", build, expect, names)

    c = [
        case("absolute-member", lambda: [*_real_task(), _member("/etc/107/network.har", b"x")], "problem",
             "/etc/107"),
        case("dotdot-member", lambda: [*_real_task(), _member("sub/../../107/agent_response.json", b"x")],
             "problem", ".."),
        case("symlink-member", lambda: [_real_task()[0], _member("sub/107/network.har", kind=tarfile.SYMTYPE,
             link="/etc/passwd")], "problem", "network.har"),
        case("hardlink-member", lambda: [_real_task()[1], _member("sub/107/agent_response.json",
             kind=tarfile.LNKTYPE, link="/etc/passwd")], "problem", "agent_response.json"),
        case("fifo-member", lambda: [_real_task()[0], _member("sub/107/network.har", kind=tarfile.FIFOTYPE)],
             "problem", "network.har"),
        case("device-member", lambda: [_real_task()[0], _member("sub/107/network.har", kind=tarfile.CHRTYPE)],
             "problem", "network.har"),
        # Members whose folder is no task id (11 digits, Arabic-Indic digits) are not task files.
        case("task-id-beyond-integer", lambda: _real_task("99999999999"), "refused", "sub.tar.gz"),
        case("task-id-arabic-digits", lambda: _real_task("١٠٧"), "refused", "sub.tar.gz"),
        case("task-id-10-digits", lambda: [*_real_task(), *_real_task("9999999999")], "problem", "9999999999"),
        case("lone-surrogate-response", lambda: [_real_task()[1], _member("sub/107/agent_response.json",
             b'{"retrieved_data": ["\\udfff"], "status": "SUCCESS", "task_type": "RETRIEVE"}')], "imported", "",
             True),
        case("summary-only", lambda: [], "refused", "sub.tar.gz"),
    ]  # fmt: skip

    def big_member(root: Path) -> list[str]:
        # A HAR member declaring 300 MB (zeros compress to ~300 KB): refused unread, never handed on.
        path = root / "big.tar.gz"
        with tarfile.open(path, "w:gz", compresslevel=1) as archive:
            for info, data in [_member("sub/summary.json", b"{}"), _real_task()[0]]:
                archive.addfile(info, io.BytesIO(data))
            info = tarfile.TarInfo("sub/107/network.har")
            info.size = 300 * MB
            archive.addfile(info, ZeroStream(info.size))
        return _wav_args(path, score=True)

    def truncated(root: Path) -> list[str]:
        path = _tar(root, [_member("sub/summary.json", b"{}"), *_real_task()])
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
        return _wav_args(path)

    def not_tar(root: Path) -> list[str]:
        path = root / "sub.tar.gz"
        path.write_bytes(gzip.compress(b"just text, not a tar archive" * 100))
        return _wav_args(path)

    def link_arg_outside(root: Path) -> list[str]:
        return _wav_args(_link(root / "sub.tar.gz", _secret(root)))

    def sparse_big(root: Path) -> list[str]:
        return _wav_args(_sparse(root / "sub.tar.gz", 5 << 30, gzip.compress(b"x")))

    c += [
        Case("tar/har-member-300mb", "wav-tar", big_member, "problem", "network.har"),
        Case("tar/truncated", "wav-tar", truncated, "refused", "sub.tar.gz"),
        Case("tar/gzip-not-tar", "wav-tar", not_tar, "refused", "sub.tar.gz"),
        Case("tar/link-to-non-tar", "wav-tar", link_arg_outside, "refused", "sub.tar.gz"),
        Case("tar/5gb-sparse", "wav-tar", sparse_big, "refused", "sub.tar.gz"),
    ]
    return c


class ZeroStream(io.RawIOBase):
    """`size` zero bytes, read in blocks (a tar member of any size without holding it)."""

    def __init__(self, size: int):
        self.left = size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        n = min(len(buffer), self.left)
        buffer[:n] = bytes(n)
        self.left -= n
        return n


# -- AgentLab / BrowserGym ------------------------------------------------------------------------------
def _episode(root: Path, name: str = "webarena.191") -> Path:
    dest = root / "run" / name
    shutil.copytree(shared() / "browsergym-run" / "webarena.191", dest, symlinks=True)
    return dest


def _step_pickle(fields: dict) -> bytes:
    # A StepInfo as BrowserGym pickles it: NEWOBJ of the class, then BUILD with its fields (memo kept).
    state = pickle.dumps(fields, protocol=2)[2:-1]
    return gzip.compress(b"\x80\x02cbrowsergym.experiments.loop\nStepInfo\n)\x81" + state + b"b.")


def _system(marker: Path) -> bytes:
    return f"cos\nsystem\n(S'touch {marker}'\ntR.".encode()


def agentlab_cases() -> list[Case]:
    def case(name: str, mutate: Callable[[Path, Path], None], expect: str, names: str) -> Case:
        def build(root: Path) -> list[str]:
            episode = _episode(root)
            mutate(root, episode)
            return ["agentlab", str(root / "run"), "--run", "hostile", "--workers", "1"]

        return Case(f"agentlab/{name}", "agentlab", build, expect, names, needs_shared=True)

    def put(name: str, data: Callable[[Path], bytes]) -> Callable[[Path, Path], None]:
        return lambda root, ep: (ep / name).write_bytes(data(root))

    big = "A" * MB
    c = [
        case("step-os-system", put("step_1.pkl.gz", lambda r: gzip.compress(_system(r / MARKER))), "problem",
             "step_1.pkl.gz"),
        case("exp-args-os-system", put("exp_args.pkl", lambda r: _system(r / MARKER)), "imported", ""),
        case("goal-os-system", put("goal_object.pkl.gz", lambda r: gzip.compress(_system(r / MARKER))),
             "imported", ""),
        case("step-builtins-eval", put("step_1.pkl.gz", lambda r: gzip.compress(
            f"cbuiltins\neval\n(S'open(\"{r / MARKER}\", \"w\")'\ntR.".encode())), "problem", "step_1.pkl.gz"),
        _says(case("step-memo-bomb-3000x1mib", put("step_1.pkl.gz", lambda r: _step_pickle(
            {"action": "noop()", "obs": {}, "agent_info": {"chat_messages": [big] * 3000}})), "problem",
            "step_1.pkl.gz"), "shared references"),
        # 2^30 references nested in lists the chat reader never copies out: imports, bounded.
        case("step-memo-bomb-nested", put("step_1.pkl.gz", lambda r: _nested_memo_bomb()), "imported", ""),
        _says(case("step-memo-bomb-chat-parts", put("step_1.pkl.gz", lambda r: _step_pickle(
            {"action": "noop()", "obs": {}, "agent_info": {"chat_messages": [
                {"role": "user", "content": [{"type": "text", "text": big}] * 3000}]}})), "problem",
            "step_1.pkl.gz"), "shared references"),
        case("step-gzip-bomb", put("step_1.pkl.gz", lambda r: _gzip_zeros(200 * MB)), "problem",
             "step_1.pkl.gz"),
        case("step-truncated-gzip", put("step_1.pkl.gz", lambda r: gzip.compress(b"\x80\x04N.")[:10]),
             "problem", "step_1.pkl.gz"),
        case("step-not-gzip", put("step_1.pkl.gz", lambda r: b"\x00\x01 not a pickle"), "problem",
             "step_1.pkl.gz"),
        case("step-deep-tuples", put("step_1.pkl.gz", lambda r: gzip.compress(
            b"\x80\x02N" + b"\x85" * 3_000_000 + b".")), "problem", "step_1.pkl.gz"),
        case("step-deep-lists", put("step_1.pkl.gz", lambda r: gzip.compress(
            b"\x80\x02" + b"]" * 200_000 + b"a" * 199_999 + b".")), "problem", "step_1.pkl.gz"),
        # 60 MB of EMPTY_DICT (58 KB gzipped) built 60 million dicts, 5.6 GB: counted and refused first.
        _says(case("step-60-million-dicts", put("step_1.pkl.gz", lambda r: _gzip_repeated(b"}", 60_000_000)),
                   "problem", "step_1.pkl.gz"), "objects"),
        # 9 bytes: a memo index of 2^30 asks the C unpickler for a 16 GB table.
        _says(case("step-memo-index-2^30", put("step_1.pkl.gz", lambda r: gzip.compress(
            b"\x80\x04}r" + (1 << 30).to_bytes(4, "little") + b".")), "problem", "step_1.pkl.gz"), "memory"),
        _says(case("step-20000-classes", put("step_1.pkl.gz", lambda r: gzip.compress(
            b"\x80\x04(" + b"".join(b"c%x\n%x\n" % (i, i) for i in range(20_000)) + b"l.")), "problem",
            "step_1.pkl.gz"), "classes"),
        case("step-lone-surrogates", put("step_1.pkl.gz", lambda r: _step_pickle(
            {"action": "click('\ud800')", "obs": {"url": "http://x/\udfff", "axtree_txt": "\ud800"},
             "agent_info": {"think": "\udc00", "chat_messages": ["\ud83d"]}})), "imported", ""),
        case("step-huge-numbers", put("step_1.pkl.gz", lambda r: _step_pickle(
            {"action": "noop()", "obs": {}, "reward": float("nan"), "profiling": {"env_start": float("inf"),
             "agent_start": -1e308}})), "imported", ""),
        case("step-link-outside", lambda r, ep: _link(ep / "step_1.pkl.gz", _secret(r)), "problem",
             "step_1.pkl.gz"),
        case("step-fifo", lambda r, ep: _fifo(ep / "step_1.pkl.gz"), "problem", "step_1.pkl.gz"),
        case("step-100mb-sparse", lambda r, ep: _sparse(ep / "step_1.pkl.gz", 100 * MB), "problem",
             "step_1.pkl.gz"),
        case("summary-fifo", lambda r, ep: _fifo(ep / "summary_info.json"), "imported", ""),
        case("summary-link-outside", lambda r, ep: _link(ep / "summary_info.json", _secret(r)), "imported", ""),
        case("summary-not-json", put("summary_info.json", lambda r: b"{{{"), "problem", "summary_info.json"),
        case("summary-lone-surrogate", put("summary_info.json",
             lambda r: b'{"cum_reward": 1e999, "err_msg": "\\ud800", "stack_trace": "\\udfff"}'), "imported", ""),
        case("experiment-log-fifo", lambda r, ep: _fifo(ep / "experiment.log"), "imported", ""),
        case("screenshot-link-outside", lambda r, ep: _link(ep / "screenshot_step_0.png", _secret(r)),
             "imported", ""),
    ]  # fmt: skip

    def renamed(name: str, expect: str, names: str) -> Case:
        def build(root: Path) -> list[str]:
            _episode(root, name)
            return ["agentlab", str(root / "run"), "--run", "hostile", "--workers", "1"]

        return Case(f"agentlab/name-{name[:30]}", "agentlab", build, expect, names, needs_shared=True)

    c += [
        # exp_args.pkl names the task (webarena.191): the id in the name is out of range, so that one counts.
        renamed("webarena.99999999999", "imported", ""),
        renamed("webarena." + "9" * 200, "imported", ""),
    ]

    def empty(root: Path) -> list[str]:
        (root / "run").mkdir()
        return ["agentlab", str(root / "run"), "--run", "hostile"]

    def markup(root: Path) -> list[str]:
        _episode(root)
        return ["agentlab", str(root / "run"), "--run", "[/bad]", "--workers", "1"]

    def episode_link(root: Path) -> list[str]:
        (root / "run").mkdir()
        _link(root / "run" / "webarena.191", shared() / "browsergym-run" / "webarena.191")
        return ["agentlab", str(root / "run"), "--run", "hostile"]

    c += [
        Case("agentlab/empty-dir", "agentlab", empty, "refused", "run"),
        Case("agentlab/run-name-markup", "agentlab", markup, "imported", "", needs_shared=True),
        Case("agentlab/episode-link-outside", "agentlab", episode_link, "refused", "run", needs_shared=True),
    ]
    return c


def _nested_memo_bomb() -> bytes:
    # 30 levels of [x, x]: 2^30 references to one 1 KiB string, in a few hundred bytes.
    value: object = "B" * 1024
    for _ in range(30):
        value = [value, value]
    return _step_pickle({"action": "noop()", "obs": {}, "agent_info": {"chat_messages": value}})


def _gzip_repeated(opcode: bytes, times: int) -> bytes:
    # MARK, `times` opcodes, LIST, STOP: gzipped block by block.
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=9) as handle:
        handle.write(b"\x80\x04(")
        for _ in range(times // MB):
            handle.write(opcode * MB)
        handle.write(opcode * (times % MB) + b"l.")
    return out.getvalue()


def _gzip_zeros(size: int) -> bytes:
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=1) as handle:
        block = bytes(MB)
        for _ in range(size // MB):
            handle.write(block)
    return out.getvalue()


# -- WebArena renders ------------------------------------------------------------------------------------
_RENDER_SRC = ("babelcloud__webarena", "gbox", "trajectories")


def _render_dir(root: Path) -> Path:
    src = shipped().joinpath("webarena-render", *_RENDER_SRC)
    dest = root / "renders"
    (dest / "results_full").mkdir(parents=True)
    (dest / "log_files").mkdir()
    shutil.copy(src / "results_full" / "render_166.html", dest / "results_full" / "render_166.html")
    shutil.copy(src / "log_files" / "task_166_20251027_213734.log", dest / "log_files" / "task_166_1.log")
    return dest


def _render(header: str, body: str = "") -> str:
    return f"<html><body><pre>{header}</pre>{body}</body></html>"


def render_cases() -> list[Case]:
    def case(name: str, mutate: Callable[[Path, Path], None], expect: str, names: str) -> Case:
        def build(root: Path) -> list[str]:
            renders = _render_dir(root)
            mutate(root, renders)
            return ["webarena-render", str(renders), "--run", "hostile"]

        return Case(f"render/{name}", "render", build, expect, names)

    def put(rel: str, data: bytes | str) -> Callable[[Path, Path], None]:
        payload = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
        return lambda root, d: (d / rel).write_bytes(payload)

    r = "results_full/"
    c = [
        case("render-link-outside", lambda root, d: _link(d / r / "render_5.html", _secret(root)), "problem",
             "render_5.html"),
        case("render-fifo", lambda root, d: _fifo(d / r / "render_5.html"), "problem", "render_5.html"),
        case("render-100mb-sparse", lambda root, d: _sparse(d / r / "render_5.html", 100 * MB), "problem",
             "render_5.html"),
        case("render-dir-named-html", lambda root, d: (d / r / "render_5.html").mkdir(), "problem",
             "render_5.html"),
        case("log-fifo", lambda root, d: _fifo(d / "log_files" / "task_5_x.log"), "problem", "task_5_x.log"),
        case("log-link-outside", lambda root, d: _link(d / "log_files" / "task_5_x.log", _secret(root)),
             "problem", "task_5_x.log"),
        case("log-100mb-sparse", lambda root, d: _sparse(d / "log_files" / "task_5_x.log", 100 * MB), "problem",
             "task_5_x.log"),
        case("error-txt-fifo", lambda root, d: _fifo(d / r / "error.txt"), "problem", "error.txt"),
        case("config-json-fifo", lambda root, d: _fifo(d / r / "config.json"), "problem", "config.json"),
        case("config-json-link", lambda root, d: _link(d / r / "config.json", _secret(root)), "problem",
             "config.json"),
        case("render-id-beyond-integer", put(r + "render_99999999999.html", _render("task_id: 1")), "problem",
             "render_99999999999.html"),
        case("log-name-id-beyond-integer", put("log_files/task_99999999999_x.log",
             "2025-01-01 00:00:00,000 [Result] (PASS) /x/1.json\n"), "imported", ""),
        case("log-config-id-beyond-integer", put("merge_log.txt",
             "2025-01-01 00:00:00,000 [Config file]: config_files/99999999999.json\n"
             "2025-01-01 00:00:01,000 [Result] (PASS) config_files/99999999999.json\n"
             "2025-01-01 00:00:01,000 [Result] (FAIL) config_files/" + "9" * 6000 + ".json\n"), "imported", ""),
        case("log-impossible-timestamp", put("log_files/task_166_2.log",
             "2025-13-45 25:61:61,000 [Config file]: config_files/166.json\n"
             "2025-02-30 00:00:00,000 [Result] (PASS) config_files/166.json\n"), "imported", ""),
        case("error-txt-huge-id", put(r + "error.txt", "[Config file]: x/" + "9" * 5000 + ".json\n"
             "[Unhandled Error] boom\n[Config file]: x/99999999999.json\n[Unhandled Error] boom\n"),
             "imported", ""),
        case("header-18mb-continuation", put(r + "render_5.html", _render("task_id: 5\nintent: x\n"
             + "y\n" * 9_000_000)), "imported", ""),
        case("header-deep-literal", put(r + "render_5.html", _render("task_id: 5\nx: " + "[" * 50_000
             + "]" * 50_000)), "imported", ""),
        case("header-huge-int", put(r + "render_5.html", _render("task_id: " + "9" * 5000 + "\nintent: x")),
             "imported", ""),
        case("render-lone-surrogates", put(r + "render_5.html", _render("task_id: 5\nintent: \ud800x\udfff",
             "<div class='state_obv'><pre>\ud800</pre></div>")), "imported", ""),
        case("render-binary-garbage", put(r + "render_5.html", bytes(range(256)) * 1000), "imported", ""),
        case("render-empty", put(r + "render_5.html", b""), "problem", "render_5.html"),
        case("render-deep-html", put(r + "render_5.html", "<div>" * 200_000 + _render("task_id: 5")),
             "imported", ""),
    ]  # fmt: skip

    def logs_fifo(root: Path) -> list[str]:
        renders = _render_dir(root)
        return ["webarena-render", str(renders), "--run", "hostile", "--logs", str(_fifo(root / "logs.log"))]

    def no_renders(root: Path) -> list[str]:
        (root / "renders").mkdir()
        return ["webarena-render", str(root / "renders"), "--run", "hostile"]

    def markup(root: Path) -> list[str]:
        return ["webarena-render", str(_render_dir(root)), "--run", "[/bad][link=file:///etc/passwd]x"]

    c += [
        Case("render/logs-argument-fifo", "render", logs_fifo, "refused", "logs.log"),
        Case("render/no-renders", "render", no_renders, "refused", "renders"),
        Case("render/run-name-markup", "render", markup, "imported", ""),
    ]
    return c


# -- OpAgent ---------------------------------------------------------------------------------------------
def _opagent_dir(root: Path) -> Path:
    dest = root / "op"
    (dest / "final_results").mkdir(parents=True)
    shutil.copy(shipped() / "oagent-run" / "final_results" / "2.json", dest / "final_results" / "2.json")
    return dest


def opagent_cases() -> list[Case]:
    def case(name: str, mutate: Callable[[Path, Path], None], expect: str, names: str) -> Case:
        def build(root: Path) -> list[str]:
            op = _opagent_dir(root)
            mutate(root, op)
            return ["opagent", str(op), "--run", "hostile"]

        return Case(f"opagent/{name}", "opagent", build, expect, names)

    def put(rel: str, data: bytes | str) -> Callable[[Path, Path], None]:
        payload = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
        return lambda root, d: (d / "final_results" / rel).write_bytes(payload)

    obs = [
        {"type": "observation", "image_path": "images/screenshot_0.png"},
        {"type": "action", "action": "x"},
    ]
    c = [
        case("file-link-outside", lambda root, d: _link(d / "final_results" / "5.json", _secret(root)),
             "problem", "5.json"),
        case("file-fifo", lambda root, d: _fifo(d / "final_results" / "5.json"), "problem", "5.json"),
        case("file-100mb-sparse", lambda root, d: _sparse(d / "final_results" / "5.json", 100 * MB), "problem",
             "5.json"),
        case("not-json", put("5.json", b"[{"), "problem", "5.json"),
        case("not-an-array", put("5.json", b'{"a": 1}'), "problem", "5.json"),
        case("deep-nesting", put("5.json", b"[" * 300_000 + b"]" * 300_000), "problem", "5.json"),
        case("lone-surrogates", put("5.json", b'[{"type": "action", "action": "\\ud800", "thought": "\\udfff"},'
             b'{"type": "generated_answer", "content": "\\udc00"}]'), "imported", ""),
        case("huge-numbers", put("5.json", b'[{"type": "evaluation", "score": 1e999, "step": ' + b"9" * 400
             + b'}, {"type": "action", "action": "x"}]'), "imported", ""),
        case("name-beyond-integer", put("99999999999.json", orjson.dumps(obs)), "problem", "99999999999.json"),
        case("screenshot-link-outside", lambda root, d: (
            (d / "final_visual_results" / "val_5" / "images").mkdir(parents=True),
            _link(d / "final_visual_results" / "val_5" / "images" / "screenshot_0.png", _secret(root)),
            (d / "final_results" / "5.json").write_bytes(orjson.dumps(obs))), "imported", ""),
    ]  # fmt: skip

    def empty(root: Path) -> list[str]:
        (root / "op").mkdir()
        return ["opagent", str(root / "op"), "--run", "hostile"]

    c.append(Case("opagent/empty-dir", "opagent", empty, "refused", "op"))
    return c


# -- trajreview JSONL --------------------------------------------------------------------------------------
_HEADER = b'{"agent": "a", "model": "m", "paradigm": "step_by_step"}\n'


def jsonl_cases() -> list[Case]:
    def case(name: str, data: Callable[[Path], bytes | Path], expect: str, names: str = "run.jsonl") -> Case:
        def build(root: Path) -> list[str]:
            path = root / "run.jsonl"
            out = data(root)
            if isinstance(out, bytes):
                path.write_bytes(out)
            return ["jsonl", str(path), "--run", "hostile"]

        return Case(f"jsonl/{name}", "jsonl", build, expect, names)

    task = b'{"task_id": 5, "steps": [{"executed_action": "click [1]"}]}\n'
    c = [
        case("fifo", lambda r: _fifo(r / "run.jsonl"), "refused"),
        case("link-to-fifo", lambda r: _link(r / "run.jsonl", _fifo(r / "pipe")), "refused"),
        case("70mb-line", lambda r: _HEADER + b'{"task_id": 5, "goal": "' + b"g" * (70 * MB) + b'"}', "refused"),
        case("300mb-sparse", lambda r: _sparse(r / "run.jsonl", 300 * MB, _HEADER), "refused"),
        case("lone-surrogate", lambda r: _HEADER + b'{"task_id": 5, "goal": "\\ud800", "steps": []}\n', "refused"),
        case("task-id-beyond-integer", lambda r: _HEADER + b'{"task_id": 99999999999, "steps": []}\n', "refused"),
        case("task-id-huge", lambda r: _HEADER + b'{"task_id": ' + b"9" * 5000 + b', "steps": []}\n', "refused"),
        case("not-utf8", lambda r: _HEADER + b'{"task_id": 5, "goal": "\xff\xfe", "steps": []}\n', "refused"),
        case("deep-nesting", lambda r: _HEADER + b'{"task_id": 5, "plan": ' + b"[" * 100_000 + b"]" * 100_000
             + b', "steps": []}\n', "refused"),
        case("empty", lambda r: b"", "refused"),
        case("header-only", lambda r: _HEADER, "imported", ""),
        case("elapsed-inf", lambda r: _HEADER + b'{"task_id": 5, "steps": [{"elapsed_s": 1e999}]}\n', "refused"),
        case("odd-values", lambda r: _HEADER + task + b'{"task_id": 6, "episode": "\\u0000", "steps": '
             b'[{"executed_action": "type [1] [\\u0000\\u2028] [1]", "observation": {"axtree": "\\u0000"}}]}\n',
             "imported", ""),
    ]  # fmt: skip

    def markup(root: Path) -> list[str]:
        path = root / "run.jsonl"
        path.write_bytes(_HEADER + task)
        return ["jsonl", str(path), "--run", "[/bad]"]

    c.append(Case("jsonl/run-name-markup", "jsonl", markup, "imported", ""))
    return c


# -- gold ---------------------------------------------------------------------------------------------------
def gold_cases() -> list[Case]:
    def csv_case(name: str, body: str, expect: str = "refused", gold: str = "g") -> Case:
        def build(root: Path) -> list[str]:
            path = root / "gold.csv"
            path.write_text("Task No.,Step No.,Text\n" + body, encoding="utf-8", errors="surrogatepass")
            return ["gold", str(path), "--name", gold]

        return Case(f"gold/{name}", "gold", build, expect, "gold.csv")

    c = [
        csv_case("task-inf", "inf,1,click\n"),
        csv_case("task-nan", "nan,1,click\n"),
        csv_case("task-negative", "-1,1,click\n"),
        csv_case("task-1e20", "1e20,1,click\n"),
        csv_case("task-beyond-integer", "99999999999,1,click\n"),
        csv_case("task-5000-digits", "9" * 5000 + ",1,click\n"),
        csv_case("step-inf", "5,inf,click\n5,nan,type\n5,1e400,x\n", "imported"),
        csv_case("name-markup", "5,1,click [1]\n", "imported", gold="[/bad][bold]"),
        csv_case("lone-surrogate-text", "5,1,click \ud800\n", "refused"),
        csv_case("formula-like", '5,1,"=HYPERLINK(""http://x"")"\n', "imported"),
    ]

    def xlsx_case(name: str, sheet: bytes, expect: str = "refused") -> Case:
        def build(root: Path) -> list[str]:
            path = root / "gold.xlsx"
            _xlsx(path, sheet)
            return ["gold", str(path), "--name", "g"]

        return Case(f"gold/{name}", "gold", build, expect, "gold.xlsx")

    lol = (
        b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lololololololololol">'
        + b"".join(
            b'<!ENTITY lol%d "%s">' % (i, (b"&lol%d;" % (i - 1) if i > 1 else b"&lol;") * 10)
            for i in range(1, 10)
        )
        + b']><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>'
        b'<row r="1"><c r="A1" t="inlineStr"><is><t>&lol9;</t></is></c></row></sheetData></worksheet>'
    )
    xxe = (
        b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>'
        b'<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>'
        b'<row r="1"><c r="A1" t="inlineStr"><is><t>&xxe;</t></is></c></row></sheetData></worksheet>'
    )
    c += [_says(xlsx_case("xlsx-billion-laughs", lol), "refused XML"),
          _says(xlsx_case("xlsx-external-entity", xxe), "refused XML"),
          xlsx_case("xlsx-broken-xml", b"<worksheet><sheetData><row><c")]  # fmt: skip

    def raw(name: str, file: str, data: Callable[[Path], bytes | Path], expect: str = "refused") -> Case:
        def build(root: Path) -> list[str]:
            path = root / file
            out = data(root)
            if isinstance(out, bytes):
                path.write_bytes(out)
            return ["gold", str(path), "--name", "g"]

        return Case(f"gold/{name}", "gold", build, expect, file)

    c += [
        raw("xlsx-not-zip", "gold.xlsx", lambda r: b"PK\x03\x04 not really"),
        raw("csv-fifo", "gold.csv", lambda r: _fifo(r / "gold.csv")),
        raw("csv-300mb-sparse", "gold.csv", lambda r: _sparse(r / "gold.csv", 300 * MB, b"Task No.,Step No.,Text\n")),
        raw("jsonl-lone-surrogate", "gold.jsonl",
            lambda r: b'{"Task No.": 5, "Step No.": 1, "Text": "click \\ud800"}\n'),
        raw("jsonl-task-inf", "gold.jsonl", lambda r: b'{"Task No.": 1e999, "Step No.": 1, "Text": "x"}\n'),
        raw("csv-not-utf8", "gold.csv", lambda r: b"Task No.,Step No.,Text\n5,1,\xff\xfe\n"),
        raw("csv-empty", "gold.csv", lambda r: b""),
    ]  # fmt: skip
    return c


def _says(case: Case, reason: str) -> Case:
    return dataclasses.replace(case, says=reason)


def _xlsx(path: Path, sheet: bytes) -> None:
    import openpyxl

    book = openpyxl.Workbook()
    book.active.append(["Task No.", "Step No.", "Text"])
    book.save(path)
    tmp = path.with_suffix(".tmp")
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(tmp, "w") as dst:
        for item in src.infolist():
            data = sheet if item.filename == "xl/worksheets/sheet1.xml" else src.read(item)
            dst.writestr(item, data)
    tmp.replace(path)


def all_cases() -> list[Case]:
    cases = wav_cases() + tar_cases() + agentlab_cases() + render_cases() + opagent_cases()
    cases += jsonl_cases() + gold_cases()
    names = [c.name for c in cases]
    assert len(names) == len(set(names)), "case names must be unique"
    return cases
