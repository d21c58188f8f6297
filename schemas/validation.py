"""Naming what failed validation without quoting it (pydantic's messages may echo input)."""

from __future__ import annotations

from pydantic import ValidationError
from pydantic_core import PydanticCustomError

__all__ = ["RULE_ERROR", "SCHEMA_ONLY_MESSAGES", "described_fields", "invalid_fields", "rule_error"]


def invalid_fields(exc: ValidationError, root: str) -> list[str]:
    """Sorted dotted paths of the invalid fields; ``root`` names an error on the whole."""
    return sorted({".".join(str(p) for p in e["loc"]) or root for e in exc.errors()})


SCHEMA_ONLY_MESSAGES = frozenset(
    {
        "missing", "extra_forbidden", "string_too_long", "string_too_short", "too_long",
        "too_short", "less_than", "less_than_equal", "greater_than", "greater_than_equal",
        "literal_error", "enum", "string_type", "int_type", "int_parsing", "float_type",
        "float_parsing", "bool_type", "bool_parsing", "dict_type", "list_type", "model_type",
        "string_pattern_mismatch", "datetime_type", "datetime_parsing",
        "datetime_from_date_parsing", "timezone_aware", "timezone_naive",
    }
)  # fmt: skip
"""pydantic error types whose message is built from the schema alone (a limit, the allowed
values, the expected type), never from the input: safe to show, and they say what to
change."""

RULE_ERROR = "turngraph_rule"
"""The error type of our own validators' rules (``content is blank``, a date range): their
messages are fixed texts, never the input, so they are shown like the schema's."""


def rule_error(message: str) -> PydanticCustomError:
    """What a validator raises for a broken rule: ``message`` reaches the user as it is,
    so it must say what to change and never quote the value."""
    return PydanticCustomError(RULE_ERROR, message)


def described_fields(exc: ValidationError, root: str, prefix: str = "") -> list[str]:
    """Like :func:`invalid_fields`, each path followed by what the schema expects there
    (``event.content: String should have at most 200000 characters``) when pydantic's
    message for it cannot quote the input; ``prefix`` goes before each path (where the
    model validated is a field of the request)."""
    described: dict[str, set[str]] = {}
    for error in exc.errors(include_url=False, include_input=False):
        where = prefix + (".".join(str(p) for p in error["loc"]) or root)
        messages = described.setdefault(where, set())
        if error["type"] in SCHEMA_ONLY_MESSAGES or error["type"] == RULE_ERROR:
            messages.add(error["msg"])
    return [
        f"{where}: {'; '.join(sorted(messages))}" if messages else where
        for where, messages in sorted(described.items())
    ]
