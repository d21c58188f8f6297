"""One JSON request per line, read defensively (the bridge and the MCP server).

Limits, each stated in the error that enforces it: a line holds at most
:data:`MAX_LINE_BYTES` bytes; arrays and objects nest at most :data:`MAX_DEPTH` deep,
checked before parsing (the parser recurses); numbers are finite (``NaN``, ``1e999``
refused); strings hold no lone surrogate. Fields are limited in characters after
decoding, by their models. :func:`request_id` reads the ``id`` without parsing the whole
line, so a refused line's reply still carries it when it can be read.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from turngraph.schemas.errors import InvalidPayloadError

__all__ = [
    "ID_WINDOW_CHARS", "MAX_DEPTH", "MAX_LINE_BYTES", "InvalidLineError", "nesting_depth",
    "parse_line", "request_id", "too_long",
]  # fmt: skip

MAX_LINE_BYTES = 4_000_000
"""A longer line is refused (and skipped to its end, so the next line is read intact)."""

MAX_DEPTH = 32
"""How deep arrays and objects may nest (a valid request nests at most 4 levels)."""

ID_WINDOW_CHARS = 65_536
"""How much of a line :func:`request_id` reads to find the ``id``."""

_STRING = r'"[^"\\]*(?:\\.[^"\\]*)*"'
_STRING_OR_REST = r'"[^"\\]*(?:\\.[^"\\]*)*\\?(?:"|\Z)'
"""A string, or an unterminated one running to the end: never a failed match that is
retried from the next quote (that was quadratic on ``"\\"\\"\\"...``)."""
_STRINGS = re.compile(_STRING_OR_REST, re.DOTALL)
_NOT_BRACKETS = re.compile(r"[^\[\]{}]+")
_TOKENS = re.compile(_STRING_OR_REST + r"|[\[\]{}:,]", re.DOTALL)
_ID_VALUE = re.compile(r"\s*(" + _STRING + r"|-?\d{1,18}(?![\d.eE]))", re.DOTALL)
_SURROGATE = re.compile("[\ud800-\udfff]")


class InvalidLineError(InvalidPayloadError):
    """A request line that cannot be read as one JSON request. ``field`` is the dotted
    path of the offending value where there is one; the message never quotes the line."""

    def __init__(self, reason: str, user_message: str, remediation: str, field: str = "") -> None:
        super().__init__(user_message)
        self.reason = reason
        self.user_message = user_message
        self.remediation = remediation
        self.field = field


def nesting_depth(text: str, stop_above: int = MAX_DEPTH) -> int:
    """How deep arrays and objects nest in ``text`` (brackets inside strings ignored), up
    to ``stop_above + 1`` (it stops counting there); linear, no recursion. On broken JSON
    an estimate, which is all a refusal needs."""
    brackets = _NOT_BRACKETS.sub("", _STRINGS.sub("", text))
    depth = deepest = 0
    for char in brackets:
        if char in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > stop_above:
                    break
        else:
            depth -= 1
    return deepest


def request_id(text: str) -> str | int | None:
    """The top-level ``"id"`` of a request line when it is a string or an integer, read
    from its first :data:`ID_WINDOW_CHARS` characters whatever is wrong with the rest."""
    head = text[:ID_WINDOW_CHARS]
    depth = 0
    tokens = _TOKENS.finditer(head)
    for token in tokens:
        value = token.group()
        if value in "[{":
            depth += 1
        elif value in "]}":
            depth -= 1
        elif depth == 1 and value == '"id"':
            colon = next(tokens, None)
            if colon is None or colon.group() != ":":
                return None
            found = _ID_VALUE.match(head, colon.end())
            if found is None:
                return None
            try:
                parsed = json.loads(found.group(1))
            except ValueError:
                return None
            if isinstance(parsed, str) and _SURROGATE.search(parsed):
                return None
            return parsed if isinstance(parsed, str | int) else None
    return None


class _NonFinite(float):
    """What ``NaN`` / ``Infinity`` parse to here: found again by the walk, then refused."""


def _non_finite(literal: str) -> float:
    return _NonFinite(literal.replace("Infinity", "inf"))


def parse_line(text: str) -> Any:
    """The decoded request of one line; raises :class:`InvalidLineError`."""
    if not text.strip():
        raise InvalidLineError(
            "empty",
            "the request line is empty",
            'send one JSON object per line, e.g. {"op": "status"}',
        )
    if len(text.encode("utf-8", "surrogatepass")) > MAX_LINE_BYTES:
        raise too_long()
    if nesting_depth(text) > MAX_DEPTH:
        raise InvalidLineError(
            "too_deep",
            f"the request nests arrays or objects more than {MAX_DEPTH} levels deep",
            f"nest at most {MAX_DEPTH} levels",
        )
    try:
        decoded = json.loads(text, parse_constant=_non_finite)
    except (ValueError, RecursionError):
        raise InvalidLineError(
            "not_json", "the request line is not valid JSON", "send one JSON object per line"
        ) from None
    _check_values(decoded)
    return decoded


def too_long() -> InvalidLineError:
    return InvalidLineError(
        "too_long",
        f"the request line is longer than {MAX_LINE_BYTES} bytes",
        f"send at most {MAX_LINE_BYTES} bytes per line (a turn's content: at most "
        "200000 characters)",
    )


def _check_values(decoded: Any) -> None:
    """Refuse non-finite numbers and lone surrogates, naming the field (iterative walk)."""
    stack: list[tuple[str, Any]] = [("", decoded)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, dict):
            for key, item in value.items():
                name = f"{path}.{key}" if path else str(key)
                if _SURROGATE.search(key):
                    raise _surrogate(path or "(root)", "a key")
                stack.append((name, item))
        elif isinstance(value, list):
            stack.extend((f"{path}.{index}" if path else str(index), item)
                         for index, item in enumerate(value))  # fmt: skip
        elif isinstance(value, float) and not math.isfinite(value):
            raise InvalidLineError(
                "non_finite",
                f"{path or '(root)'}: NaN and Infinity are not JSON numbers",
                f"send a finite number in {path or 'the request'}",
                field=path,
            )
        elif isinstance(value, str) and _SURROGATE.search(value):
            raise _surrogate(path or "(root)", "the text")


def _surrogate(path: str, what: str) -> InvalidLineError:
    return InvalidLineError(
        "lone_surrogate",
        f"{path}: {what} holds a lone surrogate (\\ud800-\\udfff without its pair)",
        f"send valid Unicode text in {path}",
        field=path,
    )
