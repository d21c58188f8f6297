"""One set of assertions for every GraphStore: the Bolt store on the real server and the
in-memory fake kept in the package. The last test writes the same batches to both and
compares what they hold, so the fake stays a faithful stand-in for the pipeline tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import turngraph.schemas.ontology as ontology
from tests.support.conversation import CONVERSATION, VOLATILE
from tests.support.memory_graph import InMemoryGraphStore
from tests.support.neo4j_tier import neo4j_param
from tests.support.turns import turn
from turngraph.producers.redaction import redact_event
from turngraph.schemas.scopes import Scope
from turngraph.schemas.turn_event import TurnEvent
from turngraph.workers.extraction.offline import OfflineExtractor
from turngraph.workers.graph.store import Batch, GraphStore
from turngraph.workers.graph.subgraph import Subgraph

LATE_DECISION = turn(
    "decision: retry uploads forever in src/upload.py", 7, session="s5", minutes=30
)
"""On the subject of CONVERSATION's decisions, older than both, arriving last."""


def batch_of(events: list[TurnEvent]) -> Batch:
    clean = [redact_event(event) for event in events]
    return list(zip(clean, OfflineExtractor(ontology.ONTOLOGY).extract(clean), strict=True))


def memory_store() -> InMemoryGraphStore:
    return InMemoryGraphStore(
        entity_labels=ontology.labels(), relation_types=ontology.relationship_types()
    )


def bolt_store(request: pytest.FixtureRequest) -> GraphStore:
    from turngraph.app import build_graph_store
    from turngraph.workers.graph.schema import ensure_schema

    clients = request.getfixturevalue("clients")
    ensure_schema(clients.graph, clients.graph_database, ontology.labels())
    return build_graph_store(clients)


@pytest.fixture(
    params=[
        "memory",
        pytest.param("arcadedb", marks=pytest.mark.integration),
        neo4j_param(),
    ]
)
def backend(request: pytest.FixtureRequest) -> str:
    """The in-memory fake, or the Bolt store on the embedded ArcadeDB or a real Neo4j."""
    return str(request.param)


@pytest.fixture
def graph_engine(backend: str) -> str:
    """The engine behind ``clients`` for the Bolt backends (conftest's ``settings``)."""
    return "neo4j" if backend == "neo4j" else "arcadedb"


@pytest.fixture
def store(backend: str, request: pytest.FixtureRequest) -> Iterator[GraphStore]:
    yield memory_store() if backend == "memory" else bolt_store(request)


def memories(store: GraphStore) -> dict[str, Any]:
    return {m.id: m for m in store.recallable_memories()}


def test_a_batch_is_written_once_however_often_it_arrives(store: GraphStore) -> None:
    batch = batch_of(CONVERSATION)
    first = store.write(batch)
    assert first.episodes == len(CONVERSATION) and first.entities > 0
    assert {m.id for m in first.memories} >= {e.event_id for e in CONVERSATION}
    before = memories(store)
    again = store.write(batch)
    assert memories(store) == before
    assert again.superseded == []  # nothing left to supersede
    upload = [m for m in before.values() if m.kind == "fact"]
    assert all(len(m.source_event_ids) == 1 for m in upload)


def test_a_bootstrap_read_for_some_workspaces_returns_only_their_episodes(
    store: GraphStore,
) -> None:
    store.write(batch_of(CONVERSATION))
    everything = list(store.recallable_memories())
    only_w2 = list(store.recallable_memories(lambda workspace: workspace == "w2"))
    episodes = [m for m in only_w2 if m.kind == "episode"]
    assert episodes and {m.workspace for m in episodes} == {"w2"}
    assert sorted(m.id for m in episodes) == sorted(
        m.id for m in everything if m.kind == "episode" and m.workspace == "w2"
    )
    others = sorted(m.id for m in everything if m.kind != "episode")
    assert others and sorted(m.id for m in only_w2 if m.kind != "episode") == others


def test_mentions_are_counted_once_per_turn(store: GraphStore) -> None:
    store.write(batch_of(CONVERSATION[:3]))
    store.write(batch_of(CONVERSATION[:3]))
    subgraph = store.read_scope(Scope.SESSION, "s1")
    upload = [n for n in subgraph.nodes if n.properties.get("name") == "src/upload.py"]
    assert len(upload) == 1
    assert upload[0].properties["mentions"] == 3
    assert upload[0].properties["first_episode_id"] == CONVERSATION[0].event_id
    assert "episode_ids" not in upload[0].properties  # the MENTIONS are its provenance
    event_ids = {n.element_id: n.properties.get("event_id") for n in subgraph.nodes}
    mentioning = [
        event_ids[r.start]
        for r in subgraph.relationships
        if r.type == "MENTIONS" and r.end == upload[0].element_id
    ]
    assert sorted(mentioning) == sorted(e.event_id for e in CONVERSATION[:3])


def test_a_newer_decision_supersedes_and_a_late_one_arrives_superseded(store: GraphStore) -> None:
    report = store.write(batch_of(CONVERSATION))
    assert len(report.superseded) == 1
    late = store.write(batch_of([LATE_DECISION]))
    assert len(late.superseded) == 1
    statuses = sorted(m.status for m in memories(store).values() if m.kind == "fact")
    assert statuses == ["Active", "Superseded", "Superseded"]
    [late_memory] = [m for m in late.memories if m.kind == "fact"]
    assert late_memory.status == "Superseded"


def test_read_scope_holds_the_scope_and_its_context(store: GraphStore) -> None:
    store.write(batch_of(CONVERSATION))
    subgraph = store.read_scope(Scope.SESSION, "s1")
    assert sorted(subgraph.episode_ids) == sorted(
        e.event_id for e in CONVERSATION if e.session_id == "s1"
    )
    labels = {label for node in subgraph.nodes for label in node.labels}
    assert {"Session", "Episode", "Workspace", "Decision"} <= labels
    ids = {node.element_id for node in subgraph.nodes}
    assert all(r.start in ids and r.end in ids for r in subgraph.relationships)
    assert {"IN_SESSION", "MENTIONS", "NEXT"} <= {r.type for r in subgraph.relationships}


def test_deleting_a_scope_leaves_the_rest_as_if_it_never_was(store: GraphStore) -> None:
    store.write(batch_of(CONVERSATION))
    s2 = {e.event_id for e in CONVERSATION if e.session_id == "s2"}
    deletion = store.delete_scope(Scope.SESSION, "s2")
    assert sorted(deletion.event_ids) == sorted(s2) and deletion.nodes_deleted >= len(s2) + 1
    left = memories(store)
    assert not any(set(m.source_event_ids) & s2 for m in left.values())
    assert [m.status for m in left.values() if m.kind == "fact"] == ["Active"]
    assert store.read_scope(Scope.SESSION, "s2").nodes == []
    assert store.delete_scope(Scope.SESSION, "s2").nodes_deleted == 0  # idempotent


def _view(subgraph: Subgraph) -> tuple[set[Any], set[Any]]:
    def identity(element_id: str) -> str:
        node = by_id[element_id]
        props = node.properties
        key = props.get("uid") or props.get("event_id") or props.get("key")
        return f"{':'.join(node.labels)}/{key}"

    def stable(props: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(
            sorted(
                (k, tuple(v) if isinstance(v, list) else v)
                for k, v in props.items()
                if k not in VOLATILE
            )
        )

    by_id = {node.element_id: node for node in subgraph.nodes}
    nodes = {(identity(n.element_id), stable(n.properties)) for n in subgraph.nodes}
    rels = {
        (identity(r.start), r.type, identity(r.end), stable(r.properties))
        for r in subgraph.relationships
    }
    return nodes, rels


@pytest.mark.integration
@pytest.mark.parametrize("backend", ["arcadedb", neo4j_param()])
def test_the_fake_holds_what_the_bolt_store_holds(
    backend: str, request: pytest.FixtureRequest
) -> None:
    bolt, fake = bolt_store(request), memory_store()
    steps: list[tuple[str, Any]] = [
        ("write", CONVERSATION[:3]),
        ("write", CONVERSATION[3:]),
        ("write", [LATE_DECISION, CONVERSATION[0]]),
        ("delete", (Scope.SESSION, "s2")),
        ("write", CONVERSATION[3:4]),
    ]
    for action, arg in steps:
        if action == "write":
            batch = batch_of(arg)
            a, b = bolt.write(batch), fake.write(batch)
            assert (a.episodes, a.entities, a.facts, a.dropped) == (
                b.episodes,
                b.entities,
                b.facts,
                b.dropped,
            )
            assert sorted(a.superseded) == sorted(b.superseded)
            assert sorted(a.memories, key=lambda m: m.id) == sorted(b.memories, key=lambda m: m.id)
        else:
            x, y = bolt.delete_scope(*arg), fake.delete_scope(*arg)
            assert (x.nodes_deleted, x.entities_pruned, sorted(x.event_ids)) == (
                y.nodes_deleted,
                y.entities_pruned,
                sorted(y.event_ids),
            )
        assert list(bolt.recallable_memories()) == list(fake.recallable_memories())
        w1 = lambda workspace: workspace == "w1"  # noqa: E731
        assert list(bolt.recallable_memories(w1)) == list(fake.recallable_memories(w1))
    for scope, key in [(Scope.WORKSPACE, "w1"), (Scope.WORKSPACE, "w2"), (Scope.USER, "u1")]:
        assert _view(bolt.read_scope(scope, key)) == _view(fake.read_scope(scope, key))
