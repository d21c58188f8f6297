"""An in-memory :class:`GraphStore`: the tests' fake, for fast tests.

It writes from the same :class:`~workers.graph.batch_plan.BatchPlan` as the Bolt store and
builds memories with the same mapper, and keeps the graph's rules: idempotent on
``event_id`` (a mention counted, and its episode added to the provenance, only when the
MENTIONS relationship is new), decisions on one subject superseded (late arrivals too),
scope deletion with provenance pruning. ``tests/contract/test_graph_store.py`` holds it
to the same assertions as the Bolt store. Not thread-safe; one transaction at a time.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from typing import Any

from turngraph.schemas.changes import MemoryRecord
from turngraph.schemas.scopes import Scope
from turngraph.schemas.shards import WorkspaceFilter
from turngraph.workers.graph.batch_plan import first_per, plan_batch
from turngraph.workers.graph.recallable import (
    RECALLABLE_ENTITY_TYPES,
    UNSIGNALLED_ENTITY_TYPE,
    directive_memory,
    episode_memory,
)
from turngraph.workers.graph.store import Batch, ScopeDeletion, WriteReport
from turngraph.workers.graph.subgraph import (
    DERIVED_LABELS,
    EPISODE_SCOPE_PROPERTY,
    SCOPE_LABEL,
    GraphNode,
    GraphRelationship,
    Subgraph,
)

__all__ = ["ENTITY_PROPERTIES", "InMemoryGraphStore"]

ENTITY_PROPERTIES: tuple[str, ...] = (
    *("name", "name_key", "type", "scope", "scope_key", "workspace", "user"),
    *("status", "summary", "subject", "topic", "aliases"),
)
"""What an entity row sets when the entity is created (as UPSERT_MENTIONED_ENTITIES)."""


@dataclass
class _Node:
    labels: set[str]
    props: dict[str, Any]


@dataclass
class _Rel:
    type: str
    start: str
    end: str
    props: dict[str, Any] = field(default_factory=dict)


class InMemoryGraphStore:
    """A property graph in dicts, written and read with the Bolt store's semantics."""

    def __init__(self, *, entity_labels: Collection[str], relation_types: Collection[str]) -> None:
        self.entity_labels = frozenset(entity_labels)
        self.relation_types = frozenset(relation_types)
        self.nodes: dict[str, _Node] = {}
        self.rels: dict[str, _Rel] = {}
        self._keys: dict[tuple[str, str], str] = {}  # (label or "uid", key) -> node id
        self._rel_keys: dict[tuple[str, str, str], str] = {}  # (start, type, end) -> rel id
        self._ids = itertools.count(1)

    # -- writing ---------------------------------------------------------------------

    def write(self, batch: Batch) -> WriteReport:
        plan = plan_batch(batch, self.entity_labels, self.relation_types)
        for row in first_per(plan.episodes, "workspace"):
            self._merge(("Workspace", row["workspace"]), {"Workspace"}, {"key": row["workspace"],
                        "created_at": row["occurred_at"]})  # fmt: skip
        for row in first_per(plan.episodes, "session_id"):
            session = self._merge(
                ("Session", row["session_id"]),
                {"Session"},
                {"key": row["session_id"], "workspace": row["workspace"], "user": row["user"],
                 "started_at": row["occurred_at"]},
            )  # fmt: skip
            self._merge_rel(session, "IN_WORKSPACE", self._keys[("Workspace", row["workspace"])])
        created = {row["event_id"] for row in plan.episodes} - {
            key[1] for key in self._keys if key[0] == "Episode"
        }
        for row in plan.episodes:
            props = {k: v for k, v in row.items() if k not in ("caption", "prev_key", "next_key")}
            props["name"] = row["caption"]
            episode = self._merge(("Episode", row["event_id"]), {"Episode"}, props)
            self._keys.setdefault(("turn_key", row["turn_key"]), episode)
            self._merge_rel(episode, "IN_SESSION", self._keys[("Session", row["session_id"])])
        for row in plan.episodes:
            episode = self._keys[("Episode", row["event_id"])]
            before = self._keys.get(("turn_key", row["prev_key"]))
            after = self._keys.get(("turn_key", row["next_key"]))
            if before is not None:
                self._merge_rel(before, "NEXT", episode)
            if after is not None:
                self._merge_rel(episode, "NEXT", after)
        for _, rows in sorted(plan.retractions.items()):
            for row in rows:
                self._retract(row)
        for label in sorted(plan.entities):
            for row in plan.entity_rows(label):
                self._mention(label, row)
        for (_, rel_type, _), rows in sorted(plan.facts.items()):
            for row in rows:
                self._fact(rel_type, row)
        superseded = self._supersede(plan.decisions)
        report = WriteReport(dropped=plan.dropped, superseded=superseded)
        report.created = sorted(created)
        report.episodes = len(plan.episodes)
        report.entities = sum(len(rows) for rows in plan.entities.values())
        report.facts = sum(len(rows) for rows in plan.facts.values())
        report.memories = self._read_back(plan.episodes, plan.entities)
        return report

    def _merge(self, key: tuple[str, str], labels: set[str], props: dict[str, Any]) -> str:
        node_id = self._keys.get(key)
        if node_id is None:
            node_id = f"n{next(self._ids)}"
            # As on a graph server: setting a property to null leaves it unset.
            self.nodes[node_id] = _Node(labels, {k: v for k, v in props.items() if v is not None})
            self._keys[key] = node_id
        return node_id

    def _merge_rel(self, start: str, rel_type: str, end: str) -> tuple[str, bool]:
        rel_id = self._rel_keys.get((start, rel_type, end))
        if rel_id is not None:
            return rel_id, False
        rel_id = f"r{next(self._ids)}"
        self.rels[rel_id] = _Rel(rel_type, start, end)
        self._rel_keys[(start, rel_type, end)] = rel_id
        return rel_id, True

    def _mention(self, label: str, row: dict[str, Any]) -> None:
        occurred = row["occurred_at"]
        props = {name: row[name] for name in ENTITY_PROPERTIES}
        props.update(uid=row["uid"], first_seen=occurred, last_seen=occurred, valid_at=occurred)
        props.update(mentions=0, first_episode_id=row["event_id"])
        entity = self._merge(("uid", row["uid"]), {label}, props)
        _, created = self._merge_rel(self._keys[("Episode", row["event_id"])], "MENTIONS", entity)
        if created:
            node = self.nodes[entity].props
            node["mentions"] += 1
            node["last_seen"] = max(node["last_seen"], occurred)

    def _retract(self, row: dict[str, Any]) -> None:
        episode = self._keys.get(("Episode", row["event_id"]))
        entity = self._keys.get(("uid", row["uid"]))
        rel_id = self._rel_keys.pop((episode or "", "MENTIONS", entity or ""), None)
        if rel_id is None or entity is None:
            return
        del self.rels[rel_id]
        self.nodes[entity].props["mentions"] -= 1

    def _fact(self, rel_type: str, row: dict[str, Any]) -> None:
        source = self._keys[("uid", row["source_uid"])]
        target = self._keys[("uid", row["target_uid"])]
        rel_id, created = self._merge_rel(source, rel_type, target)
        props = self.rels[rel_id].props
        if created:
            props.update(valid_at=row["occurred_at"], status="Active", statement=row["statement"])
            props.update(episode_ids=[row["event_id"]], scope_key=row["scope_key"])
            for name in [k for k, v in props.items() if v is None]:
                del props[name]
        elif row["event_id"] not in props["episode_ids"]:
            props["episode_ids"] = [*props["episode_ids"], row["event_id"]]

    def _decisions_on(self, scope_key: str, subject: str) -> list[tuple[str, dict[str, Any]]]:
        return [
            (node_id, node.props)
            for node_id, node in self.nodes.items()
            if "Decision" in node.labels
            and node.props.get("scope_key") == scope_key
            and node.props.get("subject") == subject
        ]

    def _supersede(self, decisions: list[dict[str, Any]]) -> list[tuple[str, str]]:
        superseded: list[tuple[str, str]] = []
        for row in decisions:  # SUPERSEDE_DECISIONS: the new one supersedes older Active ones
            new_id = self._keys[("uid", row["uid"])]
            new = self.nodes[new_id].props
            for old_id, old in self._decisions_on(row["scope_key"], row["subject"]):
                older = old["valid_at"] < new["valid_at"]
                if old["uid"] != new["uid"] and old["status"] == "Active" and older:
                    old.update(status="Superseded", invalid_at=new["valid_at"])
                    self._supersedes(new_id, old_id, new["valid_at"], [row["event_id"]])
                    superseded.append((old["uid"], new["uid"]))
        for row in decisions:  # SUPERSEDE_LATE_ARRIVALS: an older one arriving last
            late_id = self._keys[("uid", row["uid"])]
            late = self.nodes[late_id].props
            newer = [
                (node_id, props)
                for node_id, props in self._decisions_on(row["scope_key"], row["subject"])
                if props["uid"] != late["uid"] and props["valid_at"] > late["valid_at"]
            ]
            if newer and late["status"] == "Active":
                next_id, following = min(newer, key=lambda item: item[1]["valid_at"])
                late.update(status="Superseded", invalid_at=following["valid_at"])
                stated_by = self._stating(next_id)
                self._supersedes(next_id, late_id, following["valid_at"], stated_by)
                superseded.append((late["uid"], following["uid"]))
        return superseded

    def _supersedes(self, new_id: str, old_id: str, valid_at: str, episode_ids: list[str]) -> None:
        rel_id, created = self._merge_rel(new_id, "SUPERSEDES", old_id)
        if created:
            self.rels[rel_id].props.update(valid_at=valid_at, episode_ids=episode_ids)

    # -- reading ---------------------------------------------------------------------

    def _episode_row(self, node_id: str) -> dict[str, Any]:
        props = self.nodes[node_id].props
        names = [
            self.nodes[rel.end].props.get("name")
            for rel in self._out(node_id, "MENTIONS")
            if self.nodes[rel.end].props.get("type") != UNSIGNALLED_ENTITY_TYPE
        ]
        return {**props, "entities": names}

    def _stating(self, node_id: str) -> list[str]:
        """``event_id`` of the episodes with a ``MENTIONS`` to the node (its provenance)."""
        return [
            self.nodes[r.start].props["event_id"]
            for r in self.rels.values()
            if r.end == node_id and r.type == "MENTIONS"
        ]

    def _directive_row(self, node_id: str) -> dict[str, Any]:
        props = self.nodes[node_id].props
        first = props.get("first_episode_id")
        episode = self._keys.get(("Episode", first)) if first is not None else None
        names = []
        if episode is not None:
            for rel in self._out(episode, "MENTIONS"):
                other = self.nodes[rel.end].props
                if other.get("uid") != props["uid"] and (
                    other.get("type") != UNSIGNALLED_ENTITY_TYPE
                ):
                    names.append(other.get("name"))
        stating = self._stating(node_id)
        return {**props, "first_id": first, "episode_ids": stating, "entities": names}

    def _out(self, node_id: str, rel_type: str) -> list[_Rel]:
        return [r for r in self.rels.values() if r.start == node_id and r.type == rel_type]

    def _read_back(
        self, episodes: list[dict[str, Any]], entities: dict[str, dict[str, dict[str, Any]]]
    ) -> list[MemoryRecord]:
        memories = [
            episode_memory(self._episode_row(self._keys[("Episode", row["event_id"])]))
            for row in episodes
        ]
        for label in sorted(RECALLABLE_ENTITY_TYPES & entities.keys()):
            for uid in sorted(entities[label]):
                memory = directive_memory(label, self._directive_row(self._keys[("uid", uid)]))
                if memory is not None:
                    memories.append(memory)
        return memories

    def recallable_memories(
        self, workspaces: WorkspaceFilter | None = None
    ) -> Iterator[MemoryRecord]:
        def order(props: dict[str, Any]) -> tuple[str, ...]:
            """The Bolt store's order: by ``event_id``; filtered, workspace by workspace."""
            if workspaces is None:
                return (props["event_id"],)
            return (str(props["workspace"]), props["event_id"])

        episodes = sorted(
            (order(node.props), node_id)
            for node_id, node in self.nodes.items()
            if "Episode" in node.labels
            and (workspaces is None or workspaces(str(node.props["workspace"])))
        )
        for _, node_id in episodes:
            yield episode_memory(self._episode_row(node_id))
        for label in sorted(RECALLABLE_ENTITY_TYPES & self.entity_labels):
            directives = sorted(
                (node.props["uid"], node_id)
                for node_id, node in self.nodes.items()
                if label in node.labels
            )
            for _, node_id in directives:
                memory = directive_memory(label, self._directive_row(node_id))
                if memory is not None:
                    yield memory

    # -- scopes ----------------------------------------------------------------------

    def _own(self, scope: Scope, key: str) -> list[str]:
        """Node ids of the scope's own nodes, the scope node first (as the Bolt reads)."""
        prop = EPISODE_SCOPE_PROPERTY[scope]
        derived_prop = "scope_key" if scope is not Scope.SESSION else "session_id"
        found: dict[str, None] = {}
        scope_node = self._keys.get((SCOPE_LABEL[scope], key))
        if scope_node is not None:
            found[scope_node] = None
        for node_id, node in self.nodes.items():
            props, labels = node.props, node.labels
            if "Episode" in labels and props.get(prop) == key:
                found.setdefault(node_id, None)
        if scope is not Scope.SESSION:
            for node_id, node in self.nodes.items():
                if "Session" in node.labels and node.props.get(prop) == key:
                    found.setdefault(node_id, None)
            for node_id, node in self.nodes.items():
                entity = node.labels & self.entity_labels
                if entity and node.props.get("scope_key") == key:
                    found.setdefault(node_id, None)
        for node_id, node in self.nodes.items():
            if node.labels & set(DERIVED_LABELS) and node.props.get(derived_prop) == key:
                found.setdefault(node_id, None)
        return list(found)

    def _context(self, own: list[str]) -> tuple[list[str], list[str]]:
        """(what the own nodes mention, the workspaces own sessions are in)."""
        members = set(own)
        mentioned: dict[str, None] = {}
        workspaces: dict[str, None] = {}
        for rel in self.rels.values():
            if rel.start in members and rel.type == "MENTIONS":
                mentioned.setdefault(rel.end, None)
            if rel.start in members and rel.type == "IN_WORKSPACE":
                workspaces.setdefault(rel.end, None)
        return list(mentioned), list(workspaces)

    def read_scope(self, scope: Scope, key: str) -> Subgraph:
        own = self._own(scope, key)
        mentioned, workspaces = self._context(own)
        ids = list(dict.fromkeys([*own, *mentioned, *workspaces]))
        members = set(ids)
        nodes = [
            GraphNode(i, tuple(sorted(self.nodes[i].labels)), dict(self.nodes[i].props))
            for i in ids
        ]
        relationships = [
            GraphRelationship(rel_id, rel.type, rel.start, rel.end, dict(rel.props))
            for rel_id, rel in self.rels.items()
            if rel.start in members and rel.end in members
        ]
        episode_ids = [
            str(self.nodes[i].props["event_id"]) for i in own if "Episode" in self.nodes[i].labels
        ]
        return Subgraph(nodes=nodes, relationships=relationships, episode_ids=episode_ids)

    def delete_scope(self, scope: Scope, key: str) -> ScopeDeletion:
        prop = EPISODE_SCOPE_PROPERTY[scope]
        forgotten = [
            n.props["event_id"]
            for n in self.nodes.values()
            if "Episode" in n.labels and n.props.get(prop) == key
        ]
        own = self._own(scope, key)
        members = set(own)
        mentioned, workspaces = self._context(own)
        neighbours = [i for i in mentioned if i not in members]
        touched = set(own) | set(neighbours)
        superseded = {
            r.end for r in self.rels.values() if r.type == "SUPERSEDES" and r.start in touched
        }
        directives = {
            node_id: (label, self.nodes[node_id].props["uid"])
            for node_id in touched | superseded
            if node_id in self.nodes
            for label in RECALLABLE_ENTITY_TYPES & self.nodes[node_id].labels
        }
        result = ScopeDeletion(event_ids=forgotten)
        if forgotten:
            result.entities_pruned = self._prune(neighbours, set(forgotten))
        for node_id in own:
            result.nodes_deleted += self._detach_delete(node_id)
        for node_id in superseded:
            node = self.nodes.get(node_id)
            incoming = any(r.type == "SUPERSEDES" and r.end == node_id for r in self.rels.values())
            superseded_now = node is not None and node.props.get("status") == "Superseded"
            if node is not None and superseded_now and "Decision" in node.labels and not incoming:
                node.props["status"] = "Active"
                node.props.pop("invalid_at", None)
        for node_id in workspaces:
            in_use = any(r.type == "IN_WORKSPACE" and r.end == node_id for r in self.rels.values())
            if node_id in self.nodes and not in_use:
                result.nodes_deleted += self._detach_delete(node_id)
        for _, (label, uid) in sorted(directives.items(), key=lambda item: item[1]):
            alive = self._keys.get(("uid", uid))
            memory = directive_memory(label, self._directive_row(alive)) if alive else None
            if memory is None:
                result.removed_memory_ids.append(uid)
            else:
                result.memories.append(memory)
        return result

    def _prune(self, neighbours: list[str], forgotten: set[str]) -> int:
        members = set(neighbours)
        for rel_id, rel in list(self.rels.items()):
            ids = rel.props.get("episode_ids") or []
            if (rel.start in members or rel.end in members) and set(ids) & forgotten:
                after = [x for x in ids if x not in forgotten]
                if ids[0] in forgotten:
                    rel.props["statement"] = ""
                rel.props["episode_ids"] = after
                if not after:
                    self._delete_rel(rel_id)
        pruned = 0
        for node_id in neighbours:
            props = self.nodes[node_id].props
            stating = sorted(
                (self.nodes[self._keys[("Episode", x)]].props["occurred_at"], x)
                for x in self._stating(node_id)
            )
            kept = [x for _, x in stating if x not in forgotten]
            if len(kept) == len(stating):
                continue
            if props.get("first_episode_id") in forgotten:
                props.update(summary="", aliases=[])
                if kept:
                    props["first_episode_id"] = kept[0]
            props["mentions"] = len(kept)
            if not kept:
                pruned += self._detach_delete(node_id)
        return pruned

    def _delete_rel(self, rel_id: str) -> None:
        rel = self.rels.pop(rel_id)
        self._rel_keys.pop((rel.start, rel.type, rel.end), None)

    def _detach_delete(self, node_id: str) -> int:
        node = self.nodes.pop(node_id, None)
        if node is None:
            return 0
        for rel_id, rel in list(self.rels.items()):
            if node_id in (rel.start, rel.end):
                self._delete_rel(rel_id)
        for key, value in list(self._keys.items()):
            if value == node_id:
                del self._keys[key]
        return 1
