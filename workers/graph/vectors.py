"""Memory vectors stored in the graph, beside the turns they were made from.

Ingest embeds each turn once and stores ``embedding_f32`` (float32, little-endian,
base64: one string over Bolt, not a value per component), ``embedding_model`` and
``embedding_dim`` on its ``Episode``; a recall replica bootstraps those of its model, and
``turngraph embeddings rebuild`` fills in the missing ones. On Neo4j the vector is also a
list (``embedding``) for Browser's vector index. Only turns: other memories are few and
travel on the change stream with their vector. docs/graph-model.md.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator, Mapping, Sequence

import neo4j
import numpy as np
import numpy.typing as npt

from turngraph.schemas.changes import MemoryRecord
from turngraph.schemas.shards import WorkspaceFilter
from turngraph.workers.embeddings.texts import speaker_text
from turngraph.workers.graph.batch_plan import turn_key
from turngraph.workers.graph.errors import graph_errors
from turngraph.workers.graph.recallable import EPISODE_WORKSPACES, EPISODES_BY_ID, episode_memory
from turngraph.workers.graph.retry import run_write
from turngraph.workers.graph.statements import KEEP_PLAN

__all__ = [
    "PAGE_END", "PAGE_SIZE", "PREVIOUS_TURNS", "SAVE_VECTORS", "SAVE_VECTOR_LISTS", "STALE_PAGE",
    "UNLISTED_PAGE", "VECTORS_PAGE", "VECTOR_PROPERTIES", "WORKSPACE_VECTORS_PAGE",
    "GraphVectors", "pack", "unpack",
]  # fmt: skip

VECTOR_PROPERTIES = frozenset({"embedding", "embedding_f32"})
"""The vector itself (not for people to read: views leave it out)."""

PAGE_SIZE = 2_000
"""Vectors (or turns to embed) read per round trip."""

SAVE_VECTORS = """
UNWIND $rows AS r
MATCH (e:Episode {event_id: r.id})
SET e.embedding_f32 = r.packed, e.embedding_model = $model, e.embedding_dim = r.dim
"""

SAVE_VECTOR_LISTS = """
UNWIND $rows AS r
MATCH (e:Episode {event_id: r.id})
SET e.embedding_f32 = r.packed, e.embedding_model = $model, e.embedding_dim = r.dim
WITH e, r
CALL db.create.setNodeVectorProperty(e, 'embedding', r.vector)
"""
"""Neo4j only (where the vector index reads the list): :data:`SAVE_VECTORS` and the list
in one statement; the packed form is what recall reads. The list is stored through
Neo4j's procedure for vector properties, as 32-bit floats (the model's own precision):
half the bytes a list of Bolt's 64-bit floats takes, written, logged and read back for the
vector index in every commit."""

PREVIOUS_TURNS = """
UNWIND $rows AS r
MATCH (p:Episode {turn_key: r.key})
RETURN r.id AS id, p.content AS content, p.speaker AS speaker
"""
"""By the previous turn's indexed ``turn_key`` (a ``NEXT`` pattern from the turn was
planned as a scan on the embedded engine: 1.5 s for 50 turns)."""


def _vectors_page(condition: str = "") -> str:
    return (
        "MATCH (e:Episode) WHERE "
        + (f"{condition} AND " if condition else "")
        + """e.event_id > $after AND e.embedding_model = $model
WITH e ORDER BY e.event_id LIMIT $limit
RETURN e.event_id AS event_id, e.embedding_f32 AS packed
"""
    )


VECTORS_PAGE = _vectors_page()
UNLISTED_PAGE = _vectors_page("e.embedding IS NULL")
"""Turns whose vector has no list yet (stored while Neo4j's vector index was off)."""
WORKSPACE_VECTORS_PAGE = _vectors_page("e.workspace = $workspace")

STALE_PAGE = """
MATCH (e:Episode) WHERE e.event_id > $after
WITH e ORDER BY e.event_id LIMIT $limit
WHERE e.embedding_model IS NULL OR e.embedding_model <> $model
RETURN e.event_id AS event_id
"""
"""One page of turns (in ``event_id`` order after ``$after``) whose vector is missing or
of another model; ``last`` tells where the next page starts (a page may be empty)."""

PAGE_END = """
MATCH (e:Episode) WHERE e.event_id > $after
WITH e ORDER BY e.event_id LIMIT $limit
RETURN max(e.event_id) AS last, count(e) AS n
"""


class GraphVectors:
    """Read and write turn vectors over one Bolt driver (the caller's)."""

    def __init__(self, driver: neo4j.Driver, database: str | None, *, lists: bool = False) -> None:
        """``lists``: also store the vector as a list of floats (on Neo4j, for its index)."""
        self.driver = driver
        self.database = database
        self.lists = lists

    def save(self, model: str, vectors: Mapping[str, Sequence[float]]) -> None:
        """Store each turn's vector (by ``event_id``) with the model that made it."""
        if not vectors:
            return
        rows = [
            {"id": key, "packed": pack(value), "dim": len(value)}
            | ({"vector": [float(x) for x in value]} if self.lists else {})
            for key, value in vectors.items()
        ]
        # the lists are Neo4j's: there the plan (a unique index seek) is kept
        statement = KEEP_PLAN + SAVE_VECTOR_LISTS if self.lists else SAVE_VECTORS

        def work(tx: neo4j.ManagedTransaction) -> None:
            tx.run(statement, rows=rows, model=model).consume()

        run_write(self.driver, self.database, work, action="store turn vectors")

    def previous_texts(self, turns: Sequence[tuple[str, str, int]]) -> dict[str, str]:
        """The previous turn of each ``(event_id, session_id, turn_index)``, as
        :func:`speaker_text` (where there is one), by ``event_id``."""
        if not turns:
            return {}
        rows = [{"id": key, "key": turn_key(session, index - 1)} for key, session, index in turns]
        records = self._read(PREVIOUS_TURNS, "read previous turns", rows=rows)
        return {r["id"]: speaker_text(r["content"], r["speaker"]) for r in records}

    def stored(
        self, model: str, workspaces: WorkspaceFilter | None = None
    ) -> Iterator[tuple[str, npt.NDArray[np.float32]]]:
        """Every stored turn vector made by ``model``: ``(event_id, vector)``; with
        ``workspaces``, only of the turns in the workspaces it accepts."""
        if workspaces is None:
            yield from self._stored(VECTORS_PAGE, model)
            return
        found = self._read(EPISODE_WORKSPACES, "read workspaces")
        for workspace in sorted(str(r["workspace"]) for r in found):
            if workspaces(workspace):
                yield from self._stored(WORKSPACE_VECTORS_PAGE, model, workspace)

    def _stored(
        self, query: str, model: str, workspace: str | None = None
    ) -> Iterator[tuple[str, npt.NDArray[np.float32]]]:
        after = ""
        while True:
            records = self._read(
                query,
                "read turn vectors",
                after=after,
                limit=PAGE_SIZE,
                model=model,
                workspace=workspace,
            )
            for record in records:
                vector = unpack(record["packed"])
                if vector is not None:
                    yield record["event_id"], vector
            if len(records) < PAGE_SIZE:
                return
            after = records[-1]["event_id"]

    def unlisted(self, model: str) -> Iterator[dict[str, list[float]]]:
        """Pages of the vectors made by ``model`` that are stored without their list (the
        vector index was off when they were written): ``save`` them to list them."""
        page: dict[str, list[float]] = {}
        for event_id, vector in self._stored(UNLISTED_PAGE, model):
            page[event_id] = vector.tolist()
            if len(page) == PAGE_SIZE:
                yield page
                page = {}
        if page:
            yield page

    def stale(self, model: str) -> Iterator[list[MemoryRecord]]:
        """Pages of turns whose vector is missing or was made by another model."""
        after = ""
        while True:
            [end] = self._read(PAGE_END, "page turns", after=after, limit=PAGE_SIZE)
            if not end["n"]:
                return
            ids = [
                r["event_id"]
                for r in self._read(
                    STALE_PAGE, "find stale vectors", after=after, limit=PAGE_SIZE, model=model
                )
            ]
            if ids:
                yield [episode_memory(r) for r in self._read(EPISODES_BY_ID, "read turns", ids=ids)]
            after = end["last"]

    def _read(self, query: str, action: str, **params: object) -> list[neo4j.Record]:
        with graph_errors(action):
            records, _, _ = self.driver.execute_query(
                query, params, database_=self.database, routing_=neo4j.RoutingControl.READ
            )
        return records


def pack(vector: Sequence[float]) -> str:
    """The stored form: float32 little-endian components, base64."""
    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")


def unpack(packed: object) -> npt.NDArray[np.float32] | None:
    """A stored vector back, or ``None`` when the property is missing or malformed."""
    if not isinstance(packed, str) or not packed:
        return None
    try:
        raw = base64.b64decode(packed, validate=True)
    except (binascii.Error, ValueError):
        return None
    if not raw or len(raw) % 4:
        return None
    return np.frombuffer(raw, dtype="<f4").astype(np.float32)
