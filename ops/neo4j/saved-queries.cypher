// turngraph: saved queries for Neo4j Browser.
// Each block starts with a "// name:" line. Paste a whole block into the Browser editor
// (the :param lines set its parameters: edit their values first) and run it, or
// star it to keep it in Favorites. Scope keys (session_id, workspace, user) are the
// hashed keys the producers publish; `Workspace overview` without a filter lists them.

// name: Session timeline
// Every turn of one session in order: who spoke, when, and what it mentions.
:param session_id => 'SESSION-KEY';
MATCH (e:Episode {session_id: $session_id})
OPTIONAL MATCH (e)-[:MENTIONS]->(x)
WITH e, collect(DISTINCT labels(x)[0] + ': ' + x.name) AS mentions
RETURN e.turn_index AS turn, e.role AS role, e.occurred_at AS at,
       left(e.content, 300) AS content, mentions
ORDER BY e.turn_index, e.occurred_at;

// name: Session graph
// The same session drawn as a graph: the chain of turns and everything they mention.
:param session_id => 'SESSION-KEY';
MATCH (s:Session {key: $session_id})<-[:IN_SESSION]-(e:Episode)
OPTIONAL MATCH chain = (e)-[:NEXT]->(:Episode)
OPTIONAL MATCH mention = (e)-[:MENTIONS]->()
RETURN s, e, chain, mention;

// name: What was decided about X, and what superseded it
// Decisions whose name, subject or summary mention the topic, or that apply to something
// named like it; newest first, with the decision that replaced each (if any) and the
// turns that stated it (source_event_ids: run "Where a turn came from" on one).
:param about => 'retry';
MATCH (d:Decision)
WHERE toLower(d.name) CONTAINS toLower($about)
   OR toLower(coalesce(d.subject, '')) CONTAINS toLower($about)
   OR toLower(coalesce(d.summary, '')) CONTAINS toLower($about)
   OR EXISTS {
        MATCH (d)-[:APPLIES_TO|IMPACTS|HAS_TOPIC]->(t)
        WHERE toLower(t.name) CONTAINS toLower($about)
      }
OPTIONAL MATCH (newer:Decision)-[:SUPERSEDES]->(d)
OPTIONAL MATCH (e:Episode)-[:MENTIONS]->(d)
WITH d, newer, collect(e.event_id) AS source_event_ids
RETURN d.name AS decision, d.status AS status, d.subject AS subject,
       d.valid_at AS decided_at, d.invalid_at AS superseded_at,
       newer.name AS superseded_by, d.scope_key AS workspace,
       source_event_ids
ORDER BY d.valid_at DESC;

// name: Where a turn came from
// One turn by its event id (the source_event_ids other queries return), with its session.
:param event_id => 'EVENT-ID';
MATCH (e:Episode {event_id: $event_id})
OPTIONAL MATCH (e)-[:IN_SESSION]->(s:Session)
RETURN e.session_id AS session_id, e.turn_index AS turn, e.role AS role,
       e.occurred_at AS at, e.content AS content, s.started_at AS session_started;

// name: Everything about a file
// A file, every fact that touches it (in either direction), and the turns that mention it.
:param path => 'src/app.py';
MATCH (f:File)
WHERE f.name = $path OR f.name ENDS WITH '/' + $path
OPTIONAL MATCH fact = (f)-[r]-(other)
WHERE NOT other:Episode
OPTIONAL MATCH mention = (e:Episode)-[:MENTIONS]->(f)
RETURN f, fact, mention;

// name: Workspace overview
// Per workspace: sessions, turns, first and last activity, and its most mentioned entities.
:param workspace => '';
MATCH (e:Episode)
WHERE $workspace = '' OR e.workspace = $workspace
WITH e.workspace AS workspace, count(DISTINCT e.session_id) AS sessions, count(e) AS turns,
     min(e.occurred_at) AS first_turn, max(e.occurred_at) AS last_turn
CALL (workspace) {
  MATCH (:Episode {workspace: workspace})-[:MENTIONS]->(x)
  WITH x, count(*) AS mentions ORDER BY mentions DESC LIMIT 5
  RETURN collect(labels(x)[0] + ': ' + x.name) AS top_entities
}
RETURN workspace, sessions, turns, first_turn, last_turn, top_entities
ORDER BY last_turn DESC;

// name: Most mentioned entities
// Which files, decisions, tools … come up most, in one workspace (or all of them).
:param workspace => '';
MATCH (e:Episode)-[:MENTIONS]->(x)
WHERE $workspace = '' OR e.workspace = $workspace
RETURN labels(x)[0] AS type, x.name AS name, count(DISTINCT e) AS mentions,
       count(DISTINCT e.session_id) AS sessions, max(e.occurred_at) AS last_mentioned
ORDER BY mentions DESC
LIMIT 25;

// name: Recent decisions
// Decisions of the last days (default 14), newest first, with what they apply to and
// whether a later decision superseded them. Timestamps are stored as UTC ISO strings.
:param days => 14;
MATCH (d:Decision)
WHERE datetime(d.valid_at) >= datetime() - duration({days: $days})
OPTIONAL MATCH (d)-[:APPLIES_TO|IMPACTS]->(t)
OPTIONAL MATCH (newer:Decision)-[:SUPERSEDES]->(d)
RETURN d.name AS decision, d.status AS status, d.valid_at AS decided_at,
       collect(DISTINCT t.name) AS applies_to, newer.name AS superseded_by,
       d.scope_key AS workspace
ORDER BY decided_at DESC
LIMIT 50;

// name: Where a fact came from
// Facts between entities named like $name, with validity and the turns that stated them.
:param name => 'retry';
MATCH (a)-[r]->(b)
WHERE NOT a:Episode AND NOT b:Episode AND r.episode_ids IS NOT NULL
  AND (toLower(a.name) CONTAINS toLower($name) OR toLower(b.name) CONTAINS toLower($name))
OPTIONAL MATCH (e:Episode) WHERE e.event_id IN r.episode_ids
RETURN a.name AS source, type(r) AS relation, b.name AS target, r.status AS status,
       r.valid_at AS valid_at, r.invalid_at AS invalid_at,
       collect(e {.event_id, .session_id, .turn_index, .role}) AS stated_in
ORDER BY r.valid_at DESC;

// name: Search turns by words (Neo4j only: full-text index episode_text)
// Lucene syntax: retry AND backoff, "exact phrase", retr*, retry~ (fuzzy).
:param words => 'retry AND backoff';
CALL db.index.fulltext.queryNodes('episode_text', $words) YIELD node, score
RETURN node.session_id AS session_id, node.turn_index AS turn, node.role AS role,
       left(node.content, 300) AS content, score
ORDER BY score DESC
LIMIT 25;

// name: Turns like this one (Neo4j only: vector index episode_embedding_640)
// The nearest turns to one turn by its stored vector. The index is named by the vector's
// dimension: 640 for the shipped model pair; `SHOW VECTOR INDEXES` lists yours.
:param event_id => 'EVENT-ID';
:param index => 'episode_embedding_640';
MATCH (e:Episode {event_id: $event_id})
CALL db.index.vector.queryNodes($index, 10, e.embedding) YIELD node, score
RETURN node.session_id AS session_id, node.turn_index AS turn, node.role AS role,
       left(node.content, 300) AS content, score
ORDER BY score DESC;

// name: Decision records and what they were made from
// One record per topic: the current decision, the summaries it superseded (in order) and
// the turns each summary covers. Draw it: replace the RETURN with `RETURN d, s, e`.
:param about => 'retry';
MATCH (d:DecisionRecord)
WHERE toLower(d.topic) CONTAINS toLower($about)
   OR toLower(coalesce(d.current_decision, '')) CONTAINS toLower($about)
MATCH (d)-[:SUPERSEDES]->(s:Summary)
OPTIONAL MATCH (s)-[:SUMMARIZES]->(e:Episode)
WITH d, s, e ORDER BY s.time_end, e.turn_index
WITH d, s, collect(e.event_id) AS turns
RETURN d.topic AS topic, d.current_decision AS current_decision, d.updated_at AS as_of,
       s.uid AS summary, s.status AS summary_status, s.time_start AS summary_from,
       turns AS source_event_ids, d.text AS record
ORDER BY summary_from;

// name: Summaries of a session
// Every summary of one session with its status (Draft, Final, Superseded) and the
// decision record that superseded it, if any; the full text is in `text`.
:param session_id => 'SESSION-KEY';
MATCH (s:Summary {session_id: $session_id})
OPTIONAL MATCH (d:DecisionRecord)-[:SUPERSEDES]->(s)
RETURN s.first_turn AS first_turn, s.last_turn AS last_turn, s.topic AS topic,
       s.status AS status, s.method AS method, d.topic AS compacted_into, s.text AS text
ORDER BY s.first_turn;

// name: Promoted memories
// Curated memories (decisions, lessons, preferences, procedures, task updates,
// terminology) and ownership context, in a workspace or user scope.
:param scope_key => '';
MATCH (m:Memory)
WHERE $scope_key = '' OR m.scope_key = $scope_key
OPTIONAL MATCH (m)-[:DERIVED_FROM]->(e:Episode)
RETURN m.kind AS kind, m.scope AS scope, m.text AS memory, m.created_at AS created_at,
       collect(e.event_id) AS source_event_ids
ORDER BY created_at DESC;
