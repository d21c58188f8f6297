"""All writes of one ingest batch, in one transaction, batched with UNWIND (over Bolt)."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import neo4j

from turngraph.schemas.changes import MemoryRecord
from turngraph.workers.embeddings.texts import speaker_text
from turngraph.workers.graph import statements as cypher
from turngraph.workers.graph.batch_plan import first_per, plan_batch
from turngraph.workers.graph.keys import checked_label, checked_rel_type
from turngraph.workers.graph.recallable import (
    DIRECTIVES_BY_UID,
    EPISODES_BY_ID,
    RECALLABLE_ENTITY_TYPES,
    directive_memory,
    episode_memory,
)
from turngraph.workers.graph.retry import run_write
from turngraph.workers.graph.store import Batch, WriteReport

__all__ = ["GraphWriter", "WriteOutcome"]

WriteOutcome = tuple[list[tuple[str, str]], list[str]]
"""Superseded (old uid, new uid) pairs and the event ids whose Episode the write created."""


class GraphWriter:
    """Writes episodes, entities, mentions and facts; restricted to known labels/types."""

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
        """``previous_turns``: return each turn's previous turn with the write
        (:attr:`WriteReport.previous_texts`, the ingest embedding's context);
        ``keep_plans`` (Neo4j only): every statement keeps its cached plan
        (:data:`~workers.graph.statements.KEEP_PLAN`), those that would choose between
        indexes with the index of each node named
        (:data:`~workers.graph.statements.NEO4J_PINNED`)."""
        self._driver = driver
        self._database = database
        self._labels = frozenset(checked_label(label) for label in entity_labels)
        self._relations = frozenset(checked_rel_type(rel) for rel in relation_types)
        self._previous_turns = previous_turns
        self._kept = cypher.KEEP_PLAN if keep_plans else ""
        self._pinned = cypher.NEO4J_PINNED if keep_plans else {}

    def _statement(self, portable: str) -> str:
        """The form of a chain or supersede statement this server is sent."""
        return self._pinned.get(portable, portable)

    def write(self, batch: Batch) -> WriteReport:
        plan = plan_batch(batch, self._labels, self._relations)
        episodes, entities, facts = plan.episodes, plan.entities, plan.facts

        written_at = {row["ingested_at"] for row in episodes}

        def work(
            tx: neo4j.ManagedTransaction,
        ) -> tuple[WriteOutcome, list[MemoryRecord], dict[str, str] | None]:
            kept = self._kept
            tx.run(kept + cypher.UPSERT_WORKSPACES, rows=first_per(episodes, "workspace")).consume()
            tx.run(kept + cypher.UPSERT_SESSIONS, rows=first_per(episodes, "session_id")).consume()
            created = {
                rec["event_id"]
                for rec in tx.run(kept + cypher.UPSERT_EPISODES, rows=episodes)
                if rec["ingested_at"] in written_at
            }
            previous = None
            if self._previous_turns:
                chain = tx.run(
                    self._statement(cypher.LINK_EPISODE_CHAIN_READING_PREVIOUS), rows=episodes
                )
                previous = {
                    rec["event_id"]: speaker_text(rec["content"], rec["speaker"])
                    for rec in chain
                    if rec["content"] is not None
                }
            else:
                tx.run(self._statement(cypher.LINK_EPISODE_CHAIN), rows=episodes).consume()
            for label, rows in sorted(plan.retractions.items()):
                tx.run(kept + cypher.RETRACT_MENTIONS.format(label=label), rows=rows).consume()
            for label in sorted(entities):
                statement = kept + cypher.UPSERT_MENTIONED_ENTITIES.format(label=label)
                tx.run(statement, rows=plan.entity_rows(label)).consume()
            for (source_label, rel_type, target_label), rows in sorted(facts.items()):
                statement = kept + cypher.UPSERT_FACTS.format(
                    source_label=source_label, rel_type=rel_type, target_label=target_label
                )
                tx.run(statement, rows=rows).consume()
            superseded: list[tuple[str, str]] = []
            if plan.decisions:
                for statement in (cypher.SUPERSEDE_DECISIONS, cypher.SUPERSEDE_LATE_ARRIVALS):
                    result = tx.run(self._statement(statement), rows=plan.decisions)
                    superseded += [(rec["superseded_uid"], rec["by_uid"]) for rec in result]
            return (superseded, sorted(created)), _read_back(tx, episodes, entities, kept), previous

        report = WriteReport(dropped=plan.dropped)
        (report.superseded, report.created), report.memories, report.previous_texts = run_write(
            self._driver, self._database, work, action="write a batch"
        )
        report.episodes = len(episodes)
        report.entities = sum(len(rows) for rows in entities.values())
        report.facts = sum(len(rows) for rows in facts.values())
        return report


def _read_back(
    tx: neo4j.ManagedTransaction,
    episodes: list[dict[str, Any]],
    entities: dict[str, dict[str, dict[str, Any]]],
    kept: str = "",
) -> list[MemoryRecord]:
    """The recallable memories the batch made or touched, as the graph now holds them
    (the same rows and mapper the recall bootstrap uses); ``kept``: the statements'
    prefix (:data:`~workers.graph.statements.KEEP_PLAN` on Neo4j)."""
    ids = [row["event_id"] for row in episodes]
    memories = [episode_memory(rec) for rec in tx.run(kept + EPISODES_BY_ID, ids=ids)]
    for label in sorted(RECALLABLE_ENTITY_TYPES & entities.keys()):
        statement = kept + DIRECTIVES_BY_UID.format(label=label)
        for rec in tx.run(statement, uids=sorted(entities[label])):
            memory = directive_memory(label, rec)
            if memory is not None:
                memories.append(memory)
    return memories
