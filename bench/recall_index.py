"""In-process recall index at scale: ``python -m bench.recall_index [N]``.

Builds a :class:`~workers.recall.index.MemoryIndex` with N synthetic memories (default
50,000) plus the retrieval dataset's real turns, then runs the dataset's questions
(standalone and follow-ups) through :func:`~workers.recall.search.search`. Reports build
time, the process RSS growth, and search latency percentiles, with the garbage collector
as it is and after ``gc.freeze()`` (what a replica should do once bootstrapped: the
index's long-lived objects then stop being rescanned); once with everything in one
workspace (the worst case for postings lengths) and once spread over 20 workspaces.
No Redis here: the end-to-end benchmark through the request list is
``bench.recall_latency``.
"""

from __future__ import annotations

import gc
import random
import re
import sys
import time
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from bench.report import percentile, result_line, table
from bench.retrieval_data import DEFAULT_OUT, load
from turngraph.schemas.recall import ConversationTurn, RecallRequest
from turngraph.workers.graph.recallable import episode_memory, turn_row
from turngraph.workers.recall.index import MemoryIndex
from turngraph.workers.recall.memory import Memory, MemoryKind
from turngraph.workers.recall.search import search

SEED = 7
_WORDS = re.compile(r"[A-Za-z][A-Za-z_.\-]+")


def _rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def synthetic(
    n: int, vocabulary: Sequence[str], workspaces: Sequence[str], now: datetime
) -> list[Memory]:
    """Turn-like texts: Zipf-distributed words from real chat plus rare identifiers."""
    rng = random.Random(SEED)
    weights = [1 / (rank + 1) for rank in range(len(vocabulary))]
    identifiers = [f"{rng.choice(vocabulary)}_{i}" for i in range(n // 5)]
    memories = []
    for i in range(n):
        workspace = workspaces[i % len(workspaces)]
        session = f"{workspace}_syn{i // 40}"
        words = rng.choices(vocabulary, weights=weights, k=rng.randint(12, 70))
        names = rng.sample(identifiers, k=rng.randint(0, 3))
        memories.append(
            Memory(
                id=f"syn{i}",
                text=" ".join(words + names),
                kind=MemoryKind.EPISODE,
                scope="session",
                created_at=now - timedelta(minutes=n - i),
                source_event_ids=(f"syn{i}",),
                session_id=session,
                workspace=workspace,
                user="u_dana",
                entities=tuple(name.replace("_", " ") for name in names),
                turn_index=i % 40,
            )
        )
    return memories


def run(n: int, n_workspaces: int) -> dict[str, Any]:
    turns, questions, now = load(DEFAULT_OUT)
    vocab_counts: dict[str, int] = {}
    for turn in turns:
        for word in _WORDS.findall(turn.content.lower()):
            vocab_counts[word] = vocab_counts.get(word, 0) + 1
    vocabulary = sorted(vocab_counts, key=vocab_counts.__getitem__, reverse=True)
    workspaces = ["ws_ledgerline"] + [f"ws_syn{i}" for i in range(1, n_workspaces)]
    gc.collect()
    rss_before = _rss_kib()  # before the memories exist: a replica holds them too
    memories = synthetic(n, vocabulary, workspaces, now)
    started = time.perf_counter()
    index = MemoryIndex()
    index.add_many(Memory.from_record(episode_memory(turn_row(t))) for t in turns)
    index.add_many(memories)
    build_s = time.perf_counter() - started
    del memories
    gc.collect()
    rss_after = _rss_kib()
    requests = [
        RecallRequest(
            query=q["question"],
            workspace=q["workspace"],
            user=q["user"],
            session_id="bench_question_session",
            conversation_context=tuple(ConversationTurn(**t) for t in q["conversation_context"]),
        )
        for q in questions
    ]
    for request in requests:  # warm-up
        search(index, request, now)
    row: dict[str, Any] = {
        "memories": len(index),
        "workspaces": n_workspaces,
        "build_s": build_s,
        "rss_mb": (rss_after - rss_before) / 1024,
    }
    for label in ("", "frozen_"):
        if label:
            gc.freeze()
        timings = []
        for _ in range(5):
            for request in requests:
                t0 = time.perf_counter()
                search(index, request, now)
                timings.append((time.perf_counter() - t0) * 1000)
        for pct in (50, 95, 99):
            row[f"{label}p{pct}_ms"] = percentile(timings, pct)
    gc.unfreeze()
    return row


def main(n: int = 50_000) -> int:
    rows = [run(n, 1), run(n, 20)]
    headers = list(rows[0])
    print(table(headers, [[row[h] for h in headers] for row in rows]))
    worst = rows[0]
    print(
        result_line(
            "recall_index",
            memories=worst["memories"],
            search_p50_ms=round(worst["p50_ms"], 3),
            search_p95_ms=round(worst["p95_ms"], 3),
            search_p99_ms=round(worst["p99_ms"], 3),
            frozen_search_p99_ms=round(worst["frozen_p99_ms"], 3),
            rss_growth_mb=round(worst["rss_mb"], 1),
            build_s=round(worst["build_s"], 2),
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 50_000))
