"""One ingest batch as the rows a graph store writes: episodes, entities, mentions, facts
and decisions, allow-listed and keyed. Both stores (Bolt and in-memory) write from it."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from turngraph.schemas.turn_event import TurnEvent
from turngraph.workers.extraction.models import ExtractedEntity
from turngraph.workers.graph.keys import entity_uid, normalise_name
from turngraph.workers.graph.recallable import display_topic
from turngraph.workers.graph.store import Batch

__all__ = [
    "CAPTION_CHARS", "BatchPlan", "entity_scope", "first_per", "iso", "plan_batch", "turn_key",
]  # fmt: skip

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


def first_per(rows: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    """One row per distinct ``key`` (the earliest turn), in a stable order."""
    first: dict[str, dict[str, Any]] = {}
    for row in sorted(rows, key=lambda r: (r[key], r["occurred_at"])):
        first.setdefault(row[key], row)
    return list(first.values())


@dataclass
class BatchPlan:
    """The rows of one batch; ``entities`` and ``mentions`` by label, ``facts`` by
    (source label, relationship type, target label)."""

    episodes: list[dict[str, Any]]
    entities: dict[str, dict[str, dict[str, Any]]]
    mentions: dict[str, list[dict[str, Any]]]
    facts: dict[tuple[str, str, str], list[dict[str, Any]]]
    decisions: list[dict[str, Any]]
    dropped: int
    retractions: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """Mentions to remove before the batch's own are written (``Extraction.superseded``),
    by label: ``event_id`` and the entity's ``uid``."""

    def entity_rows(self, label: str) -> list[dict[str, Any]]:
        """One row per mention (entity properties with the mention's event and time), in
        the order both stores apply them: by uid, the turn whose extraction gave the
        properties first (so a new entity's ``first_episode_id`` names the turn its summary
        came from), then event id."""
        found = self.entities[label]

        def order(link: dict[str, Any]) -> tuple[str, bool, str]:
            made_by = found[link["uid"]]["made_by"]
            return (link["uid"], link["event_id"] != made_by, link["event_id"])

        return [{**found[link["uid"]], **link} for link in sorted(self.mentions[label], key=order)]


def plan_batch(batch: Batch, labels: Collection[str], relations: Collection[str]) -> BatchPlan:
    """Key and allow-list a batch; entities of unknown labels and facts of unknown types or
    ends are dropped (counted)."""
    dropped = 0
    now = iso(datetime.now(UTC))
    episodes = [_episode_row(event, now) for event, _ in batch]
    entities: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    mentions: dict[str, list[dict[str, Any]]] = defaultdict(list)
    facts: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    decisions: list[dict[str, Any]] = []
    retractions: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for event, extraction in batch:
        uids: dict[tuple[str, str], str] = {}
        occurred_at = iso(event.occurred_at)
        for entity in extraction.entities:
            if entity.type not in labels:
                dropped += 1
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
                    "made_by": event.event_id,
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
            if source is None or target is None or fact.relation not in relations:
                dropped += 1
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
        for entity in extraction.superseded:
            if entity.type in labels:
                _, scope_key = entity_scope(entity, event)
                uid = entity_uid(scope_key, entity.type, normalise_name(entity.type, entity.name))
                if uid not in uids.values():
                    retractions[entity.type].append({"event_id": event.event_id, "uid": uid})
    return BatchPlan(episodes, entities, mentions, facts, decisions, dropped, dict(retractions))
