"""What was said ranks as if nothing were restated (issue 20: distillation on must not be
worse than off), and every replica ranks alike.

A summary, recap or decision record restates turns, and an ownership context is the
system's sentence per session. With them in the index, every turn, fact and preference
keeps the score and the order it has without them; a restatement is only placed among
them by its own score. And a search does not depend on the process's string hashing: two
recall replicas (or one restarted) answer a request the same way.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.recall import NOW, memory, request
from turngraph.schemas.recall import ConversationTurn, RecallRequest
from turngraph.workers.embeddings.local import StaticEmbedder
from turngraph.workers.recall.index import MemoryIndex
from turngraph.workers.recall.memory import Memory, MemoryKind
from turngraph.workers.recall.search import search

SESSIONS = {
    "s_db": (
        "I need to pick a database for the billing service, we expect heavy writes.",
        "For heavy writes PostgreSQL with partitioned tables works well; MongoDB is the "
        "other option if the schema keeps changing.",
        "The schema is stable, so PostgreSQL it is. Partition by month.",
        "Monthly partitions on the invoices table, and a nightly job to detach old ones.",
    ),
    "s_ci": (
        "Our CI takes forty minutes, can we make the test suite faster?",
        "Split the suite across four runners and cache the dependency install.",
        "Caching cut ten minutes; the integration tests still dominate.",
        "Start the database once per runner instead of once per test module.",
    ),
    "s_ui": (
        "Which bundler should the dashboard use?",
        "esbuild is the fastest to build; Vite wraps it with a dev server.",
        "We went with Vite for the dev server and hot reload.",
        "Vite's config lives in the dashboard folder, next to package.json.",
    ),
}


def _turns() -> list[Memory]:
    found = []
    for day, (session, texts) in enumerate(SESSIONS.items()):
        for n, text in enumerate(texts):
            found.append(
                memory(
                    f"{session}_{n}",
                    text,
                    days_ago=30 - 5 * day - n / 100,
                    session_id=session,
                    turn_index=n,
                    extra={"role": "user" if n % 2 == 0 else "assistant"},
                )
            )
    found.append(
        memory("fact_db", "The billing service stores invoices in PostgreSQL.", session_id=None,
               kind=MemoryKind.FACT, entities=("postgresql", "billing service"))
    )  # fmt: skip
    return found


def _restatements() -> list[Memory]:
    found = []
    for session, texts in SESSIONS.items():
        found.append(
            memory(f"{session}_summary", "Summary: " + " ".join(texts), days_ago=10,
                   session_id=session, scope="workspace", kind=MemoryKind.SUMMARY,
                   status="Draft", source_event_ids=tuple(f"e_{session}_{n}" for n in range(4)))
        )  # fmt: skip
        found.append(
            memory(f"{session}_recap", "Recap of the last session: " + texts[0], days_ago=9,
                   session_id=session, kind=MemoryKind.RECAP,
                   source_event_ids=(f"e_{session}_0",))
        )  # fmt: skip
        found.append(
            memory(f"{session}_owner", f"Ownership context: Owner u_1 owns this session scope "
                   f"(session {session}). Git: branch main.", session_id=session,
                   kind=MemoryKind.PROMOTED, extra={"memory_kind": "ownership_context"})
        )  # fmt: skip
    found.append(
        memory("record_db", "Decision: PostgreSQL for the billing database, partitioned by "
               "month, because the schema is stable and writes are heavy.", session_id=None,
               kind=MemoryKind.DECISION_RECORD, status="DecisionRecord",
               source_event_ids=("e_s_db_2",), entities=("postgresql",))
    )  # fmt: skip
    return found


CONTEXT = (
    ConversationTurn(role="user", content="The dashboard build is slow again."),
    ConversationTurn(role="assistant", content="It rebuilds every package on each change."),
)

REQUESTS = (
    request("why did we choose PostgreSQL for billing?"),
    request("how did we make the CI test suite faster?", conversation_context=CONTEXT),
    request("which bundler do we use?", conversation_context=CONTEXT),
    request("what about it?", conversation_context=CONTEXT),
    request("database partitions"),
)


@pytest.fixture(scope="module")
def embedder() -> StaticEmbedder:
    return StaticEmbedder()


def _said(index: MemoryIndex, query: RecallRequest) -> list[tuple[str, float]]:
    answer = search(index, query.model_copy(update={"max_results": 50}), now=NOW)
    return [
        (r.memory_id, r.score.final_score)
        for r in answer.results
        if (m := index.get(r.memory_id or "")) is not None and m.in_statistics
    ]


@pytest.mark.parametrize("query", REQUESTS, ids=lambda r: r.query)
def test_restatements_move_no_turn_fact_or_preference(
    embedder: StaticEmbedder, query: RecallRequest
) -> None:
    alone, restated = MemoryIndex(embedder), MemoryIndex(embedder)
    for item in _turns():
        alone.add(item)
        restated.add(item)
    for item in _restatements():
        restated.add(item)
    # the same memories of what was said, in the same order, with the same scores
    assert _said(restated, query) == _said(alone, query)


def test_a_restatement_is_still_placed_by_its_own_score(embedder: StaticEmbedder) -> None:
    # the rule is not "leave them out": the decision record answers the why-question
    index = MemoryIndex(embedder)
    for item in [*_turns(), *_restatements()]:
        index.add(item)
    answer = search(index, request("why did we choose PostgreSQL for billing?"), now=NOW)
    ranked = [r.memory_id for r in answer.results]
    turns = [n for n, m in enumerate(ranked) if m and m.startswith("s_") and m[-1].isdigit()]
    assert "record_db" in ranked and ranked.index("record_db") < min(turns), ranked


RANK_IN_A_FRESH_PROCESS = """
import json, sys
from tests.support.recall import NOW, memory, request
from turngraph.schemas.recall import ConversationTurn
from turngraph.workers.recall.index import MemoryIndex
from turngraph.workers.recall.search import search

words = sys.argv[1].split()
index = MemoryIndex()
for n, word in enumerate(words):  # each word said once: every one equally specific
    index.add(memory(f"w{n}", f"the {word} note", session_id=f"s{n}", turn_index=0))
context = [ConversationTurn(role="user", content=" ".join(words))]
answer = search(index, request("and those?", conversation_context=context), now=NOW)
print(json.dumps([r.memory_id for r in answer.results]))
"""


def test_every_replica_ranks_alike_whatever_its_string_hashing() -> None:
    # the context holds more equally specific words than a plan keeps (8): which ones it
    # keeps, and so what the follow-up finds, must not depend on PYTHONHASHSEED
    words = "amber basil cedar delta ember fjord grove harbor iris juniper kestrel lumen"
    root = Path(__file__).resolve().parents[2]
    answers = set()
    for seed in ("1", "2", "3", "4", "5"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), env.get("PYTHONPATH")) if p)
        done = subprocess.run(
            [sys.executable, "-c", RANK_IN_A_FRESH_PROCESS, words],
            env=env, cwd=root, capture_output=True, text=True, timeout=120, check=True,
        )  # fmt: skip
        ranked = json.loads(done.stdout)
        assert ranked, done.stderr
        answers.add(tuple(ranked))
    assert len(answers) == 1, answers


def test_the_index_knows_what_was_said_as_memories_come_and_go() -> None:
    index = MemoryIndex()
    index.add(memory("t", "we picked PostgreSQL for billing"))
    index.add(memory("s", "Summary: PostgreSQL for billing", kind=MemoryKind.SUMMARY))
    index.add(memory("o", "ws_a is owned by Ada", extra={"memory_kind": "ownership_context"}))
    internal = {m: index._ids[m] for m in ("t", "s", "o")}

    def agrees() -> bool:
        return all(
            index.said(internal[m]) == (memory_ is not None and memory_.in_statistics)
            for m in internal
            for memory_ in [index.memory(internal[m])]
        )

    assert [index.said(internal[m]) for m in ("t", "s", "o")] == [True, False, False]
    index.set_status("s", "Superseded")  # a status changes nothing
    assert agrees()
    index.add(memory("s", "we picked PostgreSQL for billing, again"))  # now a turn
    internal["s"] = index._ids["s"]
    assert index.said(internal["s"]) and agrees()
    index.remove("t")
    index.forget("workspace", "ws_a")
    assert not any(index.said(key) for key in internal.values()) and agrees()
