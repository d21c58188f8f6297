"""Headless Chromium driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``):
open a page, wait in real time (software WebGL draws late; virtual time would not wait for
it), evaluate JavaScript, click, take PNG screenshots. No Python dependency beyond the
standard library; the browser is Debian's ``chromium`` package."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import struct
import subprocess
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any

CHROMIUM = Path("/usr/bin/chromium")
INSTALL_HINT = "apt-get install chromium (make install does it when run as root)"


class Browser:
    """One headless Chromium with one page; use as a context manager."""

    def __init__(self, width: int = 1280, height: int = 800) -> None:
        self._profile = tempfile.TemporaryDirectory(prefix="tg-chromium-")
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()

        def child_fds() -> None:
            os.dup2(to_chrome_r, 3)
            os.dup2(from_chrome_w, 4)

        self.process = subprocess.Popen(
            [
                str(CHROMIUM),
                "--headless=new",
                "--no-sandbox",
                "--remote-debugging-pipe",
                "--use-angle=swiftshader",
                "--enable-unsafe-swiftshader",
                "--hide-scrollbars",
                "--allow-file-access-from-files",
                f"--window-size={width},{height}",
                f"--user-data-dir={self._profile.name}",
                "about:blank",
            ],
            preexec_fn=child_fds,
            pass_fds=(3, 4),  # kept open after preexec_fn put the pipes there
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buffer = b""
        self._next_id = 0
        self.session: str | None = None

    def __enter__(self) -> Browser:
        targets = self.call("Target.getTargets", session=False)["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        attached = self.call(
            "Target.attachToTarget", {"targetId": page["targetId"], "flatten": True}, session=False
        )
        self.session = attached["sessionId"]
        self.call("Page.enable")
        self.call("Runtime.enable")
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(OSError, RuntimeError):
            self.call("Browser.close", session=False)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._to_chrome)
        os.close(self._from_chrome)
        self._profile.cleanup()

    def call(
        self, method: str, params: dict[str, Any] | None = None, *, session: bool = True
    ) -> dict[str, Any]:
        """Send one command and return its result (events meanwhile are skipped)."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session and self.session:
            message["sessionId"] = self.session
        os.write(self._to_chrome, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._read()
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return dict(reply.get("result", {}))

    def _read(self) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            chunk = os.read(self._from_chrome, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed the protocol pipe")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return dict(json.loads(raw))

    def open(self, url: str) -> None:
        self.call("Page.navigate", {"url": url})

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        return result.get("result", {}).get("value")

    def wait_for(self, expression: str, timeout_s: float = 60.0) -> Any:
        """Poll ``expression`` in real time until it is truthy."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(0.25)
        raise TimeoutError(f"page never satisfied: {expression}")

    def click(self, x: float, y: float) -> None:
        """Move there (the graph view hit-tests on hover), press and release."""
        self.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})
        for kind in ("mousePressed", "mouseReleased"):
            self.call(
                "Input.dispatchMouseEvent",
                {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1},
            )

    def screenshot(self) -> bytes:
        return base64.b64decode(self.call("Page.captureScreenshot", {"format": "png"})["data"])


def decode_png(data: bytes) -> tuple[int, int, list[bytes]]:
    """Width, height and RGB rows of an 8-bit, non-interlaced RGB/RGBA PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", 0
    height = channels = 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        chunk, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        if chunk == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and color in (2, 6)
            channels = 3 if color == 2 else 4
        elif chunk == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels
    rows: list[bytes] = []
    previous = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind = raw[start]
        line = bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            corner = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                pred = left if pa <= pb and pa <= pc else up if pb <= pc else corner
                line[i] = (line[i] + pred) & 0xFF
        previous = line
        rows.append(
            bytes(line) if channels == 3 else bytes(line[j] for j in range(stride) if j % 4 != 3)
        )
    return width, height, rows
