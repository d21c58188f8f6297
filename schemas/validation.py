"""Naming what failed validation without quoting it (pydantic's messages may echo input)."""

from __future__ import annotations

from pydantic import ValidationError


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
        "datetime_from_date_parsing",
    }
)  # fmt: skip
"""pydantic error types whose message is built from the schema alone (a limit, the allowed
values, the expected type), never from the input: safe to show, and they say what to
change."""


def described_fields(exc: ValidationError, root: str) -> list[str]:
    """Like :func:`invalid_fields`, each path followed by what the schema expects there
    (``event.content: String should have at most 200000 characters``) when pydantic's
    message for it cannot quote the input."""
    described: dict[str, set[str]] = {}
    for error in exc.errors(include_url=False, include_input=False):
        where = ".".join(str(p) for p in error["loc"]) or root
        messages = described.setdefault(where, set())
        if error["type"] in SCHEMA_ONLY_MESSAGES:
            messages.add(error["msg"])
    return [
        f"{where}: {'; '.join(sorted(messages))}" if messages else where
        for where, messages in sorted(described.items())
    ]
