"""Memory vectors stored in the graph, beside the turns they were made from.

The ingest workers embed each turn once and store its vector on the ``Episode`` node
(``embedding`` a list of floats, ``embedding_model`` the model that made it,
``embedding_dim`` its length); a recall replica bootstraps those of its own model
instead of embedding every turn again, and ``turngraph embeddings rebuild`` fills in the
turns whose vector is missing or of another model. Plain Cypher that Neo4j 5 and the
embedded ArcadeDB both run; on Neo4j a vector index over ``embedding`` is one of the
Neo4j-only statements (``neo4j_only.py``), for people searching in Browser: recall never
queries the graph for vectors at search time.

Only turns are stored here: decisions, directives and distilled memories are few, and a
replica embeds them itself (they travel on the change stream with their vector).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import neo4j

from schemas.changes import MemoryRecord
from workers.embeddings.texts import speaker_text
from workers.graph.errors import graph_errors
from workers.graph.recallable import EPISODES_BY_ID, episode_memory
from workers.graph.retry import run_write

PAGE_SIZE = 2_000
"""Vectors (or turns to embed) read per round trip."""

SAVE_VECTORS = """
UNWIND $rows AS r
MATCH (e:Episode {event_id: r.id})
SET e.embedding = r.vector, e.embedding_model = $model, e.embedding_dim = size(r.vector)
"""

PREVIOUS_TURNS = """
UNWIND $ids AS id
MATCH (p:Episode)-[:NEXT]->(e:Episode {event_id: id})
RETURN id, p.content AS content, p.speaker AS speaker
"""

VECTORS_PAGE = """
MATCH (e:Episode) WHERE e.event_id > $after AND e.embedding_model = $model
WITH e ORDER BY e.event_id LIMIT $limit
RETURN e.event_id AS event_id, e.embedding AS embedding
"""

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

    def __init__(self, driver: neo4j.Driver, database: str | None) -> None:
        self.driver = driver
        self.database = database

    def save(self, model: str, vectors: Mapping[str, Sequence[float]]) -> None:
        """Store each turn's vector (by ``event_id``) with the model that made it."""
        if not vectors:
            return
        rows = [{"id": key, "vector": [float(x) for x in value]} for key, value in vectors.items()]

        def work(tx: neo4j.ManagedTransaction) -> None:
            tx.run(SAVE_VECTORS, rows=rows, model=model).consume()

        run_write(self.driver, self.database, work, action="store turn vectors")

    def previous_texts(self, event_ids: Sequence[str]) -> dict[str, str]:
        """The previous turn of each given turn, as :func:`speaker_text` (where there is one)."""
        if not event_ids:
            return {}
        records = self._read(PREVIOUS_TURNS, "read previous turns", ids=list(event_ids))
        return {r["id"]: speaker_text(r["content"], r["speaker"]) for r in records}

    def stored(self, model: str) -> Iterator[tuple[str, list[float]]]:
        """Every stored turn vector made by ``model``: ``(event_id, vector)``."""
        after = ""
        while True:
            records = self._read(
                VECTORS_PAGE, "read turn vectors", after=after, limit=PAGE_SIZE, model=model
            )
            for record in records:
                if record["embedding"]:
                    yield record["event_id"], list(record["embedding"])
            if len(records) < PAGE_SIZE:
                return
            after = records[-1]["event_id"]

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
