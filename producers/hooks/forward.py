"""The hook forwarder: an editor's hook payload, handed to turngraph's always-warm endpoint.

``python -I -S turngraph-forward.py hook EVENT --editor EDITOR`` POSTs the payload on
stdin to ``<url>/v1/hooks/EDITOR/EVENT`` and prints the reply's body; when anything is
missing or fails it prints nothing and exits 0 at once. Built-in C modules of the
standard library only (``_socket``, ``posix``): anything more costs more than the
isolated start-up. How it is installed and run: docs/hooks.md ("--via").
``turngraph.endpoint.client`` (the CLI's fast path) sends through :func:`post`.
"""

import _socket
import sys

if sys.platform == "win32":
    import nt as _system
else:
    import posix as _system

__all__ = ["forward", "main", "post"]

CONNECT_TIMEOUT_S = 0.25
"""Loopback answers a connect at once; a refused port fails at once."""
REPLY_TIMEOUT_S = {"prompt": 3.0, "session-start": 9.0, "capture": 2.0}
"""Per event; the endpoint keeps its own deadlines (750 ms for recall), these bound a hang."""
OTHER_TIMEOUT_S = 55.0
"""Summarize and session end: the editor allows them 60 s."""
MAX_REPLY = 4 << 20


def _parent(path: str) -> str:
    cut = max(path.rfind("/"), path.rfind("\\"))
    return path[:cut] if cut > 0 else "."


PROJECT_DIR_VARIABLES = ("CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR", "CURSOR_PROJECT_DIR")
"""Sent as ``X-Turngraph-Project-Dir`` (what they tell ``turngraph hook``): editors.py's."""


def _environ() -> dict[str, str]:
    environ: dict[bytes, bytes] | dict[str, str] = _system.environ
    return {_text(k): _text(v) for k, v in environ.items()}


def _data_dir(environ: dict[str, str]) -> str:
    return environ.get("TURNGRAPH_DATA_DIR") or _parent(_parent(__file__))


def _project_header(environ: dict[str, str]) -> str:
    """The editor's project folder as a header line (none when unset or not plain ASCII)."""
    folder = next((environ[k] for k in PROJECT_DIR_VARIABLES if environ.get(k)), "")
    if not folder or not folder.isascii() or not folder.isprintable():
        return ""
    return f"X-Turngraph-Project-Dir: {folder}\r\n"


def _text(value: bytes | str) -> str:
    return value.decode(errors="surrogateescape") if isinstance(value, bytes) else value


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as handle:
        return handle.read(65536)


def _url(endpoint_json: str) -> tuple[str, int]:
    """``host, port`` of the ``"url"`` in ``endpoint.json`` (plain ``http://host:port``)."""
    key = endpoint_json.index('"url"')
    start = endpoint_json.index('"', endpoint_json.index(":", key + 5)) + 1
    url = endpoint_json[start : endpoint_json.index('"', start)]
    if not url.startswith("http://"):
        raise ValueError("not http")
    host, _, port = url[7:].rstrip("/").rpartition(":")
    return host.strip("[]"), int(port)


def _arguments(argv: list[str]) -> tuple[str, str]:
    """``EVENT, EDITOR`` from ``hook EVENT --editor EDITOR``."""
    event = argv[argv.index("hook") + 1]
    editor = argv[argv.index("--editor") + 1]
    for name in (event, editor):
        if not name or not all(c.isalnum() or c == "-" for c in name):
            raise ValueError("bad name")
    return event, editor


def _dechunk(body: bytes) -> bytes:
    out, rest = b"", body
    while rest:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        out, rest = out + rest[:size], rest[size + 2 :]
    return out


def post(
    address: tuple[str, int],
    path: str,
    token: str,
    payload: bytes,
    reply_timeout_s: float,
    headers: str = "",
) -> bytes:
    """The body of the endpoint's 200 reply to ``POST path`` with ``payload`` (JSON) and
    the bearer ``token``; ``headers``: more header lines, each ending in CRLF. Raises
    ``OSError`` when it cannot be reached, ``ValueError`` on any reply but a 200. One new
    connection per request (``Connection: close``). The CLI's fast path sends through this
    too (``turngraph.endpoint.client``)."""
    host, port = address
    if not token or "\r" in token or "\n" in token:
        raise ValueError("no token")
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\n"
        f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
        f"{headers}Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n"
    )
    family = _socket.AF_INET6 if ":" in host else _socket.AF_INET
    sock = _socket.socket(family, _socket.SOCK_STREAM)
    try:
        sock.settimeout(CONNECT_TIMEOUT_S)
        sock.connect((host, port))
        sock.settimeout(reply_timeout_s)
        sock.sendall(head.encode("latin-1") + payload)
        chunks, size = [], 0
        while size <= MAX_REPLY:
            chunk = sock.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        sock.close()
    reply = b"".join(chunks)
    header, _, body = reply.partition(b"\r\n\r\n")
    status = header.split(b"\r\n", 1)[0].split()
    if len(status) < 2 or status[1] != b"200" or size > MAX_REPLY:
        raise ValueError("not 200")
    if b"\r\ntransfer-encoding: chunked" in header.lower():
        body = _dechunk(body)
    return body


def forward(argv: list[str], payload: bytes) -> bytes:
    """The endpoint's reply body for ``payload`` (raises on anything but a 200)."""
    event, editor = _arguments(argv)
    environ = _environ()
    data = _data_dir(environ)
    address = _url(_read(data + "/endpoint.json"))
    token = _read(data + "/endpoint.token").strip()
    timeout_s = REPLY_TIMEOUT_S.get(event, OTHER_TIMEOUT_S)
    return post(address, f"/v1/hooks/{editor}/{event}", token, payload, timeout_s,
                _project_header(environ))  # fmt: skip


def main() -> int:
    """Forward, print the reply; on any failure print nothing. Always exit 0."""
    try:
        payload = sys.stdin.buffer.read()
        body = forward(sys.argv[1:], payload).strip()
        if body and body != b"{}":
            sys.stdout.buffer.write(body + b"\n")
            sys.stdout.buffer.flush()
    except BaseException:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
