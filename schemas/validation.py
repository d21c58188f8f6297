"""Naming what failed validation without quoting it (pydantic's messages may echo input)."""

from __future__ import annotations

from pydantic import ValidationError


def invalid_fields(exc: ValidationError, root: str) -> list[str]:
    """Sorted dotted paths of the invalid fields; ``root`` names an error on the whole."""
    return sorted({".".join(str(p) for p in e["loc"]) or root for e in exc.errors()})
