"""A check's result and how it prints: one line each, the fix on the failing ones."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any

__all__ = ["Check", "Status", "fail", "failed", "ok", "skip", "warn"]


class Status(StrEnum):
    OK = "ok"
    WARN = "warn"
    """Worth knowing, not broken (dead letters kept, a queue filling up)."""
    FAIL = "fail"
    """Broken: ``turngraph doctor`` exits 1."""
    SKIP = "skip"
    """Not checked, because something it needs failed first."""


@dataclass(frozen=True)
class Check:
    name: str
    status: Status
    detail: str
    fix: str = ""

    def line(self, name_width: int = 18) -> str:
        """``FAIL  redis.policy  maxmemory-policy is allkeys-lru (fix: …)``, the name
        padded to ``name_width`` (the longest name of a table keeps its columns)."""
        text = f"{self.status.value.upper():<5} {self.name:<{name_width}} {self.detail}"
        if self.fix and self.status in (Status.FAIL, Status.WARN):
            text += f" (fix: {self.fix})"
        return text

    def as_dict(self) -> dict[str, Any]:
        return {k: (v.value if isinstance(v, Status) else v) for k, v in asdict(self).items()}


def ok(name: str, detail: str) -> Check:
    return Check(name, Status.OK, detail)


def warn(name: str, detail: str, fix: str) -> Check:
    return Check(name, Status.WARN, detail, fix)


def fail(name: str, detail: str, fix: str) -> Check:
    return Check(name, Status.FAIL, detail, fix)


def skip(name: str, why: str) -> Check:
    return Check(name, Status.SKIP, why)


def failed(checks: list[Check]) -> bool:
    return any(c.status is Status.FAIL for c in checks)
