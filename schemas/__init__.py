"""Wire contracts: versioned pydantic models shared by producers and workers.

Producers in any language publish against the JSON Schema files exported from these
models (see ``schemas/json/``); nothing here opens a connection or reads settings.

The models named below are imported on first use (PEP 562), so importing one small
module of the package (``schemas.errors``, ``schemas.defaults``) does not build them all:
an editor hook that exits early stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from turngraph.schemas.recall import RecallRequest, RecallResponse, RecallResult, ScoreBreakdown
    from turngraph.schemas.scopes import ScopeName
    from turngraph.schemas.turn_event import ClientInfo, GitInfo, Reference, Role, TurnEvent

_HOMES = {
    "RecallRequest": "recall",
    "RecallResponse": "recall",
    "RecallResult": "recall",
    "ScopeName": "scopes",
    "ScoreBreakdown": "recall",
    "ClientInfo": "turn_event",
    "GitInfo": "turn_event",
    "Reference": "turn_event",
    "Role": "turn_event",
    "TurnEvent": "turn_event",
}

__all__ = [
    "ClientInfo", "GitInfo", "RecallRequest", "RecallResponse", "RecallResult", "Reference", "Role",
    "ScopeName", "ScoreBreakdown", "TurnEvent",
]  # fmt: skip


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
