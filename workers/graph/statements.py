"""Every Cypher statement the hot paths send; each runs on Neo4j 5 and on ArcadeDB.

Labels and relationship types come from the ontology allow-list and are formatted in
(``{label}``); everything else is a parameter.
"""

from collections.abc import Mapping

__all__ = [
    "KEEP_PLAN", "LINK_EPISODE_CHAIN", "LINK_EPISODE_CHAIN_READING_PREVIOUS", "NEO4J_PINNED",
    "RETRACT_MENTIONS", "SUPERSEDE_DECISIONS", "SUPERSEDE_LATE_ARRIVALS",
    "UPSERT_EPISODES", "UPSERT_FACTS", "UPSERT_MENTIONED_ENTITIES", "UPSERT_SESSIONS",
    "UPSERT_WORKSPACES", "pinned",
]  # fmt: skip

KEEP_PLAN = "CYPHER replan=skip\n"
"""Neo4j only, before a statement whose every node is found by a unique key (one plan
whatever the statistics: unique index seeks): Neo4j keeps its cached plan instead of
planning it again each time the statistics of a growing graph have moved
(``dbms.cypher.min_replan_interval``, 10 s). Statements that would pick between indexes
(the chain's ``turn_key``, ``SUPERSEDE_*``'s scope key and subject) keep theirs once
:func:`pinned` has named the index of each node (:data:`NEO4J_PINNED`)."""


def pinned(statement: str, seeks: Mapping[str, str]) -> str:
    """``statement`` for Neo4j with a plan that no statistics change: each node pattern of
    ``seeks`` followed by ``USING INDEX`` on the index named (``var:Label(property)``),
    and the plan kept (:data:`KEEP_PLAN`). A pattern not found exactly once is an error."""
    for pattern, index in seeks.items():
        if statement.count(pattern) != 1:
            raise ValueError(f"{pattern!r} is not in the statement exactly once")
        statement = statement.replace(pattern, f"{pattern} USING INDEX {index}")
    return KEEP_PLAN + statement


UPSERT_WORKSPACES = """
UNWIND $rows AS r
MERGE (w:Workspace {key: r.workspace})
ON CREATE SET w.created_at = r.occurred_at
"""

UPSERT_SESSIONS = """
UNWIND $rows AS r
MERGE (s:Session {key: r.session_id})
ON CREATE SET s.workspace = r.workspace, s.user = r.user, s.started_at = r.occurred_at
WITH s, r
MATCH (w:Workspace {key: r.workspace})
MERGE (s)-[:IN_WORKSPACE]->(w)
"""

UPSERT_EPISODES = """
UNWIND $rows AS r
MERGE (e:Episode {event_id: r.event_id})
ON CREATE SET e.session_id = r.session_id, e.workspace = r.workspace, e.user = r.user,
  e.turn_index = r.turn_index, e.role = r.role, e.speaker = r.speaker,
  e.content = r.content, e.occurred_at = r.occurred_at, e.client = r.client,
  e.importance = r.importance, e.tags = r.tags, e.git_branch = r.git_branch,
  e.git_commit = r.git_commit, e.ingested_at = r.ingested_at,
  e.name = r.caption, e.turn_key = r.turn_key
WITH e, r
MATCH (s:Session {key: r.session_id})
MERGE (e)-[:IN_SESSION]->(s)
RETURN e.event_id AS event_id, e.ingested_at AS ingested_at
"""
"""Returns each episode's ``ingested_at``: equal to this write's own (one per batch plan)
only when this write created the episode."""

LINK_EPISODE_CHAIN = """
UNWIND $rows AS r
MATCH (e:Episode {event_id: r.event_id})
OPTIONAL MATCH (p:Episode {turn_key: r.prev_key})
OPTIONAL MATCH (n:Episode {turn_key: r.next_key})
FOREACH (_ IN CASE WHEN p IS NULL THEN [] ELSE [1] END | MERGE (p)-[:NEXT]->(e))
FOREACH (_ IN CASE WHEN n IS NULL THEN [] ELSE [1] END | MERGE (e)-[:NEXT]->(n))
"""

LINK_EPISODE_CHAIN_READING_PREVIOUS = (
    LINK_EPISODE_CHAIN
    + """RETURN r.event_id AS event_id, p.content AS content, p.speaker AS speaker
"""
)
"""The chain, and each turn's previous turn as the graph holds it (the ingest embedding's
context) from the match the chain makes anyway: no read of its own."""

UPSERT_MENTIONED_ENTITIES = """
UNWIND $rows AS r
MATCH (e:Episode {{event_id: r.event_id}})
MERGE (n:{label} {{uid: r.uid}})
ON CREATE SET n.name = r.name, n.name_key = r.name_key, n.type = r.type,
  n.scope = r.scope, n.scope_key = r.scope_key, n.workspace = r.workspace,
  n.user = r.user, n.first_seen = r.occurred_at, n.last_seen = r.occurred_at,
  n.status = r.status, n.valid_at = r.occurred_at, n.summary = r.summary,
  n.subject = r.subject, n.topic = r.topic, n.aliases = r.aliases, n.mentions = 0,
  n.first_episode_id = r.event_id
MERGE (e)-[m:MENTIONS]->(n)
ON CREATE SET n.mentions = n.mentions + 1,
  n.last_seen = CASE WHEN r.occurred_at > n.last_seen THEN r.occurred_at ELSE n.last_seen END
"""
"""Entities and the episode's MENTIONS in one pass: a mention is counted only when the
MENTIONS relationship is created, so re-delivery changes nothing. An entity's provenance is
its MENTIONS relationships; the node keeps their count and the turn that made it
(``first_episode_id``), never a list that each mention would rewrite whole
(docs/graph-model.md, "Provenance")."""

RETRACT_MENTIONS = """
UNWIND $rows AS r
MATCH (e:Episode {{event_id: r.event_id}})-[m:MENTIONS]->(n:{label} {{uid: r.uid}})
DELETE m
SET n.mentions = n.mentions - 1
"""
"""A turn's mentions of entities an enrichment superseded (the LLM named the same thing
with another type); a mention already gone matches nothing, so a repeat changes nothing."""

UPSERT_FACTS = """
UNWIND $rows AS r
MATCH (a:{source_label} {{uid: r.source_uid}})
MATCH (b:{target_label} {{uid: r.target_uid}})
MERGE (a)-[f:{rel_type}]->(b)
ON CREATE SET f.valid_at = r.occurred_at, f.status = 'Active', f.episode_ids = [r.event_id],
  f.statement = r.statement, f.scope_key = r.scope_key
ON MATCH SET f.episode_ids = CASE WHEN r.event_id IN f.episode_ids THEN f.episode_ids
  ELSE f.episode_ids + r.event_id END
"""

SUPERSEDE_DECISIONS = """
UNWIND $rows AS r
MATCH (new:Decision {uid: r.uid})
MATCH (old:Decision {scope_key: r.scope_key, subject: r.subject})
WHERE old.uid <> new.uid AND old.status = 'Active' AND old.valid_at < new.valid_at
SET old.status = 'Superseded', old.invalid_at = new.valid_at
MERGE (new)-[s:SUPERSEDES]->(old)
ON CREATE SET s.valid_at = new.valid_at, s.episode_ids = [r.event_id]
RETURN old.uid AS superseded_uid, new.uid AS by_uid
"""

SUPERSEDE_LATE_ARRIVALS = """
UNWIND $rows AS r
MATCH (late:Decision {uid: r.uid})
MATCH (newer:Decision {scope_key: r.scope_key, subject: r.subject})
WHERE newer.uid <> late.uid AND newer.valid_at > late.valid_at AND late.status = 'Active'
WITH late, newer ORDER BY newer.valid_at
WITH late, head(collect(newer)) AS next
OPTIONAL MATCH (stating:Episode)-[:MENTIONS]->(next)
WITH late, next, collect(stating.event_id) AS stated_by
SET late.status = 'Superseded', late.invalid_at = next.valid_at
MERGE (next)-[s:SUPERSEDES]->(late)
ON CREATE SET s.valid_at = next.valid_at, s.episode_ids = stated_by
RETURN late.uid AS superseded_uid, next.uid AS by_uid
"""
"""A decision that arrives after a newer one on the same subject (out-of-order delivery);
the newer decision's stating turns state the supersession."""

_CHAIN_SEEKS = {
    "(e:Episode {event_id: r.event_id})": "e:Episode(event_id)",
    "(p:Episode {turn_key: r.prev_key})": "p:Episode(turn_key)",
    "(n:Episode {turn_key: r.next_key})": "n:Episode(turn_key)",
}

NEO4J_PINNED = {
    statement: pinned(statement, seeks)
    for statement, seeks in (
        (LINK_EPISODE_CHAIN, _CHAIN_SEEKS),
        (LINK_EPISODE_CHAIN_READING_PREVIOUS, _CHAIN_SEEKS),
        (
            SUPERSEDE_DECISIONS,
            {
                "(new:Decision {uid: r.uid})": "new:Decision(uid)",
                "(old:Decision {scope_key: r.scope_key, subject: r.subject})": (
                    "old:Decision(subject)"
                ),
            },
        ),
        (
            SUPERSEDE_LATE_ARRIVALS,
            {
                "(late:Decision {uid: r.uid})": "late:Decision(uid)",
                "(newer:Decision {scope_key: r.scope_key, subject: r.subject})": (
                    "newer:Decision(subject)"
                ),
            },
        ),
    )
}
"""Neo4j's form of the statements that would otherwise be planned again as the graph grows:
each node found through the index named (``event_id``'s and ``uid``'s unique ones, the
chain's ``turn_key``, a decision's ``subject``: a few decisions per subject, where a scope
key holds all of a workspace's) and the plan kept, by the portable statement."""
