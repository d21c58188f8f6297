"""A scripted model server on loopback for the editors' own CLIs (Claude Code, Codex, Gemini
CLI): it answers Anthropic's Messages API (``/v1/messages``, SSE when asked), OpenAI's
Responses API (``/v1/responses``, SSE) and Gemini's ``generateContent`` /
``streamGenerateContent``, each with the next scripted answer, and records every request it
receives (path and JSON body) for the test to read."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["ModelServer", "Recorded", "model_server"]


@dataclass
class Recorded:
    path: str
    body: dict[str, Any]

    def text(self) -> str:
        """The whole request body as text (what the model would read, and more)."""
        return json.dumps(self.body, ensure_ascii=False)


@dataclass
class ModelServer:
    url: str
    answer: str = "Understood."
    requests: list[Recorded] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def conversation_requests(self, marker: str) -> list[Recorded]:
        """The recorded requests whose body holds ``marker`` (the user's prompt)."""
        with self.lock:
            return [r for r in self.requests if marker in r.text()]


def _sse(events: list[tuple[str | None, dict[str, Any]]]) -> bytes:
    out = []
    for name, data in events:
        head = f"event: {name}\n" if name else ""
        out.append(f"{head}data: {json.dumps(data)}\n\n")
    return "".join(out).encode()


def _anthropic(answer: str, model: str, stream: bool) -> tuple[str, bytes]:
    usage = {"input_tokens": 12, "output_tokens": 6}
    message = {
        "id": "msg_scripted", "type": "message", "role": "assistant", "model": model,
        "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage,
    }  # fmt: skip
    if not stream:
        whole = {**message, "content": [{"type": "text", "text": answer}],
                 "stop_reason": "end_turn"}  # fmt: skip
        return "application/json", json.dumps(whole).encode()
    return "text/event-stream", _sse([
        ("message_start", {"type": "message_start", "message": message}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "text_delta", "text": answer}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "usage": {"output_tokens": 6},
                           "delta": {"stop_reason": "end_turn", "stop_sequence": None}}),
        ("message_stop", {"type": "message_stop"}),
    ])  # fmt: skip


def _openai_responses(answer: str, model: str) -> tuple[str, bytes]:
    item = {"type": "message", "id": "msg_scripted", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": answer, "annotations": []}]}  # fmt: skip
    response = {"id": "resp_scripted", "object": "response", "model": model, "status": "completed",
                "output": [item], "usage": {"input_tokens": 12, "output_tokens": 6,
                                            "total_tokens": 18}}  # fmt: skip
    return "text/event-stream", _sse([
        ("response.created", {"type": "response.created",
                              "response": {**response, "status": "in_progress", "output": []}}),
        ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0,
                                        "item": {**item, "content": [], "status": "in_progress"}}),
        ("response.output_text.delta", {"type": "response.output_text.delta", "output_index": 0,
                                        "content_index": 0, "item_id": "msg_scripted",
                                        "delta": answer}),
        ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0,
                                       "item": item}),
        ("response.completed", {"type": "response.completed", "response": response}),
    ])  # fmt: skip


def _from_schema(schema: dict[str, Any]) -> Any:
    """A value that satisfies a JSON schema (Gemini CLI's routing classifier asks for one)."""
    if "enum" in schema:
        return schema["enum"][0]
    kind = str(schema.get("type", "string")).lower()
    if kind == "object":
        props = schema.get("properties") or {}
        return {name: _from_schema(sub) for name, sub in props.items()}
    if kind == "array":
        return []
    return {"number": 10, "integer": 10, "boolean": False}.get(kind, "scripted")


def _gemini(answer: str, stream: bool, body: dict[str, Any]) -> tuple[str, bytes]:
    config = body.get("generationConfig") or {}
    schema = config.get("responseJsonSchema") or config.get("responseSchema")
    if isinstance(schema, dict):
        answer = json.dumps(_from_schema(schema))
    chunk = {"candidates": [{"content": {"role": "model", "parts": [{"text": answer}]},
                             "finishReason": "STOP", "index": 0}],
             "usageMetadata": {"promptTokenCount": 12, "candidatesTokenCount": 6,
                               "totalTokenCount": 18}}  # fmt: skip
    if stream:
        return "text/event-stream", _sse([(None, chunk)])
    return "application/json", json.dumps(chunk).encode()


class _Handler(BaseHTTPRequestHandler):
    server_version = "scripted-model/1"
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _reply(self, status: int, content_type: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self._reply(200, "application/json", b'{"data": [], "models": []}')

    def do_HEAD(self) -> None:
        self._reply(200, "application/json", b"")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = {"raw": raw.decode("utf-8", "replace")}
        state: ModelServer = self.server.state  # type: ignore[attr-defined]
        path = self.path.split("?", 1)[0]
        with state.lock:
            state.requests.append(Recorded(path, body if isinstance(body, dict) else {}))
        answer = state.answer
        if path.endswith("/messages/count_tokens"):
            self._reply(200, "application/json", b'{"input_tokens": 12}')
        elif path.endswith("/messages"):
            model = str(body.get("model", "claude-scripted"))
            self._reply(200, *_anthropic(answer, model, bool(body.get("stream"))))
        elif path.endswith("/responses"):
            self._reply(200, *_openai_responses(answer, str(body.get("model", "gpt-scripted"))))
        elif ":streamGenerateContent" in path or ":generateContent" in path:
            self._reply(200, *_gemini(answer, ":stream" in path, body))
        elif ":countTokens" in path:
            self._reply(200, "application/json", b'{"totalTokens": 12}')
        else:
            self._reply(404, "application/json", b'{"error": "not scripted"}')


@contextmanager
def model_server(answer: str = "Understood.") -> Iterator[ModelServer]:
    """A scripted model server on 127.0.0.1 for as long as the block runs."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.daemon_threads = True
    state = ModelServer(f"http://127.0.0.1:{httpd.server_address[1]}", answer)
    httpd.state = state  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)
