"""What the recall index learns from the graph: graph rows → :class:`MemoryRecord`.

The one mapper of recallable memories. The ingest side (after a write, from the rows the
same transaction reads back) and the recall bootstrap (paging through the whole graph)
both read the rows below and build memories here, so a replica fed by the change stream
and one bootstrapped after a restart hold the same memories.

Rows are plain mappings, whichever store read them:

- an episode row: ``event_id, content, session_id, workspace, user, turn_index, role,
  speaker, occurred_at`` and ``entities`` (names of the entities it mentions);
- a directive row (a Decision, Preference … node, see ``schemas.ontology.DIRECTIVES``):
  ``uid, name, summary, status, scope, workspace, user, topic, subject, first_seen,
  last_seen``, ``first_id`` (the turn that made it), ``episode_ids`` (every turn with a
  ``MENTIONS`` to it, in any order) and ``entities`` (names of the other entities the turn
  that first stated it mentions).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from turngraph.schemas.changes import MemoryKind, MemoryRecord, MemoryStatus
from turngraph.schemas.ontology import DIRECTIVES
from turngraph.schemas.scopes import Scope

__all__ = [
    "DIRECTIVES_BY_UID", "DIRECTIVES_PAGE", "DIRECTIVE_COLUMNS", "DISTILLED_LABELS",
    "DISTILLED_PAGE", "EPISODES_BY_ID", "EPISODES_PAGE", "EPISODE_COLUMNS", "EPISODE_WORKSPACES",
    "RECALLABLE_ENTITY_TYPES", "TOPIC_TRAILING", "UNSIGNALLED_ENTITY_TYPE",
    "WORKSPACE_EPISODES_PAGE", "directive_memory", "display_topic", "distilled_memory",
    "episode_memory", "graph_time", "stating_order",
]  # fmt: skip

RECALLABLE_ENTITY_TYPES: frozenset[str] = frozenset(DIRECTIVES)
"""Entity types that are memories in their own right, recalled beside the turns."""

UNSIGNALLED_ENTITY_TYPE = "Person"
"""Mentions of this type are left out of a memory's ``entities`` (recall's graph signal):
a person (a speaker, someone addressed by name) is mentioned by so many turns that
matching the name adds only ties; measured on the development sets, people in the graph
signal cost REALTALK 2.2 points of R@10 (``tests/data/extraction_turns.md``). Speakers
stay searchable by text (recall indexes ``speaker: text``) and people stay in the graph."""

_SIGNALLED = f"(n.type IS NULL OR n.type <> '{UNSIGNALLED_ENTITY_TYPE}')"

TOPIC_TRAILING = ".,;:!?"
"""Punctuation stripped from the end of a directive's display topic."""

# Statements. ``{label}`` comes from RECALLABLE_ENTITY_TYPES (the ontology allow-list).
EPISODE_COLUMNS = """
RETURN e.event_id AS event_id, e.content AS content, e.session_id AS session_id,
  e.workspace AS workspace, e.user AS user, e.turn_index AS turn_index, e.role AS role,
  e.speaker AS speaker, e.occurred_at AS occurred_at, collect(n.name) AS entities
"""


def _episodes_page(condition: str = "") -> str:
    return (
        "MATCH (e:Episode) WHERE "
        + (f"{condition} AND " if condition else "")
        + """e.event_id > $after
WITH e ORDER BY e.event_id LIMIT $limit
OPTIONAL MATCH (e)-[:MENTIONS]->(n) WHERE """
        + _SIGNALLED
        + """
"""
        + EPISODE_COLUMNS
        + "ORDER BY event_id\n"
    )


EPISODES_PAGE = _episodes_page()
"""One page of episodes for the bootstrap, in ``event_id`` order after ``$after``."""

EPISODE_WORKSPACES = """
MATCH (e:Episode) WHERE e.workspace IS NOT NULL RETURN DISTINCT e.workspace AS workspace
"""
"""The workspaces episodes are in (a sharded replica picks its own among them)."""

WORKSPACE_EPISODES_PAGE = _episodes_page("e.workspace = $workspace")
"""One page of one workspace's episodes (the ``Episode.workspace`` index finds them;
every turn is in a workspace: ``TurnEvent.workspace`` is required)."""

EPISODES_BY_ID = (
    """
UNWIND $ids AS id
MATCH (e:Episode {event_id: id})
OPTIONAL MATCH (e)-[:MENTIONS]->(n) WHERE """
    + _SIGNALLED
    + """
"""
    + EPISODE_COLUMNS
)
"""The episodes a write just made or matched, read back in the same transaction."""

DIRECTIVE_COLUMNS = (
    """
WITH n, coalesce(n.first_episode_id, n.episode_ids[0]) AS first_id
OPTIONAL MATCH (first:Episode {{event_id: first_id}})-[:MENTIONS]->(o)
WHERE o.uid <> n.uid AND (o.type IS NULL OR o.type <> '"""
    + UNSIGNALLED_ENTITY_TYPE
    + """')
WITH n, first_id, collect(o.name) AS entities
OPTIONAL MATCH (stating:Episode)-[:MENTIONS]->(n)
WITH n, first_id, entities, collect(stating.event_id) AS episode_ids
RETURN n.uid AS uid, n.name AS name, n.summary AS summary, n.status AS status,
  n.scope AS scope, n.workspace AS workspace, n.user AS user, n.topic AS topic,
  n.subject AS subject, n.first_seen AS first_seen, n.last_seen AS last_seen,
  first_id, episode_ids, entities
"""
)
"""A directive's entities are the others its first stating turn mentions: fixed when it is
made (like its summary), one indexed lookup per directive however often it is repeated.
Its stating turns (``episode_ids``) are the episodes with a ``MENTIONS`` to it, one
relationship read per stating turn (as the list it replaced held one id per turn); a graph
made before provenance moved there may still name the first in ``episode_ids``."""

DIRECTIVES_PAGE = (
    "MATCH (n:{label}) WHERE n.uid > $after WITH n ORDER BY n.uid LIMIT $limit"
    + DIRECTIVE_COLUMNS
    + "ORDER BY uid\n"
)
"""One page of one directive label's nodes for the bootstrap, in ``uid`` order."""

DIRECTIVES_BY_UID = "UNWIND $uids AS uid MATCH (n:{label} {{uid: uid}})" + DIRECTIVE_COLUMNS
"""The directive nodes a write touched, read back in the same transaction."""


def graph_time(value: Any) -> datetime:
    """A stored timestamp (ISO string, or a driver temporal) as an aware UTC datetime."""
    if isinstance(value, datetime):
        moment = value
    elif hasattr(value, "to_native"):
        moment = value.to_native()
    else:
        moment = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def _names(values: Iterable[Any]) -> tuple[str, ...]:
    """Entity names de-duplicated and sorted: the order a graph read returns is arbitrary."""
    return tuple(sorted({str(v) for v in values if v}))


def episode_memory(row: Mapping[str, Any]) -> MemoryRecord:
    """A turn: recalled in its session, workspace and user scopes."""
    occurred = graph_time(row["occurred_at"])
    return MemoryRecord(
        id=row["event_id"],
        text=row["content"],
        kind=MemoryKind.EPISODE,
        scope=Scope.SESSION,
        created_at=occurred,
        source_created_at=occurred,
        source_event_ids=(row["event_id"],),
        session_id=row["session_id"],
        workspace=row["workspace"],
        user=row["user"],
        entities=_names(row.get("entities") or ()),
        turn_index=row["turn_index"],
        extra={"role": row.get("role") or "", "speaker": row.get("speaker") or ""},
    )


def stating_order(first: Any, stating: Iterable[Any]) -> tuple[str, ...]:
    """A directive's stating turns as its record lists them: the turn that made it first
    (while it still states it), the others in ``event_id`` order (the graph returns them
    in no order)."""
    ids = sorted({str(x) for x in stating if x})
    if first is not None and str(first) in ids:
        ids.remove(str(first))
        ids.insert(0, str(first))
    return tuple(ids)


def directive_memory(label: str, row: Mapping[str, Any]) -> MemoryRecord | None:
    """A decision or memory directive: a workspace (or, said ``(user)``, user) memory.

    ``None`` when no turn states it any more (its episodes were forgotten).
    """
    episode_ids = stating_order(row.get("first_id"), row.get("episode_ids") or ())
    if not episode_ids:
        return None
    user_level = row.get("scope") == Scope.USER.value
    topic = row.get("topic") or row.get("subject") or label
    return MemoryRecord(
        id=row["uid"],
        text=row.get("summary") or row["name"],
        kind=MemoryKind.FACT if label == "Decision" else MemoryKind.PROMOTED,
        scope=Scope.USER if user_level else Scope.WORKSPACE,
        created_at=graph_time(row["first_seen"]),
        source_created_at=graph_time(row.get("last_seen") or row["first_seen"]),
        source_event_ids=episode_ids,
        workspace=None if user_level else row["workspace"],
        user=row["user"],
        status=row.get("status") or MemoryStatus.ACTIVE.value,
        topic=str(topic).rstrip(TOPIC_TRAILING) or label,
        entities=_names(row.get("entities") or ()),
        extra={"entity_type": label},
    )


DISTILLED_LABELS: tuple[str, ...] = ("Summary", "DecisionRecord", "Memory")
"""Nodes the maintenance jobs write (``workers/maintenance``); each carries its recall
record as JSON in ``memory``."""

DISTILLED_PAGE = """
MATCH (n:{label}) WHERE n.uid > $after AND n.memory IS NOT NULL
WITH n ORDER BY n.uid LIMIT $limit
RETURN n.uid AS uid, n.memory AS memory, n.status AS status
ORDER BY uid
"""
"""One page of one distilled label's nodes for the bootstrap, in ``uid`` order."""


def distilled_memory(label: str, row: Mapping[str, Any]) -> MemoryRecord | None:
    """A summary, decision record, promoted memory or recap: the record its maintenance
    job announced, with a summary's current status (compaction supersedes summaries).
    ``None`` for a record that no longer validates (skipped, never fatal to start-up)."""
    try:
        record = MemoryRecord.model_validate_json(row["memory"])
    except ValueError:
        return None
    if label == "Summary" and row.get("status"):
        record = record.model_copy(update={"status": str(row["status"])})
    return record


def display_topic(subject: str | None) -> str | None:
    """The topic a directive shows, as said (case kept), trailing punctuation stripped."""
    if not subject:
        return None
    return subject.rstrip(TOPIC_TRAILING) or None
