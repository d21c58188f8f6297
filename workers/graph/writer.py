"""All writes of one ingest batch, in one transaction, batched with UNWIND."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection
from datetime import UTC, datetime
from typing import Any

import neo4j
import structlog

from schemas.changes import MemoryRecord
from schemas.turn_event import TurnEvent
from workers.extraction.models import ExtractedEntity
from workers.graph import statements as cypher
from workers.graph.keys import checked_label, checked_rel_type, entity_uid, normalise_name
from workers.graph.recallable import (
    DIRECTIVES_BY_UID,
    EPISODES_BY_ID,
    RECALLABLE_ENTITY_TYPES,
    directive_memory,
    display_topic,
    episode_memory,
)
from workers.graph.retry import run_write
from workers.graph.store import Batch, WriteReport

log = structlog.get_logger(__name__)

CAPTION_CHARS = 60
"""Length of the ``name`` caption an Episode shows in Neo4j Browser."""


def iso(moment: datetime) -> str:
    """Timestamps are stored as fixed-format UTC ISO strings: portable and sortable."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def entity_scope(entity: ExtractedEntity, event: TurnEvent) -> tuple[str, str]:
    """(scope name, scope key) an entity is resolved in: the workspace, unless a directive
    says ``(user)``; ambiguity goes to the less persistent scope, as the seed asks."""
    if entity.attributes.get("scope") == "user":
        return "user", event.user
    return "workspace", event.workspace


def _ref_key(entity_type: str, name: str) -> tuple[str, str]:
    return entity_type, normalise_name(entity_type, name)


def _episode_row(event: TurnEvent, ingested_at: str) -> dict[str, Any]:
    return {
        "event_id": event.event_id,
        "session_id": event.session_id,
        "workspace": event.workspace,
        "user": event.user,
        "turn_index": event.turn_index,
        "role": event.role.value,
        "speaker": event.speaker,
        "content": event.content,
        "caption": event.content[:CAPTION_CHARS],
        "occurred_at": iso(event.occurred_at),
        "client": f"{event.client.name}/{event.client.version}",
        "importance": event.importance,
        "tags": list(event.tags),
        "git_branch": event.git.branch if event.git else None,
        "git_commit": event.git.commit if event.git else None,
        "ingested_at": ingested_at,
        "turn_key": turn_key(event.session_id, event.turn_index),
        "prev_key": turn_key(event.session_id, event.turn_index - 1),
        "next_key": turn_key(event.session_id, event.turn_index + 1),
    }


def turn_key(session_id: str, turn_index: int) -> str:
    """One indexed property to find a session's turn by position (no composite index)."""
    return f"{session_id}:{turn_index}"


def _first_per(rows: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    """One row per distinct ``key`` (the earliest turn), in a stable order."""
    first: dict[str, dict[str, Any]] = {}
    for row in sorted(rows, key=lambda r: (r[key], r["occurred_at"])):
        first.setdefault(row[key], row)
    return list(first.values())


class GraphWriter:
    """Writes episodes, entities, mentions and facts; restricted to known labels/types."""

    def __init__(
        self,
        driver: neo4j.Driver,
        database: str | None,
        *,
        entity_labels: Collection[str],
        relation_types: Collection[str],
    ) -> None:
        self._driver = driver
        self._database = database
        self._labels = frozenset(checked_label(label) for label in entity_labels)
        self._relations = frozenset(checked_rel_type(rel) for rel in relation_types)

    def write(self, batch: Batch) -> WriteReport:
        report = WriteReport()
        now = iso(datetime.now(UTC))
        episodes = [_episode_row(event, now) for event, _ in batch]
        entities: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
        mentions: dict[str, list[dict[str, Any]]] = defaultdict(list)
        facts: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
        decisions: list[dict[str, Any]] = []
        for event, extraction in batch:
            uids: dict[tuple[str, str], str] = {}
            occurred_at = iso(event.occurred_at)
            for entity in extraction.entities:
                if entity.type not in self._labels:
                    report.dropped += 1
                    continue
                scope, scope_key = entity_scope(entity, event)
                name_key = normalise_name(entity.type, entity.name)
                uid = entity_uid(scope_key, entity.type, name_key)
                uids[_ref_key(entity.type, entity.name)] = uid
                subject = entity.attributes.get("subject")
                entities[entity.type].setdefault(
                    uid,
                    {
                        "uid": uid,
                        "name": entity.name,
                        "name_key": name_key,
                        "type": entity.type,
                        "scope": scope,
                        "scope_key": scope_key,
                        "workspace": event.workspace,
                        "user": event.user,
                        "occurred_at": occurred_at,
                        "status": "Active",
                        "summary": entity.summary,
                        "subject": normalise_name("Topic", subject) if subject else None,
                        "topic": display_topic(subject),
                        "aliases": list(entity.aliases),
                    },
                )
                mentions[entity.type].append(
                    {"event_id": event.event_id, "uid": uid, "occurred_at": occurred_at}
                )
                if entity.type == "Decision" and subject:
                    decisions.append(
                        {
                            "uid": uid,
                            "scope_key": scope_key,
                            "event_id": event.event_id,
                            "subject": normalise_name("Topic", subject),
                        }
                    )
            for fact in extraction.facts:
                source = uids.get(
                    (fact.source.type, normalise_name(fact.source.type, fact.source.name))
                )
                target = uids.get(
                    (fact.target.type, normalise_name(fact.target.type, fact.target.name))
                )
                if source is None or target is None or fact.relation not in self._relations:
                    report.dropped += 1
                    continue
                facts[(fact.source.type, fact.relation, fact.target.type)].append(
                    {
                        "source_uid": source,
                        "target_uid": target,
                        "event_id": event.event_id,
                        "occurred_at": occurred_at,
                        "statement": fact.statement,
                        "scope_key": source.split("|", 1)[0],
                    }
                )

        def work(tx: neo4j.ManagedTransaction) -> tuple[list[tuple[str, str]], list[MemoryRecord]]:
            tx.run(cypher.UPSERT_WORKSPACES, rows=_first_per(episodes, "workspace")).consume()
            tx.run(cypher.UPSERT_SESSIONS, rows=_first_per(episodes, "session_id")).consume()
            tx.run(cypher.UPSERT_EPISODES, rows=episodes).consume()
            tx.run(cypher.LINK_EPISODE_CHAIN, rows=episodes).consume()
            for label in sorted(entities):
                rows = [
                    {**entities[label][link["uid"]], **link}
                    for link in sorted(mentions[label], key=lambda m: (m["uid"], m["event_id"]))
                ]
                statement = cypher.UPSERT_MENTIONED_ENTITIES.format(label=label)
                tx.run(statement, rows=rows).consume()
            for (source_label, rel_type, target_label), rows in sorted(facts.items()):
                statement = cypher.UPSERT_FACTS.format(
                    source_label=source_label, rel_type=rel_type, target_label=target_label
                )
                tx.run(statement, rows=rows).consume()
            superseded: list[tuple[str, str]] = []
            if decisions:
                for statement in (cypher.SUPERSEDE_DECISIONS, cypher.SUPERSEDE_LATE_ARRIVALS):
                    result = tx.run(statement, rows=decisions)
                    superseded += [(rec["superseded_uid"], rec["by_uid"]) for rec in result]
            return superseded, _read_back(tx, episodes, entities)

        report.superseded, report.memories = run_write(self._driver, self._database, work)
        report.episodes = len(episodes)
        report.entities = sum(len(rows) for rows in entities.values())
        report.facts = sum(len(rows) for rows in facts.values())
        return report


def _read_back(
    tx: neo4j.ManagedTransaction,
    episodes: list[dict[str, Any]],
    entities: dict[str, dict[str, dict[str, Any]]],
) -> list[MemoryRecord]:
    """The recallable memories the batch made or touched, as the graph now holds them
    (the same rows and mapper the recall bootstrap uses)."""
    ids = [row["event_id"] for row in episodes]
    memories = [episode_memory(rec) for rec in tx.run(EPISODES_BY_ID, ids=ids)]
    for label in sorted(RECALLABLE_ENTITY_TYPES & entities.keys()):
        statement = DIRECTIVES_BY_UID.format(label=label)
        for rec in tx.run(statement, uids=sorted(entities[label])):
            memory = directive_memory(label, rec)
            if memory is not None:
                memories.append(memory)
    return memories
