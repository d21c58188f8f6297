"""The synthetic corpus of ``bench.recall_shards``: turn-like memories (Zipf-distributed
words of the retrieval dataset's turns plus rare identifiers, the ``bench.recall_index``
generator) spread evenly over many workspaces, yielded the way a graph read would be."""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

from bench.retrieval_data import DEFAULT_OUT, load
from turngraph.schemas.changes import MemoryKind, MemoryRecord
from turngraph.schemas.scopes import Scope
from turngraph.schemas.shards import WorkspaceFilter

SEED = 11
SESSIONS_PER_WORKSPACE = 20
WORDS = (12, 60)


def vocabulary() -> list[str]:
    turns, _, _ = load(DEFAULT_OUT)
    counts: dict[str, int] = {}
    for turn in turns:
        for word in turn.content.lower().split():
            word = word.strip(".,!?;:()\"'")
            if word.isalpha():
                counts[word] = counts.get(word, 0) + 1
    return sorted(counts, key=counts.__getitem__, reverse=True)


class SyntheticSource:
    """The records of ``memories`` turns over ``workspaces`` workspaces, generated the
    same way in every process (seeded per workspace); like the graph store, only the
    workspaces a sharded replica's filter accepts are read."""

    def __init__(self, memories: int, workspaces: int) -> None:
        self.memories, self.workspaces = memories, workspaces

    def recallable_memories(
        self, workspaces: WorkspaceFilter | None = None
    ) -> Iterator[MemoryRecord]:
        words = vocabulary()
        weights = [1 / (rank + 1) for rank in range(len(words))]
        cumulative = list(_accumulate(weights))
        now = datetime.now(UTC)
        per = self.memories // self.workspaces
        for w in range(self.workspaces):
            workspace = f"ws{w}"
            if workspaces is not None and not workspaces(workspace):
                continue
            rng = random.Random(SEED * 1_000_003 + w)
            for i in range(per):
                session = f"{workspace}-s{i % SESSIONS_PER_WORKSPACE}"
                text = rng.choices(words, cum_weights=cumulative, k=rng.randint(*WORDS))
                if rng.random() < 0.3:
                    text.append(f"{rng.choice(words)}_{rng.randrange(per)}")
                yield MemoryRecord(
                    id=f"{workspace}-m{i}",
                    text=" ".join(text),
                    kind=MemoryKind.EPISODE,
                    scope=Scope.SESSION,
                    created_at=now - timedelta(minutes=per - i),
                    source_event_ids=(f"{workspace}-e{i}",),
                    session_id=session,
                    workspace=workspace,
                    user=f"u{w}",
                    turn_index=i // SESSIONS_PER_WORKSPACE,
                )


def _accumulate(values: list[float]) -> Iterator[float]:
    total = 0.0
    for value in values:
        total += value
        yield total
