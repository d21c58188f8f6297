"""The :class:`GraphStore` over Bolt: Neo4j 5 or the embedded ArcadeDB."""

from __future__ import annotations

from collections.abc import Collection, Iterator

import neo4j

from turngraph.schemas.changes import MemoryRecord
from turngraph.schemas.scopes import Scope
from turngraph.schemas.shards import WorkspaceFilter
from turngraph.workers.graph.errors import graph_errors
from turngraph.workers.graph.recallable import (
    DIRECTIVES_PAGE,
    DISTILLED_LABELS,
    DISTILLED_PAGE,
    EPISODE_WORKSPACES,
    EPISODES_PAGE,
    RECALLABLE_ENTITY_TYPES,
    WORKSPACE_EPISODES_PAGE,
    directive_memory,
    distilled_memory,
    episode_memory,
)
from turngraph.workers.graph.scope_deletion import delete_scope
from turngraph.workers.graph.store import Batch, ScopeDeletion, WriteReport
from turngraph.workers.graph.subgraph import Subgraph, read_scope
from turngraph.workers.graph.writer import GraphWriter

__all__ = ["BOOTSTRAP_PAGE_SIZE", "BoltGraphStore"]

BOOTSTRAP_PAGE_SIZE = 5_000
"""Episodes fetched per round trip while a recall replica bootstraps."""


class BoltGraphStore:
    """Writes, scope reads and deletes, and recall bootstrap reads, on one Bolt driver.

    The driver belongs to the caller (``turngraph.clients.Clients``); labels and
    relationship types are the ontology's allow-list.
    """

    def __init__(
        self,
        driver: neo4j.Driver,
        database: str | None,
        *,
        entity_labels: Collection[str],
        relation_types: Collection[str],
        previous_turns: bool = False,
        keep_plans: bool = False,
    ) -> None:
        """``previous_turns``: writes return each turn's previous turn (for the ingest
        embedding); ``keep_plans``: on Neo4j, its unique-key statements keep their plans
        (both: ``GraphWriter``)."""
        self.driver = driver
        self.database = database
        self.entity_labels = frozenset(entity_labels)
        self._writer = GraphWriter(
            driver,
            database,
            entity_labels=entity_labels,
            relation_types=relation_types,
            previous_turns=previous_turns,
            keep_plans=keep_plans,
        )

    def write(self, batch: Batch) -> WriteReport:
        return self._writer.write(batch)

    def read_scope(self, scope: Scope, key: str) -> Subgraph:
        return read_scope(self.driver, self.database, scope, key, self.entity_labels)

    def delete_scope(self, scope: Scope, key: str) -> ScopeDeletion:
        return delete_scope(self.driver, self.database, scope, key, self.entity_labels)

    def recallable_memories(
        self, workspaces: WorkspaceFilter | None = None
    ) -> Iterator[MemoryRecord]:
        yield from self._episode_memories(workspaces)
        for label in sorted(RECALLABLE_ENTITY_TYPES & self.entity_labels):
            for record in self._pages(DIRECTIVES_PAGE.format(label=label), "uid"):
                memory = directive_memory(label, record)
                if memory is not None:
                    yield memory
        for label in DISTILLED_LABELS:
            for record in self._pages(DISTILLED_PAGE.format(label=label), "uid"):
                distilled = distilled_memory(label, record)
                if distilled is not None:
                    yield distilled

    def _episode_memories(self, workspaces: WorkspaceFilter | None) -> Iterator[MemoryRecord]:
        if workspaces is None:
            for record in self._pages(EPISODES_PAGE, "event_id"):
                yield episode_memory(record)
            return
        with graph_errors("read recallable memories"):
            found, _, _ = self.driver.execute_query(
                EPISODE_WORKSPACES, database_=self.database, routing_=neo4j.RoutingControl.READ
            )
        for workspace in sorted(str(r["workspace"]) for r in found):
            if workspaces(workspace):
                for record in self._pages(WORKSPACE_EPISODES_PAGE, "event_id", workspace):
                    yield episode_memory(record)

    def _pages(self, query: str, key: str, workspace: str | None = None) -> Iterator[neo4j.Record]:
        """Every row of a paged read (``$after``/``$limit``, ordered by ``key``)."""
        after = ""
        while True:
            with graph_errors("read recallable memories"):
                records, _, _ = self.driver.execute_query(
                    query,
                    after=after,
                    limit=BOOTSTRAP_PAGE_SIZE,
                    workspace=workspace,
                    database_=self.database,
                    routing_=neo4j.RoutingControl.READ,
                )
            yield from records
            if len(records) < BOOTSTRAP_PAGE_SIZE:
                return
            after = records[-1][key]
