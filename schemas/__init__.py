"""Wire contracts: versioned pydantic models shared by producers and workers.

Producers in any language publish against the JSON Schema files exported from these
models (see ``schemas/json/``); nothing here opens a connection or reads settings.
"""

from turngraph.schemas.recall import (
    RecallRequest,
    RecallResponse,
    RecallResult,
    ScopeName,
    ScoreBreakdown,
)
from turngraph.schemas.turn_event import ClientInfo, GitInfo, Reference, Role, TurnEvent

__all__ = [
    "ClientInfo",
    "GitInfo",
    "RecallRequest",
    "RecallResponse",
    "RecallResult",
    "Reference",
    "Role",
    "ScopeName",
    "ScoreBreakdown",
    "TurnEvent",
]
