"""An in-memory :class:`~workers.graph.distill_store.DistillStore`: the tests' fake.

It reads turns from, and writes Summary, DecisionRecord and Memory nodes into, an
:class:`~tests.support.memory_graph.InMemoryGraphStore` (what the ingest fake wrote), with
the statements' rules: a summary and a recap are replaced by their uid, a promoted memory
is written once, a decision record supersedes its summaries, links to episodes only where
the episode exists. ``tests/contract/test_distill_store.py`` holds it to the same
assertions as :class:`~workers.graph.distill_store.BoltDistillStore`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tests.support.memory_graph import InMemoryGraphStore
from turngraph.schemas.turn_event import MAX_TURN_INDEX, TurnEvent
from turngraph.workers.graph.distill_store import (
    OpenTopic,
    Row,
    StoredJson,
    SummarySpan,
    turn_event,
)
from turngraph.workers.graph.session_turns import SessionTurn, mentions_of, parse_time

__all__ = ["MEMORY_FIELDS", "RECORD_FIELDS", "SUMMARY_FIELDS", "InMemoryDistillStore"]

SUMMARY_FIELDS = (
    *("topic", "topic_id", "topic_key", "plan_id", "session_id", "workspace", "user"),
    *("first_turn", "last_turn", "time_start", "time_end", "method", "text", "summary"),
    *("memory", "source_event_ids", "decision_event_ids"),
)
RECORD_FIELDS = (
    *("topic", "topic_id", "topic_key", "plan_id", "workspace", "user", "current_decision"),
    *("updated_at", "text", "record", "memory", "source_event_ids"),
)
MEMORY_FIELDS = (
    *("kind", "status", "scope", "scope_key", "session_id", "workspace", "user", "topic"),
    *("text", "memory", "source_event_ids"),
)


class InMemoryDistillStore:
    """Distilled memory in the ingest fake's graph."""

    def __init__(self, graph: InMemoryGraphStore) -> None:
        self.graph = graph

    # -- reading -----------------------------------------------------------------------

    def _labelled(self, label: str) -> list[dict[str, Any]]:
        return [node.props for node in self.graph.nodes.values() if label in node.labels]

    def _by_uid(self, label: str, uid: str) -> dict[str, Any] | None:
        node_id = self.graph._keys.get(("uid", uid))
        node = self.graph.nodes.get(node_id) if node_id else None
        return node.props if node is not None and label in node.labels else None

    def _episode_id(self, event_id: str) -> str | None:
        return self.graph._keys.get(("Episode", event_id))

    def session_turns(
        self, session_id: str, first: int = 0, last: int = MAX_TURN_INDEX
    ) -> list[SessionTurn]:
        turns = []
        for node_id, node in self.graph.nodes.items():
            e = node.props
            if "Episode" not in node.labels or e.get("session_id") != session_id:
                continue
            if not first <= e["turn_index"] <= last:
                continue
            mentioned = []
            for rel in self.graph._out(node_id, "MENTIONS"):
                n = self.graph.nodes[rel.end]
                label = sorted(n.labels)[0]
                props = n.props
                mentioned.append(
                    [label, props.get("name"), props.get("subject"), props.get("summary"),
                     props.get("status")]
                )  # fmt: skip
            turns.append(
                SessionTurn(
                    event_id=e["event_id"],
                    session_id=e["session_id"],
                    turn_index=int(e["turn_index"]),
                    role=e.get("role") or "user",
                    content=e.get("content") or "",
                    occurred_at=parse_time(e["occurred_at"]),
                    workspace=e["workspace"],
                    user=e["user"],
                    mentions=mentions_of(mentioned),
                    git_branch=e.get("git_branch"),
                    speaker=e.get("speaker") or "",
                )
            )
        return sorted(turns, key=lambda t: t.turn_index)

    def last_turn_index(self, session_id: str) -> int | None:
        indexes = [
            int(e["turn_index"]) for e in self._labelled("Episode") if e["session_id"] == session_id
        ]
        return max(indexes, default=None)

    def latest_session(self, workspace: str, current: str | None = None) -> str | None:
        last: dict[str, Any] = {}
        for e in self._labelled("Episode"):
            if e["workspace"] == workspace and e["session_id"] != current:
                seen = last.get(e["session_id"])
                last[e["session_id"]] = max(seen, e["occurred_at"]) if seen else e["occurred_at"]
        return max(last, key=lambda s: last[s]) if last else None

    def turns_by_event_id(self, event_ids: Sequence[str]) -> list[TurnEvent]:
        rows = [
            self.graph.nodes[node_id].props
            for event_id in event_ids
            if (node_id := self._episode_id(event_id)) is not None
        ]
        turns = [turn_event(row) for row in rows]
        return sorted(turns, key=lambda t: (t.session_id, t.turn_index, t.event_id))

    def session_summaries(self, session_id: str) -> list[SummarySpan]:
        spans = [
            SummarySpan(s["uid"], int(s["first_turn"]), int(s["last_turn"]), s["status"])
            for s in self._labelled("Summary")
            if s["session_id"] == session_id
        ]
        return sorted(spans, key=lambda span: span.last_turn)

    def replace_drafts(self, uids: Sequence[str], final_uid: str) -> list[tuple[str, str]]:
        changed = []
        for uid in uids:
            summary = self._by_uid("Summary", uid)
            if summary is None or summary["status"] != "Draft":
                continue
            if uid == final_uid:
                summary["status"] = "Final"
                summary.pop("superseded_by", None)
            else:
                summary.update(status="Superseded", superseded_by=final_uid)
            changed.append((uid, summary["status"]))
        return changed

    def workspace_topics(self, workspace: str) -> list[str]:
        topics = {s.get("topic_id") for s in self._labelled("Summary")}
        return sorted(
            str(t)
            for t in topics
            if t
            and any(
                s.get("topic_id") == t and s["scope_key"] == workspace
                for s in self._labelled("Summary")
            )
        )

    def summary(self, uid: str) -> StoredJson | None:
        s = self._by_uid("Summary", uid)
        return StoredJson(s["summary"], s["status"]) if s and s.get("summary") else None

    def decision_record(self, uid: str) -> StoredJson | None:
        d = self._by_uid("DecisionRecord", uid)
        return StoredJson(d["record"], d["status"]) if d and d.get("record") else None

    def memory_text(self, uid: str) -> str | None:
        m = self._by_uid("Memory", uid)
        return str(m["text"]) if m and m.get("text") else None

    def memory_exists(self, uid: str) -> bool:
        return self._by_uid("Memory", uid) is not None

    def topic_summaries(self, topic_key: str) -> list[StoredJson]:
        return [
            StoredJson(s["summary"], s["status"])
            for s in self._labelled("Summary")
            if s.get("topic_key") == topic_key and s.get("summary")
        ]

    def _open(self) -> list[dict[str, Any]]:
        return [s for s in self._labelled("Summary") if s["status"] != "Superseded"]

    def workspaces_with_open_summaries(self) -> list[str]:
        return sorted({str(s["scope_key"]) for s in self._open() if s.get("scope_key")})

    def open_topics(self, workspace: str) -> list[OpenTopic]:
        grouped: dict[str, list[dict[str, Any]]] = {}
        for s in self._open():
            if s["scope_key"] == workspace:
                grouped.setdefault(str(s.get("topic_id")), []).append(s)
        return [
            OpenTopic(topic, len(rows), min(parse_time(r["created_at"]) for r in rows))
            for topic, rows in sorted(grouped.items())
        ]

    # -- writing -----------------------------------------------------------------------

    def _node(self, label: str, row: Row, created: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        node_id = self.graph._merge(("uid", row["uid"]), {label}, {"uid": row["uid"], **created})
        return node_id, self.graph.nodes[node_id].props

    def _link_episodes(self, node_id: str, rel_type: str, event_ids: Sequence[str]) -> None:
        for event_id in event_ids:
            episode = self._episode_id(event_id)
            if episode is not None:
                self.graph._merge_rel(node_id, rel_type, episode)

    @staticmethod
    def _set(props: dict[str, Any], values: dict[str, Any]) -> None:
        for name, value in values.items():
            if value is None:
                props.pop(name, None)  # as SET to null on a graph server
            else:
                props[name] = value

    def upsert_summary(self, row: Row) -> None:
        created = {"created_at": row["created_at"], "status": row["status"]}
        node_id, props = self._node("Summary", row, created)
        self._set(props, {name: row[name] for name in SUMMARY_FIELDS})
        self._set(
            props, {"scope": "workspace", "scope_key": row["workspace"], "name": row["topic"]}
        )
        session = self.graph._keys.get(("Session", row["session_id"]))
        if session is not None:
            self.graph._merge_rel(node_id, "IN_SESSION", session)
        self._link_episodes(node_id, "SUMMARIZES", row["source_event_ids"])

    def upsert_decision_record(self, row: Row) -> None:
        node_id, props = self._node("DecisionRecord", row, {"created_at": row["created_at"]})
        self._set(props, {name: row[name] for name in RECORD_FIELDS})
        self._set(props, {"scope": "workspace", "scope_key": row["workspace"], "status": "Final"})
        self._set(props, {"name": row["topic"]})
        for uid in row["summary_uids"]:
            summary_id = self.graph._keys.get(("uid", uid))
            if summary_id is None or "Summary" not in self.graph.nodes[summary_id].labels:
                continue
            summary = self.graph.nodes[summary_id].props
            summary.update(status="Superseded", superseded_by=row["uid"])
            rel_id, created = self.graph._merge_rel(node_id, "SUPERSEDES", summary_id)
            if created:
                self.graph.rels[rel_id].props.update(
                    valid_at=row["updated_at"], episode_ids=summary.get("source_event_ids")
                )

    def upsert_memory(self, row: Row) -> None:
        values = {name: row[name] for name in MEMORY_FIELDS}
        created = {"created_at": row["created_at"], **values, "name": row["topic"]}
        node_id, _ = self._node("Memory", row, created)  # a second write changes nothing
        self._link_episodes(node_id, "DERIVED_FROM", row["source_event_ids"])

    def upsert_recap(self, row: Row) -> None:
        _, props = self._node("Memory", row, {"created_at": row["created_at"]})
        self._set(props, {name: row[name] for name in MEMORY_FIELDS})
        self._set(props, {"name": row["topic"], "updated_at": row["created_at"]})
