"""Postings columns and BM25 arithmetic for one index partition (see ``index``)."""

from __future__ import annotations

import math
from array import array
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from operator import itemgetter

from turngraph.workers.recall.memory import Memory
from turngraph.workers.recall.ranking import Ranking

__all__ = [
    "Hit", "Partition", "PartitionKey", "Postings", "among_said", "bm25_weight", "idf",
    "partition_of", "restated_key",
]  # fmt: skip

PartitionKey = tuple[str, str]

Hit = tuple[int, float]
"""An internal memory id and its score."""


def partition_of(memory: Memory) -> PartitionKey:
    """User-level memories live in the user's partition; everything else in its workspace."""
    if memory.scope == "user" or not memory.workspace:
        return ("user", memory.user or "")
    return ("workspace", memory.workspace)


def among_said(said: list[Hit], restated: list[Hit], limit: int) -> list[Hit]:
    """The ``limit`` best hits of what was said, with the restatements scoring among them
    merged in (all of them when fewer than ``limit`` were said), best first: a
    restatement takes no candidate place from what was said (``Partition``)."""
    bar = said[-1][1] if len(said) == limit else 0.0
    among = [hit for hit in restated if hit[1] >= bar]
    return sorted(said + among, key=itemgetter(1), reverse=True)


def restated_key(pkey: PartitionKey) -> PartitionKey:
    """The vector partition of a partition's restatements (``Partition``)."""
    return (f"{pkey[0]}:restated", pkey[1])


def bm25_weight(tf: int, length: int, avgdl: float, ranking: Ranking) -> float:
    """The length-normalised term-frequency part of BM25 (idf is applied at query time)."""
    k1, b = ranking.bm25_k1, ranking.bm25_b
    return tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / max(avgdl, 1.0)))


def idf(n_docs: int, df: int) -> float:
    return math.log(1 + (n_docs - df + 0.5) / (df + 0.5))


class Postings:
    """One term's postings: ascending internal ids, term frequencies, BM25 weights.

    The one writer appends to ``ids``, then ``tfs``, then ``weights`` (``append``);
    a lock-free reader may run between two of those appends, so it reads only the first
    :meth:`ready` entries of each column (a reader zipping whole columns once saw ``ids``
    one longer than ``weights``)."""

    __slots__ = ("ids", "tfs", "weights")

    def __init__(self) -> None:
        self.ids = array("i")
        self.tfs = array("B")
        self.weights = array("f")

    def append(self, internal: int, tf: int, weight: float) -> None:
        self.ids.append(internal)
        self.tfs.append(tf)
        self.weights.append(weight)

    def ready(self) -> int:
        """Entries complete in every column (the last column written is the shortest)."""
        return len(self.weights)


@dataclass(slots=True)
class Partition:
    """The postings of one workspace or one user; removed ids linger until a rebuild.

    What was said (turns, facts, what a person promoted: ``Memory.in_statistics``) and
    what restates it (summaries, recaps, decision records, the system's ownership
    contexts) are held apart: ``postings`` and ``entities`` are what was said, and the
    statistics (``n_docs``, ``total_len``, document frequencies) are theirs alone;
    ``restated_postings`` and ``restated_entities`` hold the restatements, weighted by
    the same statistics. So a search ranks what was said exactly as it would with no
    restatement in the index (the walk's budget, the entity postings' newest places, the
    co-mentions), and places each restatement among it by its own score
    (docs/recall.md, "what was said ranks as if nothing were restated")."""

    postings: dict[str, Postings] = field(default_factory=dict)
    entities: dict[str, array] = field(default_factory=dict)
    restated_postings: dict[str, Postings] = field(default_factory=dict)
    restated_entities: dict[str, array] = field(default_factory=dict)
    n_docs: int = 0
    total_len: int = 0
    weights_avgdl: float = 0.0
    live_postings: int = 0
    dead_postings: int = 0
    speakers: Counter[str] = field(default_factory=Counter)
    """Live memories per word of their speakers' names (``speakers.name_words``)."""
    restated_docs: int = 0
    """Live restatements: not in ``n_docs`` or ``total_len``."""

    def doc_frequency(self, postings: Postings) -> int:
        """Memories of the statistics holding a term, from its (stated) postings (removed
        ones count until the partition is compacted)."""
        return postings.ready()

    def postings_of(self, restated: bool) -> dict[str, Postings]:
        return self.restated_postings if restated else self.postings

    def entities_of(self, restated: bool) -> dict[str, array]:
        return self.restated_entities if restated else self.entities

    @property
    def avgdl(self) -> float:
        return self.total_len / self.n_docs if self.n_docs else 1.0

    def rebuild(self, length_of: Callable[[int], int | None], ranking: Ranking) -> None:
        """Drop removed ids (``length_of`` returns None for them) and recompute weights
        for the current mean length.

        Each term's columns are built aside and swapped in with one assignment, so a
        reader sees either the old or the new postings, never a half-built one.
        """
        avgdl = self.avgdl
        for columns in (self.postings, self.restated_postings):
            for term, old in list(columns.items()):
                new = Postings()
                for internal, tf in zip(old.ids, old.tfs, strict=True):
                    length = length_of(internal)
                    if length is not None:
                        new.append(internal, tf, bm25_weight(tf, length, avgdl, ranking))
                if new.ids:
                    columns[term] = new
                else:
                    del columns[term]
        for entities in (self.entities, self.restated_entities):
            for key, ents in list(entities.items()):
                live = array("i", (i for i in ents if length_of(i) is not None))
                if live:
                    entities[key] = live
                else:
                    del entities[key]
        self.weights_avgdl = avgdl
        self.dead_postings = 0
