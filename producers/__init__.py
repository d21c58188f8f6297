"""What an editor (or any Python caller) imports to give a chat assistant its memory.

``connect(settings)`` builds the publisher, recall and distill clients; ``ScopeHasher``
and ``ConsentStore`` keep raw keys and publication local. The example and the rest:
docs/producers.md ("From Python"). The names below are imported on first use (PEP 562):
an editor hook importing one small module stays cheap.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the CLI's fast path)
if TYPE_CHECKING:
    from typing import Any

    from turngraph.producers.connection import (
        Connection,
        ProducerSettings,
        Recaller,
        connect,
        open_publisher,
    )
    from turngraph.producers.consent import ConsentStore, consent_endpoint
    from turngraph.producers.distill_client import DistillClient
    from turngraph.producers.publisher import ConsentCheck, Publisher
    from turngraph.producers.recall_client import RecallClient
    from turngraph.producers.scopes import ScopeHasher
    from turngraph.schemas.turn_event import ClientInfo, TurnEvent

_HOMES = {
    "ClientInfo": "turngraph.schemas.turn_event",
    "Connection": "turngraph.producers.connection",
    "ConsentCheck": "turngraph.producers.publisher",
    "ConsentStore": "turngraph.producers.consent",
    "DistillClient": "turngraph.producers.distill_client",
    "ProducerSettings": "turngraph.producers.connection",
    "Publisher": "turngraph.producers.publisher",
    "RecallClient": "turngraph.producers.recall_client",
    "Recaller": "turngraph.producers.connection",
    "ScopeHasher": "turngraph.producers.scopes",
    "TurnEvent": "turngraph.schemas.turn_event",
    "connect": "turngraph.producers.connection",
    "consent_endpoint": "turngraph.producers.consent",
    "open_publisher": "turngraph.producers.connection",
}

__all__ = [
    "ClientInfo", "Connection", "ConsentCheck", "ConsentStore", "DistillClient", "ProducerSettings",
    "Publisher", "RecallClient", "Recaller", "ScopeHasher", "TurnEvent", "connect",
    "consent_endpoint", "open_publisher",
]  # fmt: skip


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)
