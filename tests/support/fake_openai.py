"""A local OpenAI-compatible HTTP server with scripted answers, for tests.

``POST /v1/chat/completions`` pops the next scripted :class:`Reply`: a structured answer,
a malformed one, one in a code fence or with prose around it (a server that ignores
``response_format``), an HTTP error with headers (a 429 with ``Retry-After``), a slow
answer, or a hang that outlasts the client's timeout (released when the server stops).
Like older vLLM or llama.cpp builds, the server can refuse ``response_format``
``json_schema`` (or ``json_object``) with a 400 without using up a scripted reply, or,
like llama-cpp-python, with a 500 whose body names ``response_format``
(``refuse_status``). Like gemma's chat template, it can drop system messages
(``drop_system``): the prompt tokens it reports are then those of the other messages
only (a reply without scripted ``prompt_tokens`` reports what was read, 4 characters a
token). Every request is recorded (body, headers, arrival time) for assertions.

``POST /v1/embeddings`` pops its own script (:meth:`FakeOpenAI.add_embeddings`: errors,
hangs and :func:`slow_vectors`); with nothing scripted it answers real vectors: each
text's words hashed into :data:`EMBEDDING_DIM` buckets, so texts sharing words are similar.
"""

from __future__ import annotations

import json
import re
import threading
import time
import zlib
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    status: int = 200
    content: str | None = None
    """The assistant message's content (for a 200)."""
    body: dict[str, Any] | None = None
    """A whole JSON body, instead of a completion built from ``content``."""
    headers: dict[str, str] = field(default_factory=dict)
    prompt_tokens: int | None = None
    """None: what the server read of the messages, 4 characters a token."""
    completion_tokens: int = 0
    finish_reason: str = "stop"
    hang: bool = False
    delay_s: float = 0.0
    """Answer this late (a slow model); cut short when the server stops."""
    echo: bool = False
    """An extraction answer with an empty result for each of the batch's event ids (read
    from the ``enum`` of the request's schema)."""


def answer(obj: Any, prompt_tokens: int | None = None, completion_tokens: int = 20) -> Reply:
    """A 200 whose message content is ``obj`` as JSON (a structured answer)."""
    return Reply(
        content=json.dumps(obj), prompt_tokens=prompt_tokens, completion_tokens=completion_tokens
    )


def fenced(obj: Any, prose: bool = False) -> Reply:
    """A 200 whose content is ``obj`` in a ```json fence (with a sentence around it)."""
    text = "```json\n" + json.dumps(obj, indent=1) + "\n```"
    if prose:
        text = "Here is the extraction you asked for:\n\n" + text + "\n\nHope this helps!"
    return Reply(content=text, completion_tokens=30)


def slow(obj: Any, delay_s: float) -> Reply:
    """A structured answer after ``delay_s`` seconds."""
    return Reply(content=json.dumps(obj), completion_tokens=20, delay_s=delay_s)


def error_text(status: int, message: str) -> Reply:
    """An HTTP error carrying the server's own message, as vLLM or Ollama word it."""
    return Reply(
        status=status,
        body={"error": {"message": message, "type": "BadRequestError", "code": status}},
    )


def malformed(text: str = '{"turns": [', prompt_tokens: int | None = None) -> Reply:
    """A 200 whose content is not valid JSON."""
    return Reply(content=text, prompt_tokens=prompt_tokens, completion_tokens=5)


def error(status: int, headers: dict[str, str] | None = None) -> Reply:
    return Reply(
        status=status,
        headers=headers or {},
        body={"error": {"message": f"scripted {status}", "type": "scripted", "code": None}},
    )


def slow_vectors(delay_s: float) -> Reply:
    """For ``add_embeddings``: the real vectors after ``delay_s`` seconds (a slow endpoint)."""
    return Reply(delay_s=delay_s)


def hang() -> Reply:
    """No answer until the server stops: the client's timeout fires first."""
    return Reply(hang=True)


LLAMA_CPP_REFUSAL: dict[str, Any] = {
    "error": {
        "message": "[{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
        "'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema'}]",
        "type": "internal_server_error",
    }
}
"""llama-cpp-python 0.3's answer to a ``json_schema`` ``response_format`` (HTTP 500)."""


EMBEDDING_DIM = 16
"""Dimension of the vectors the fake embeddings endpoint answers."""


def text_vector(text: str) -> list[float]:
    """A bag of hashed words: a deterministic embedding that shares words, not meaning."""
    vector = [0.0] * EMBEDDING_DIM
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        vector[zlib.crc32(word.encode()) % EMBEDDING_DIM] += 1.0
    return vector


@dataclass
class Request:
    body: dict[str, Any]
    headers: dict[str, str]
    at: float

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", []))


class FakeOpenAI:
    """Start with ``with FakeOpenAI() as server:``; point the client at ``server.base_url``."""

    def __init__(
        self,
        *,
        refuse_formats: tuple[str, ...] = (),
        refuse_status: int = 400,
        drop_system: bool = False,
        read_s: float = 0.0,
        echo: bool = False,
        n_ctx: int | None = None,
    ) -> None:
        self.refuse_formats = refuse_formats
        """``response_format`` types refused (``"json_schema"``, ``"json_object"``)."""
        self.refuse_status = refuse_status
        """400 (vLLM's wording) or 500 (llama-cpp-python's pydantic ``literal_error``)."""
        self.drop_system = drop_system
        """Read no system message (a chat template without a system role)."""
        self.n_ctx = n_ctx
        """Served as llama.cpp's ``GET /props`` (``default_generation_settings.n_ctx``)."""
        self.echo = echo
        """With nothing scripted, answer :attr:`Reply.echo` replies instead of a 500."""
        self.read_s = read_s
        """Seconds every chat request takes before any answer (a CPU reading a long
        prompt: 57-67 s for 3.2k tokens in issue 25); cut short when the server stops.
        A refused ``json_schema`` (llama-cpp-python's 500) is answered at once."""
        self.script: deque[Reply] = deque()
        self.requests: list[Request] = []
        self.embedding_script: deque[Reply] = deque()
        self.embedding_requests: list[Request] = []
        self._lock = threading.Lock()
        self._release = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def add(self, *replies: Reply) -> None:
        with self._lock:
            self.script.extend(replies)

    def add_embeddings(self, *replies: Reply) -> None:
        """Script the next ``/v1/embeddings`` answers (then real vectors again)."""
        with self._lock:
            self.embedding_script.extend(replies)

    def stop_hangs(self) -> None:
        """Release every hung request now (they answer nothing)."""
        self._release.set()

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._release.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def _next_embedding(self, request: Request) -> Reply | None:
        with self._lock:
            self.embedding_requests.append(request)
            return self.embedding_script.popleft() if self.embedding_script else None

    def _next(self, request: Request) -> Reply:
        with self._lock:
            self.requests.append(request)
            kind = (request.body.get("response_format") or {}).get("type")
            if kind in self.refuse_formats:
                if self.refuse_status == 500:
                    return Reply(status=500, body=LLAMA_CPP_REFUSAL)
                return error_text(400, f"response_format type {kind} is not supported")
            if not self.script:
                return Reply(echo=True) if self.echo else error(500)
            return self.script.popleft()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def do_GET(self) -> None:
                if self.path.rstrip("/") == "/props" and server.n_ctx is not None:
                    props = {"default_generation_settings": {"n_ctx": server.n_ctx}}
                    self._send(200, props, {})
                else:
                    self._send(404, {"error": {"message": "no such route"}}, {})

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                if self.path.rstrip("/") == "/v1/embeddings":
                    self._embeddings(json.loads(raw or b"{}"))
                    return
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(404, {"error": {"message": "no such route"}}, {})
                    return
                body = json.loads(raw or b"{}")
                reply = server._next(Request(body, dict(self.headers), time.monotonic()))
                refused = reply.body is LLAMA_CPP_REFUSAL  # refused before reading
                if server.read_s and not refused and server._release.wait(server.read_s):
                    return  # stopping
                if reply.hang:
                    server._release.wait()
                    return
                if reply.delay_s and server._release.wait(reply.delay_s):
                    return  # stopping
                if reply.echo:
                    reply = _echo(body)
                payload = (
                    reply.body
                    if reply.body is not None
                    else _completion(body, reply, server.drop_system)
                )
                self._send(reply.status, payload, reply.headers)

            def _embeddings(self, body: dict[str, Any]) -> None:
                scripted = server._next_embedding(
                    Request(body, dict(self.headers), time.monotonic())
                )
                if scripted is not None and scripted.hang:
                    server._release.wait()
                    return
                if scripted is not None and scripted.delay_s:
                    if server._release.wait(scripted.delay_s):
                        return  # stopping
                    scripted = None if scripted.body is None else scripted
                if scripted is not None:
                    self._send(scripted.status, scripted.body or {}, scripted.headers)
                    return
                texts = body.get("input", [])
                texts = [texts] if isinstance(texts, str) else texts
                data = [
                    {"object": "embedding", "index": i, "embedding": text_vector(str(text))}
                    for i, text in enumerate(texts)
                ]
                usage = {"prompt_tokens": len(texts), "total_tokens": len(texts)}
                payload = {"object": "list", "data": data, "model": body.get("model", "fake"),
                           "usage": usage}  # fmt: skip
                self._send(200, payload, {})

            def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str]) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout) before we answered

        return Handler


def _echo(request: dict[str, Any]) -> Reply:
    fmt = request.get("response_format") or {}
    schema = fmt.get("schema") or (fmt.get("json_schema") or {}).get("schema") or {}
    ids = schema.get("$defs", {}).get("turn", {}).get("properties", {}).get("event_id", {})
    turns = [{"event_id": i, "entities": [], "facts": []} for i in ids.get("enum", [])]
    return Reply(content=json.dumps({"turns": turns}), completion_tokens=10 * len(turns) + 5)


def read_tokens(request: dict[str, Any], drop_system: bool) -> int:
    """The prompt tokens of the messages a server reads (4 characters a token)."""
    read = [
        m for m in request.get("messages", []) if not (drop_system and m.get("role") == "system")
    ]
    return sum(len(str(m.get("content") or "")) for m in read) // 4


def _completion(request: dict[str, Any], reply: Reply, drop_system: bool) -> dict[str, Any]:
    prompt_tokens = reply.prompt_tokens
    if prompt_tokens is None:
        prompt_tokens = read_tokens(request, drop_system)
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": request.get("model", "fake"),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": reply.content, "refusal": None},
                "finish_reason": reply.finish_reason,
                "logprobs": None,
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": reply.completion_tokens,
            "total_tokens": prompt_tokens + reply.completion_tokens,
        },
    }
