"""A loopback fake OpenAI-compatible server (127.0.0.1 only) for the LLM client's tests.

It decides its behaviour from a token in the prompt: OK_EQ / OK_DIFF answer, R429 and R500 fail once
then answer, B400 always fails with 400, SLOW answers after 1.5 s, GARBAGE replies with non-JSON, EMPTY
replies with no choices at all, LENGTH replies with JSON cut off by the output cap. A prompt without a
token (the client's capability probe, WebArena's fuzzy questions) is answered `{"ok": true,
"equivalent": true, ...}`.

Options: `delay_s` before every answer; `one_slot` answers one request at a time (the others wait, as on a
single-slot llama.cpp server, which drops those whose client gave up: `client_timeout_s`);
`reject_json_schema=400|500` refuses `response_format` json_schema as OpenAI-style servers (400)
or llama-cpp-python (500, with its validation message) do; `openapi` is served at /openapi.json
(404 otherwise).
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOKEN = re.compile(r"\b(OK_EQ|OK_DIFF|R429|R500|B400|SLOW|GARBAGE|EMPTY|LENGTH)\b")
PROBE_TEXT = "Is 3 greater than 2?"
# What llama-cpp-python 0.3.36 answers to a json_schema response format (HTTP 500, measured).
LLAMA_CPP_VALIDATION = (
    "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
    "'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema'}"
)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, *_):
        pass  # a client that gave up (a timeout under test) closed its socket: nothing to report


class FakeOpenAI:
    def __init__(
        self, *, delay_s: float = 0.0, reject_json_schema: int | None = None, openapi: dict | None = None,
        one_slot: bool = False, client_timeout_s: float | None = None,
    ):  # fmt: skip
        self.delay_s = delay_s
        self.slot = threading.Lock() if one_slot else None  # one request at a time, the others queue
        self.client_timeout_s = client_timeout_s
        self.reject_json_schema = reject_json_schema
        self.openapi = openapi
        self.hits: Counter[str | None] = Counter()
        self.requests: list[dict] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.lock = threading.Lock()
        self.files: dict[str, bytes] = {}
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def _send(self, status: int, payload: dict | str, headers: dict | None = None):
                body = payload if isinstance(payload, str) else json.dumps(payload)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body.encode())))
                self.end_headers()
                self.wfile.write(body.encode())

            def do_GET(self):
                if self.path == "/openapi.json" or self.path.endswith("/openapi.json"):
                    if fake.openapi is None:
                        self._send(404, {"detail": "Not Found"})
                    else:
                        self._send(200, fake.openapi)
                    return
                if self.path.endswith("/content"):
                    file_id = self.path.split("/")[-2]
                    body = fake.files[file_id].decode()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/octet-stream")
                    self.send_header("Content-Length", str(len(body.encode())))
                    self.end_headers()
                    self.wfile.write(body.encode())
                    return
                self._send(200, fake.batch_object())

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.path.endswith("/files"):
                    fake.files["file-in"] = raw
                    self._send(200, {"id": "file-in", "object": "file", "bytes": len(raw), "created_at": 0,
                                     "filename": "in.jsonl", "purpose": "batch", "status": "processed"})  # fmt: skip
                    return
                if self.path.endswith("/batches"):
                    fake.files["file-out"] = fake.batch_output(fake.files["file-in"])
                    self._send(200, fake.batch_object())
                    return
                fake.handle_chat(self, json.loads(raw))

        self.server = _Server(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

    @property
    def probes(self) -> list[dict]:
        """The client's capability probes among the requests received."""
        return [r for r in self.requests if PROBE_TEXT in r["messages"][-1]["content"]]

    @property
    def questions(self) -> list[dict]:
        return [r for r in self.requests if PROBE_TEXT not in r["messages"][-1]["content"]]

    @staticmethod
    def completion(content: str, finish_reason: str = "stop") -> dict:
        return {
            "id": "c1", "object": "chat.completion", "created": 0, "model": "fake",
            "choices": [{"index": 0, "finish_reason": finish_reason,
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }  # fmt: skip

    def answer_for(self, token: str | None) -> str:
        if token == "GARBAGE":
            return "I think they are the same {not json"
        if token is None:
            return json.dumps({"ok": True, "equivalent": True, "rationale": "fake"})
        return json.dumps({"equivalent": token != "OK_DIFF", "rationale": "fake"})

    def handle_chat(self, handler, body: dict):
        text = body["messages"][-1]["content"]
        found = TOKEN.search(text)
        token = found.group(1) if found else None
        with self.lock:
            self.hits[token] += 1
            self.requests.append(body)
            nth = self.hits[token]
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.slot is not None:
                queued = time.monotonic()
                with self.slot:
                    # llama-cpp-python drops a queued request whose client has gone; here: whose client's
                    # timeout has passed.
                    if self.client_timeout_s and time.monotonic() - queued > self.client_timeout_s:
                        return handler._send(400, {"error": {"message": "Client closed request"}})
                    time.sleep(self.delay_s)
            elif self.delay_s:
                time.sleep(self.delay_s)
            schema = (body.get("response_format") or {}).get("type") == "json_schema"
            if self.reject_json_schema == 500 and schema:
                error = {"message": LLAMA_CPP_VALIDATION, "type": "internal_server_error"}
                handler._send(500, {"error": error})
            elif self.reject_json_schema and schema:
                handler._send(400, {"error": {"message": "response_format json_schema is not supported"}})
            elif token == "R429" and nth == 1:
                handler._send(429, {"error": {"message": "slow down"}}, {"retry-after-ms": "1"})
            elif token == "R500" and nth == 1:
                handler._send(500, {"error": {"message": "boom"}}, {"retry-after-ms": "1"})
            elif token == "B400":
                handler._send(400, {"error": {"message": "bad request"}})
            elif token == "EMPTY":
                handler._send(200, {**self.completion(""), "choices": []})
            elif token == "LENGTH":
                handler._send(
                    200, self.completion('{"equivalent": true, "rationale": "it goes on and', "length")
                )
            elif token == "SLOW":
                time.sleep(1.5)
                handler._send(200, self.completion(self.answer_for("OK_EQ")))
            else:
                handler._send(200, self.completion(self.answer_for(token)))
        finally:
            with self.lock:
                self.in_flight -= 1

    # -- Batch API ---------------------------------------------------------------------------------
    def batch_object(self) -> dict:
        return {"id": "batch-1", "object": "batch", "endpoint": "/v1/chat/completions", "input_file_id": "file-in",
                "completion_window": "24h", "status": "completed", "created_at": 0, "output_file_id": "file-out"}  # fmt: skip

    def batch_output(self, upload: bytes) -> bytes:
        lines = []
        for line in upload.decode(errors="replace").splitlines():
            if '"custom_id"' not in line:
                continue
            request = json.loads(line)
            token = TOKEN.search(request["body"]["messages"][-1]["content"]).group(1)
            self.hits["batch:" + token] += 1
            response = {"status_code": 200, "body": self.completion(self.answer_for(token))}
            lines.append(json.dumps({"custom_id": request["custom_id"], "response": response}))
        return ("\n".join(lines) + "\n").encode()
