"""Cypher of distilled memory: Summary, DecisionRecord and Memory nodes and their links, and
the turns distillation reads back (``BoltDistillStore`` runs them).

Every node carries ``uid`` (unique), the scope keys (``session_id`` where it has one,
``workspace``, ``user``, ``scope`` and ``scope_key``: forget and export find it by them),
``status``, ``text`` (the seed's text form), ``memory`` (the recall record as JSON) and
``source_event_ids``. Links: ``(Summary)-[:SUMMARIZES]->(Episode)``,
``(Summary)-[:IN_SESSION]->(Session)``, ``(DecisionRecord)-[:SUPERSEDES]->(Summary)``,
``(Memory)-[:DERIVED_FROM]->(Episode)``. Runs on Neo4j 5 and on the embedded engine.
"""

__all__ = [
    "DECISION_RECORD_BY_UID", "EPISODES_BY_EVENT_ID", "LAST_TURN", "LATEST_SESSION",
    "MEMORY_EXISTS", "MEMORY_TEXT_BY_UID", "REPLACE_DRAFTS", "SESSION_SUMMARIES", "SESSION_TURNS",
    "SUMMARY_BY_UID", "TOPICS_TO_COMPACT", "TOPIC_SUMMARIES", "UPSERT_DECISION_RECORD",
    "UPSERT_MEMORY", "UPSERT_RECAP", "UPSERT_SUMMARY", "WORKSPACES_WITH_OPEN_SUMMARIES",
    "WORKSPACE_TOPICS",
]  # fmt: skip

UPSERT_SUMMARY = """
MERGE (s:Summary {uid: $row.uid})
ON CREATE SET s.created_at = $row.created_at, s.status = $row.status
SET s.topic = $row.topic, s.topic_id = $row.topic_id, s.topic_key = $row.topic_key,
  s.plan_id = $row.plan_id, s.session_id = $row.session_id, s.workspace = $row.workspace,
  s.user = $row.user, s.scope = 'workspace', s.scope_key = $row.workspace,
  s.first_turn = $row.first_turn, s.last_turn = $row.last_turn,
  s.time_start = $row.time_start, s.time_end = $row.time_end, s.method = $row.method,
  s.text = $row.text, s.summary = $row.summary, s.memory = $row.memory,
  s.source_event_ids = $row.source_event_ids, s.decision_event_ids = $row.decision_event_ids,
  s.name = $row.topic
WITH s
OPTIONAL MATCH (session:Session {key: $row.session_id})
FOREACH (_ IN CASE WHEN session IS NULL THEN [] ELSE [1] END |
  MERGE (s)-[:IN_SESSION]->(session))
WITH s
UNWIND $row.source_event_ids AS event_id
MATCH (e:Episode {event_id: event_id})
MERGE (s)-[:SUMMARIZES]->(e)
"""
"""Idempotent: the uid is derived from the session and the turn span."""

SESSION_SUMMARIES = """
MATCH (s:Summary {session_id: $session_id})
RETURN s.uid AS uid, s.first_turn AS first_turn, s.last_turn AS last_turn,
  s.status AS status
ORDER BY s.last_turn
"""

REPLACE_DRAFTS = """
UNWIND $uids AS uid
MATCH (s:Summary {uid: uid})
WHERE s.status = 'Draft'
SET s.status = CASE WHEN uid = $final_uid THEN 'Final' ELSE 'Superseded' END,
  s.superseded_by = CASE WHEN uid = $final_uid THEN null ELSE $final_uid END
RETURN s.uid AS uid, s.status AS status
"""
"""A Final summary replaces the Drafts of its span (the same node keeps the Final)."""

WORKSPACE_TOPICS = """
MATCH (s:Summary {scope_key: $workspace})
RETURN DISTINCT s.topic_id AS topic_id
"""

SUMMARY_BY_UID = """
MATCH (s:Summary {uid: $uid})
RETURN s.summary AS summary, s.status AS status
"""

DECISION_RECORD_BY_UID = """
MATCH (d:DecisionRecord {uid: $uid})
RETURN d.record AS record, d.status AS status
"""

TOPICS_TO_COMPACT = """
MATCH (s:Summary {scope_key: $workspace})
WHERE s.status <> 'Superseded'
RETURN s.topic_id AS topic_id, count(s) AS open, min(s.created_at) AS oldest
"""

WORKSPACES_WITH_OPEN_SUMMARIES = """
MATCH (s:Summary)
WHERE s.status <> 'Superseded'
RETURN DISTINCT s.scope_key AS workspace
"""

TOPIC_SUMMARIES = """
MATCH (s:Summary {topic_key: $topic_key})
RETURN s.uid AS uid, s.summary AS summary, s.status AS status
"""

UPSERT_DECISION_RECORD = """
MERGE (d:DecisionRecord {uid: $row.uid})
ON CREATE SET d.created_at = $row.created_at
SET d.topic = $row.topic, d.topic_id = $row.topic_id, d.topic_key = $row.topic_key,
  d.plan_id = $row.plan_id, d.workspace = $row.workspace, d.user = $row.user,
  d.scope = 'workspace', d.scope_key = $row.workspace, d.status = 'Final',
  d.current_decision = $row.current_decision, d.updated_at = $row.updated_at,
  d.text = $row.text, d.record = $row.record, d.memory = $row.memory,
  d.source_event_ids = $row.source_event_ids, d.name = $row.topic
WITH d
UNWIND $row.summary_uids AS summary_uid
MATCH (s:Summary {uid: summary_uid})
SET s.status = 'Superseded', s.superseded_by = d.uid
MERGE (d)-[r:SUPERSEDES]->(s)
ON CREATE SET r.valid_at = $row.updated_at, r.episode_ids = s.source_event_ids
RETURN d.created_at AS created_at
"""
"""One transaction: the record, and every merged summary Superseded and linked."""

UPSERT_MEMORY = """
MERGE (m:Memory {uid: $row.uid})
ON CREATE SET m.created_at = $row.created_at,
  m.kind = $row.kind, m.status = $row.status, m.scope = $row.scope,
  m.scope_key = $row.scope_key, m.session_id = $row.session_id,
  m.workspace = $row.workspace, m.user = $row.user, m.topic = $row.topic,
  m.text = $row.text, m.memory = $row.memory, m.source_event_ids = $row.source_event_ids,
  m.name = $row.topic
WITH m
UNWIND $row.source_event_ids AS event_id
MATCH (e:Episode {event_id: event_id})
MERGE (m)-[:DERIVED_FROM]->(e)
RETURN m.created_at AS created_at
"""
"""A memory is written once (promoting it again changes nothing)."""

MEMORY_EXISTS = """
MATCH (m:Memory {uid: $uid}) RETURN m.uid AS uid
"""

UPSERT_RECAP = """
MERGE (m:Memory {uid: $row.uid})
ON CREATE SET m.created_at = $row.created_at
SET m.kind = $row.kind, m.status = $row.status, m.scope = $row.scope,
  m.scope_key = $row.scope_key, m.session_id = $row.session_id,
  m.workspace = $row.workspace, m.user = $row.user, m.topic = $row.topic,
  m.text = $row.text, m.memory = $row.memory, m.source_event_ids = $row.source_event_ids,
  m.name = $row.topic, m.updated_at = $row.created_at
"""
"""A session has one recap memory, replaced by each new recap."""

MEMORY_TEXT_BY_UID = """
MATCH (m:Memory {uid: $uid}) RETURN m.text AS text
"""

SESSION_TURNS = """
MATCH (e:Episode {session_id: $session_id})
WHERE e.turn_index >= $first AND e.turn_index <= $last
OPTIONAL MATCH (e)-[:MENTIONS]->(n)
RETURN e.event_id AS event_id, e.session_id AS session_id, e.turn_index AS turn_index,
  e.role AS role, e.content AS content, e.occurred_at AS occurred_at, e.workspace AS workspace,
  e.user AS user, e.git_branch AS git_branch, e.speaker AS speaker,
  collect([labels(n)[0], n.name, n.subject, n.summary, n.status]) AS mentions
ORDER BY turn_index
"""

LAST_TURN = """
MATCH (e:Episode {session_id: $session_id})
RETURN max(e.turn_index) AS last
"""

LATEST_SESSION = """
MATCH (e:Episode {workspace: $workspace})
WHERE $current IS NULL OR e.session_id <> $current
RETURN e.session_id AS session_id, max(e.occurred_at) AS last
ORDER BY last DESC
LIMIT 1
"""

EPISODES_BY_EVENT_ID = """
UNWIND $ids AS id
MATCH (e:Episode {event_id: id})
RETURN e.event_id AS event_id, e.session_id AS session_id, e.workspace AS workspace,
  e.user AS user, e.turn_index AS turn_index, e.role AS role, e.speaker AS speaker,
  e.content AS content, e.occurred_at AS occurred_at, e.client AS client,
  e.importance AS importance, e.tags AS tags, e.git_branch AS git_branch,
  e.git_commit AS git_commit
"""
