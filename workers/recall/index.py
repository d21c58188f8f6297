"""The recall worker's own in-memory index: BM25 postings and entity postings per scope.

Memories are partitioned by where they are visible (one partition per workspace, one per
user), so a query touches only the partitions of its scopes. Postings are ``array``
columns appended in insertion order (ids ascend; the newest sit at the end). One writer
(the change-stream consumer) serialises on a lock; readers take none (single dict
lookups and slice copies) and skip ids that vanished meanwhile. docs/recall.md
("The index").
"""

from __future__ import annotations

import threading
from array import array
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import cast

from turngraph.schemas.changes import (
    ChangeEntry,
    MemoryRemoval,
    MemoryUpsert,
    ScopeForgotten,
    StatusChange,
)
from turngraph.schemas.scopes import ScopeValue
from turngraph.workers.embeddings.protocol import Embedder
from turngraph.workers.embeddings.texts import embedding_text
from turngraph.workers.recall import bm25, entity_signal
from turngraph.workers.recall.answers import Act, act_of, answer_of
from turngraph.workers.recall.memory import Memory
from turngraph.workers.recall.postings import (
    Hit,
    Partition,
    PartitionKey,
    Postings,
    bm25_weight,
    idf,
    partition_of,
    restated_key,
)
from turngraph.workers.recall.ranking import DEFAULT, Ranking
from turngraph.workers.recall.semantic import EMBED_BATCH, SemanticSignal
from turngraph.workers.recall.speakers import name_words
from turngraph.workers.recall.text import tokenize
from turngraph.workers.recall.vectors import Vector

__all__ = ["Hit", "MemoryIndex", "PartitionKey", "idf", "partition_of"]

SESSION_SCAN_CAP = 2_000
"""Newest memories of a session scored when a query is restricted to that session."""

COMPACT_DEAD_RATIO = 0.25
"""Compact a partition once this share of its postings belongs to removed memories."""

AVGDL_DRIFT = 0.2
"""Recompute a partition's term weights once its mean length moved this much."""


@dataclass(slots=True)
class _Doc:
    memory: Memory
    partition: PartitionKey
    length: int
    n_terms: int
    act: Act = Act.PLAIN
    """What it does in the conversation (``answers.py``), recognised when it is added."""

    @property
    def vector_partition(self) -> PartitionKey:
        """Where its vector is searched: a restatement's apart from what was said, so the
        nearest turns are those of an index without restatements (``restated_key``)."""
        return self.partition if self.memory.in_statistics else restated_key(self.partition)


class MemoryIndex:
    """Add, update, remove and search memories; see the module docstring."""

    def __init__(
        self,
        embedder: Embedder | None = None,
        ranking: Ranking = DEFAULT,
        *,
        ann_min_rows: int | None = None,
    ) -> None:
        self.ranking = ranking
        """How every search of this index ranks (``ranking.py``); fixed for its life, since
        the postings' BM25 weights depend on it."""
        self.semantic = SemanticSignal(embedder, ann_min_rows) if embedder is not None else None
        self._lock = threading.Lock()
        self._next_id = 0
        self._docs: dict[int, _Doc] = {}
        self._restated: set[int] = set()
        """Held memories that are not what was said (``Memory.in_statistics`` false)."""
        self._ids: dict[str, int] = {}
        self._parts: dict[PartitionKey, Partition] = {}
        self._members: dict[tuple[str, str], array] = {}
        self._turns: dict[tuple[str, int], int] = {}

    # -- writing ---------------------------------------------------------------------

    def apply(self, change: ChangeEntry) -> None:
        """Apply one validated change-stream entry."""
        if isinstance(change, MemoryUpsert):
            vector = None
            if self.semantic is not None and change.embedding is not None:
                vector = self.semantic.usable(change.embedding.model, change.embedding.vector)
            self.add(Memory.from_record(change.memory), vector)
        elif isinstance(change, MemoryRemoval):
            self.remove(change.memory_id)
        elif isinstance(change, StatusChange):
            self.set_status(change.memory_id, change.status)
        elif isinstance(change, ScopeForgotten):
            self.forget(cast(ScopeValue, change.scope.value), change.scope_key)

    def add(self, memory: Memory, vector: Vector | None = None) -> None:
        """Insert or replace ``memory`` (same id: re-indexed only if its text changed).
        ``vector`` is its embedding by this index's model when the writer sent one (it
        replaces the one held); without it, a new or changed memory is embedded here."""
        internal = self._add_lexical(memory)
        if self.semantic is None:
            return
        if vector is not None:
            with self._lock:
                key = self._ids.get(memory.id)
                doc = self._docs.get(key) if key is not None else None
                if key is not None and doc is not None:
                    self.semantic.store(doc.vector_partition, key, vector)
                    self.semantic.counters.received += 1
        elif internal is not None:
            self._embed([internal])

    def add_many(
        self, memories: Iterable[Memory], vectors: Mapping[str, Vector] | None = None
    ) -> int:
        """Bootstrap: index everything, take the stored ``vectors`` (by memory id, this
        index's model), then embed the rest in batches (a turn's neighbours are then
        known, whatever order the memories came in); returns how many."""
        count = 0
        fresh: list[int] = []
        for memory in memories:
            internal = self._add_lexical(memory)
            if internal is not None:
                fresh.append(internal)
            count += 1
        if self.semantic is not None:
            self.semantic.begin_bulk()
            try:
                self._take_or_embed(fresh, vectors or {})
            finally:
                with self._lock:
                    self.semantic.end_bulk()
        return count

    def _take_or_embed(self, fresh: list[int], stored: Mapping[str, Vector]) -> None:
        """Store the stored vectors of ``fresh`` memories; embed the others in batches."""
        assert self.semantic is not None
        missing: list[int] = []
        with self._lock:
            for internal in fresh:
                doc = self._docs.get(internal)
                vector = stored.get(doc.memory.id) if doc is not None else None
                if doc is None or vector is None:
                    missing.append(internal)
                else:
                    self.semantic.store(doc.vector_partition, internal, vector)
                    self.semantic.counters.received += 1
        for start in range(0, len(missing), EMBED_BATCH):
            self._embed(missing[start : start + EMBED_BATCH])

    def _add_lexical(self, memory: Memory) -> int | None:
        """The new internal id, or ``None`` when only status/topic/timestamps changed."""
        with self._lock:
            old = self._ids.get(memory.id)
            if old is not None:
                doc = self._docs[old]
                same = doc.memory.searchable_text == memory.searchable_text
                same = same and doc.memory.entities == memory.entities
                same = same and doc.memory.in_statistics == memory.in_statistics
                if same and partition_of(doc.memory) == partition_of(memory):
                    doc.memory = memory  # no re-index, the vector stays valid
                    doc.act = act_of(memory)
                    return None
                self._remove_locked(old)
            return self._insert_locked(memory)

    def _embed(self, internals: list[int]) -> None:
        """Embed outside the lock (only the one writer gets here), store under it."""
        assert self.semantic is not None
        texts = [self.embedding_text(internal) for internal in internals]
        vectors = self.semantic.embed_texts(texts)
        with self._lock:
            for internal, vector in zip(internals, vectors, strict=True):
                doc = self._docs.get(internal)
                if doc is not None:
                    self.semantic.store(doc.vector_partition, internal, vector)

    def embedding_text(self, internal: int) -> str:
        """What a memory's vector is made from: ``speaker: text``, after the previous
        turn of its session when there is one (a reply means little on its own)."""
        doc = self._docs.get(internal)
        if doc is None:
            return ""
        memory = doc.memory
        before = None
        if memory.session_id is not None and memory.turn_index:
            previous = self._turns.get((memory.session_id, memory.turn_index - 1))
            before = self._docs.get(previous) if previous is not None else None
        return embedding_text(
            memory.searchable_text, before.memory.searchable_text if before else None
        )

    def set_status(self, memory_id: str, status: str) -> bool:
        """Supersede (or restore) a memory without re-indexing it."""
        with self._lock:
            internal = self._ids.get(memory_id)
            if internal is None:
                return False
            doc = self._docs[internal]
            doc.memory = doc.memory.with_status(status)
            doc.act = act_of(doc.memory)
            return True

    def remove(self, memory_id: str) -> bool:
        with self._lock:
            internal = self._ids.get(memory_id)
            if internal is None:
                return False
            self._remove_locked(internal)
            return True

    def forget(self, scope: ScopeValue, key: str) -> int:
        """Remove every memory of a session, workspace or user; returns how many."""
        with self._lock:
            members = self._members.pop((scope, key), array("i"))
            removed = 0
            for internal in members:
                if internal in self._docs:
                    self._remove_locked(internal)
                    removed += 1
            if scope == "workspace":
                self._parts.pop(("workspace", key), None)
            if scope == "user":
                self._parts.pop(("user", key), None)
            return removed

    def _insert_locked(self, memory: Memory) -> int:
        internal = self._next_id
        self._next_id += 1
        counts = Counter(tokenize(memory.searchable_text))
        length = sum(counts.values())
        pkey = partition_of(memory)
        part = self._parts.get(pkey)
        if part is None:
            part = self._parts[pkey] = Partition()
        restated = not memory.in_statistics
        if restated:
            part.restated_docs += 1
            self._restated.add(internal)
        else:
            part.n_docs += 1
            part.total_len += length
        if not part.weights_avgdl:
            part.weights_avgdl = part.avgdl
        avgdl = part.weights_avgdl
        columns = part.postings_of(restated)
        for term, tf in counts.items():
            postings = columns.get(term)
            if postings is None:
                postings = columns[term] = Postings()
            tf = min(tf, 255)
            postings.append(internal, tf, bm25_weight(tf, length, avgdl, self.ranking))
        entities = part.entities_of(restated)
        for key in memory.entities:
            ents = entities.get(key)
            if ents is None:
                ents = entities[key] = array("i")
            ents.append(internal)
        part.live_postings += len(counts)
        part.speakers.update(name_words(memory.extra.get("speaker")))
        self._docs[internal] = _Doc(memory, pkey, length, len(counts), act_of(memory))
        self._ids[memory.id] = internal
        for member_key in _member_keys(memory):
            members = self._members.get(member_key)
            if members is None:
                members = self._members[member_key] = array("i")
            members.append(internal)
        if memory.session_id is not None and memory.turn_index is not None:
            self._turns[(memory.session_id, memory.turn_index)] = internal
        if abs(part.avgdl - avgdl) > AVGDL_DRIFT * avgdl and part.n_docs >= 8:
            self._rebuild_locked(part)
        return internal

    def _remove_locked(self, internal: int) -> None:
        doc = self._docs.pop(internal)
        self._restated.discard(internal)
        if self.semantic is not None:
            self.semantic.remove(internal)
        memory = doc.memory
        if self._ids.get(memory.id) == internal:
            del self._ids[memory.id]
        if memory.session_id is not None and memory.turn_index is not None:
            key = (memory.session_id, memory.turn_index)
            if self._turns.get(key) == internal:
                del self._turns[key]
        part = self._parts.get(doc.partition)
        if part is None:
            return
        if memory.in_statistics:
            part.n_docs -= 1
            part.total_len -= doc.length
        else:
            part.restated_docs -= 1
        part.speakers.subtract(name_words(memory.extra.get("speaker")))
        part.speakers += Counter()  # drop names no live memory has any more
        part.live_postings -= doc.n_terms
        part.dead_postings += doc.n_terms
        if part.dead_postings > COMPACT_DEAD_RATIO * max(part.live_postings, 1):
            self._rebuild_locked(part)

    def _rebuild_locked(self, part: Partition) -> None:
        docs = self._docs
        part.rebuild(lambda internal: d.length if (d := docs.get(internal)) else None, self.ranking)

    # -- reading ---------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._docs)

    def get(self, memory_id: str) -> Memory | None:
        internal = self._ids.get(memory_id)
        doc = self._docs.get(internal) if internal is not None else None
        return doc.memory if doc is not None else None

    def snapshot(self) -> dict[str, Memory]:
        """Every memory held, by id (for comparing replicas)."""
        with self._lock:
            return {doc.memory.id: doc.memory for doc in self._docs.values()}

    def memory(self, internal: int) -> Memory | None:
        doc = self._docs.get(internal)
        return doc.memory if doc is not None else None

    def said(self, internal: int) -> bool:
        """Whether a held memory is what was said (``Memory.in_statistics``), not a
        restatement: two set lookups, where the property costs four calls (a search asks
        it about a hundred times)."""
        return internal in self._docs and internal not in self._restated

    def has_partition(self, pkey: PartitionKey) -> bool:
        return pkey in self._parts

    def doc_frequency(self, pkey: PartitionKey, term: str) -> tuple[int, int]:
        """``(df, n_docs)`` of ``term`` in a partition (df counts removed ids until compaction)."""
        part = self._parts.get(pkey)
        if part is None:
            return 0, 0
        postings = part.postings.get(term)
        return (part.doc_frequency(postings) if postings else 0), part.n_docs

    def speaker_names(self, pkey: PartitionKey, words: Iterable[str]) -> list[str]:
        """Which of ``words`` name a speaker of the partition's memories."""
        part = self._parts.get(pkey)
        return [w for w in words if part is not None and part.speakers.get(w, 0) > 0]

    def known_entities(self, pkey: PartitionKey, candidates: Iterable[str]) -> list[str]:
        """Which of ``candidates`` (entity keys) name an entity of what was said in this
        partition (a restatement's entities are its turns'; an ownership context's are
        not the conversation's)."""
        part = self._parts.get(pkey)
        if part is None:
            return []
        return [key for key in candidates if key in part.entities]

    def lexical(
        self,
        pkey: PartitionKey,
        query: Mapping[str, float],
        *,
        limit: int,
        session_id: str | None = None,
    ) -> list[Hit]:
        """BM25 over one partition, ``query`` mapping term -> weight; best first
        (``bm25.walk``; a session's newest ``SESSION_SCAN_CAP`` memories when restricted)."""
        part = self._parts.get(pkey)
        if part is None or not query:
            return []
        if session_id is not None:
            members = self._members.get(("session", session_id), array("i"))
            return bm25.score_members(part, query, members[-SESSION_SCAN_CAP:], self._docs, limit)
        return bm25.walk(part, query, self._docs, limit, self.ranking)

    def term_scores(
        self, pkey: PartitionKey, query: Mapping[str, float], internals: Iterable[int]
    ) -> dict[int, float]:
        """BM25 of ``query`` for given memories only (binary search, no postings walk)."""
        part = self._parts.get(pkey)
        if part is None:
            return {}
        return dict(bm25.score_members(part, query, list(internals), self._docs, None))

    def entity_hits(
        self,
        pkey: PartitionKey,
        entities: Mapping[str, float],
        *,
        limit: int,
        session_id: str | None = None,
        distilled_share: float = 1.0,
    ) -> list[Hit]:
        """Memories mentioning the given entity keys (``entity_signal.entity_hits``)."""
        part = self._parts.get(pkey)
        if part is None or not entities:
            return []
        return entity_signal.entity_hits(
            part,
            entities,
            self.memory,
            limit=limit,
            session_id=session_id,
            distilled_share=distilled_share,
        )

    def entity_neighbours(self, pkey: PartitionKey, keys: Iterable[str], limit: int) -> list[str]:
        """Entities co-mentioned with ``keys`` (``entity_signal.entity_neighbours``)."""
        part = self._parts.get(pkey)
        if part is None:
            return []
        return entity_signal.entity_neighbours(part, keys, self.memory, limit)

    def session_turn(self, session_id: str, turn_index: int) -> int | None:
        """The internal id of a session's turn (``turn_index`` 0: the turn that opened it)."""
        return self._turns.get((session_id, turn_index))

    def act(self, internal: int) -> Act:
        """What a memory does in the conversation: asks, settles, or neither."""
        doc = self._docs.get(internal)
        return doc.act if doc is not None else Act.PLAIN

    def answer_of(self, internal: int, reach: int) -> int | None:
        """The turn that answers a question turn (``answers.answer_of``), if any."""
        doc = self._docs.get(internal)
        if doc is None:
            return None
        return answer_of(doc.memory, self.session_turn, self.memory, self.act, reach)

    def turn_neighbours(self, internal: int) -> list[int]:
        """The previous and next turn of an episode in its session (the episode chain)."""
        doc = self._docs.get(internal)
        if doc is None or doc.memory.turn_index is None or doc.memory.session_id is None:
            return []
        session, turn = doc.memory.session_id, doc.memory.turn_index
        found = []
        for other in (turn - 1, turn + 1):
            neighbour = self._turns.get((session, other))
            if neighbour is not None:
                found.append(neighbour)
        return found


def _member_keys(memory: Memory) -> list[tuple[str, str]]:
    keys = []
    if memory.session_id:
        keys.append(("session", memory.session_id))
    if memory.workspace:
        keys.append(("workspace", memory.workspace))
    if memory.user:
        keys.append(("user", memory.user))
    return keys
