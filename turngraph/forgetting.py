"""Forget one scope, by the key a person knows (a folder, a session id, a user name) or its
hashed id: shared by ``turngraph forget`` and the MCP server's ``forget`` tool."""

from __future__ import annotations

from typing import Any

from turngraph.app import build_graph_store
from turngraph.clients import INTERACTIVE_GRAPH_RETRY_S, build_clients, resolve_endpoints
from turngraph.producers.scopes import ScopeHasher
from turngraph.schemas.errors import ConfigurationError
from turngraph.schemas.scopes import Scope
from turngraph.schemas.tenants import check_tenant, qualify
from turngraph.scope_keys import scope_id
from turngraph.settings import Settings

__all__ = ["forget"]


def forget(
    settings: Settings, scope: Scope, key: str, *, hashed: bool = False, tenant: str | None = None
) -> dict[str, Any]:
    """Delete the scope completely (see ``workers.graph.forget``); returns the report with
    ``success`` and the hashed key (never the raw one). Raises ``TurngraphError`` when the
    services cannot be reached. ``hashed``: ``key`` is a stored id, used as given.

    Forget is an operator command: it needs the graph and the operator's Redis credential,
    which a tenant's producers do not hold (``settings.tenant`` set: refused). ``tenant``:
    ``key`` is the hashed id a tenant's producer shows (``turngraph scopes`` on its
    machine), forgotten in that tenant's scopes."""
    from turngraph.workers.graph.forget import forget_scope

    if settings.tenant:
        raise ConfigurationError(
            "forget is an operator command: ask the operator to run "
            f"`turngraph forget --scope {scope.value} --tenant {settings.tenant} <id> --yes` "
            "with the id `turngraph scopes` shows here"
        )
    if tenant is not None:
        try:
            key = qualify(check_tenant(tenant), key)
        except ValueError as exc:
            raise ConfigurationError(str(exc)) from None
    elif not hashed:
        key = scope_id(ScopeHasher.for_data_dir(settings.data_dir), scope, key)
    if settings.embedded:
        settings = resolve_endpoints(settings, wait_s=0.0)
    clients = build_clients(settings, graph_retry_s=INTERACTIVE_GRAPH_RETRY_S)
    try:
        report = forget_scope(
            redis_client=clients.redis,
            store=build_graph_store(clients),
            scope=scope,
            key=key,
            queues=[settings.ingest_queue, settings.maintenance_queue],
            changes_stream=settings.changes_stream,
        )
    finally:
        clients.close()
    return {"success": True, "forgotten": {"scope": scope.value, "key": key}, **report.as_dict()}
