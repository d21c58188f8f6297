from __future__ import annotations

import sys
import threading

from tests.support.recall import memory
from turngraph.schemas.changes import ScopeForgotten
from turngraph.schemas.scopes import Scope
from turngraph.workers.recall.index import MemoryIndex
from turngraph.workers.recall.ranking import DEFAULT
from turngraph.workers.recall.text import tokenize

WS_A = ("workspace", "ws_a")
WS_B = ("workspace", "ws_b")


def _query(text: str) -> dict[str, float]:
    return dict.fromkeys(tokenize(text), 1.0)


def _ids(index: MemoryIndex, hits: list[tuple[int, float]]) -> list[str]:
    found = [index.memory(key) for key, _ in hits]
    return [m.id for m in found if m is not None]


def test_bm25_prefers_the_rarer_matching_term() -> None:
    index = MemoryIndex()
    index.add(memory("common", "the deploy pipeline deploy again"))
    index.add(memory("rare", "the deploy uses gitleaks"))
    for n in range(10):
        index.add(memory(f"filler{n}", f"deploy notes number {n}"))
    hits = index.lexical(WS_A, _query("gitleaks deploy"), limit=3)
    assert _ids(index, hits)[0] == "rare"


def test_a_workspace_partition_never_returns_another_workspace() -> None:
    index = MemoryIndex()
    index.add(memory("a", "retry webhooks with backoff", workspace="ws_a"))
    index.add(memory("b", "retry webhooks with backoff", workspace="ws_b", session_id="s_b"))
    assert _ids(index, index.lexical(WS_A, _query("retry webhooks"), limit=10)) == ["a"]
    assert _ids(index, index.lexical(WS_B, _query("retry webhooks"), limit=10)) == ["b"]


def test_session_restriction_only_scores_that_session() -> None:
    index = MemoryIndex()
    index.add(memory("mine", "pool size raised", session_id="s_1"))
    index.add(memory("other", "pool size raised twice", session_id="s_2"))
    hits = index.lexical(WS_A, _query("pool size"), limit=10, session_id="s_1")
    assert _ids(index, hits) == ["mine"]


def test_status_change_keeps_postings_and_text_change_reindexes() -> None:
    index = MemoryIndex()
    index.add(memory("m", "use cursor pagination"))
    assert index.set_status("m", "Superseded")
    current = index.get("m")
    assert current is not None and current.status == "Superseded"
    assert _ids(index, index.lexical(WS_A, _query("cursor"), limit=5)) == ["m"]
    index.add(memory("m", "use offset pagination"))
    assert index.lexical(WS_A, _query("cursor"), limit=5) == []
    assert _ids(index, index.lexical(WS_A, _query("offset"), limit=5)) == ["m"]
    assert len(index) == 1


def test_remove_and_unknown_ids() -> None:
    index = MemoryIndex()
    index.add(memory("m", "flaky fixture"))
    assert index.remove("m")
    assert not index.remove("m")
    assert not index.set_status("m", "Active")
    assert index.lexical(WS_A, _query("flaky"), limit=5) == []


def test_forget_removes_exactly_one_scope() -> None:
    index = MemoryIndex()
    index.add(memory("s1", "alpha note", session_id="s_1"))
    index.add(memory("s2", "alpha note two", session_id="s_2"))
    index.add(memory("b", "alpha note", workspace="ws_b", session_id="s_b"))
    index.add(memory("pref", "alpha preference", workspace=None, session_id=None, scope="user"))
    assert index.forget("session", "s_1") == 1
    assert _ids(index, index.lexical(WS_A, _query("alpha"), limit=5)) == ["s2"]
    assert index.forget("workspace", "ws_b") == 1
    assert not index.has_partition(WS_B)
    index.apply(ScopeForgotten(scope=Scope.USER, scope_key="u_1"))
    assert len(index) == 0


def test_compaction_after_many_removals_keeps_answers_right() -> None:
    index = MemoryIndex()
    for n in range(200):
        index.add(memory(f"m{n}", f"shared term item{n}"))
    for n in range(150):
        index.remove(f"m{n}")
    hits = index.lexical(WS_A, _query("shared term"), limit=100)
    assert sorted(_ids(index, hits)) == sorted(f"m{n}" for n in range(150, 200))
    df, n_docs = index.doc_frequency(WS_A, "share")
    assert n_docs == 50 and df <= 60  # removed ids were compacted away


def test_common_terms_beyond_the_budget_still_rescore() -> None:
    index = MemoryIndex(ranking=DEFAULT.with_values(postings_budget=20))
    # Same length and inserted first: without rescoring it would tie and win the tie.
    index.add(memory("rare_only", "zebra giraffe lion tiger"))
    for n in range(100):
        index.add(memory(f"m{n}", "common words everywhere"))
    index.add(memory("target", "common words everywhere zebra"))
    hits = index.lexical(WS_A, _query("zebra common words"), limit=2)
    assert _ids(index, hits)[0] == "target"


def test_entity_postings_and_neighbours() -> None:
    index = MemoryIndex()
    index.add(memory("a", "x", entities=("payments api", "card processor")))
    index.add(memory("b", "y", entities=("card processor",)))
    index.add(memory("c", "z", entities=("gitleaks",)))
    hits = index.entity_hits(WS_A, {"payments api": 1.0}, limit=5)
    assert _ids(index, hits) == ["a"]
    assert index.known_entities(WS_A, ["gitleaks", "nothing"]) == ["gitleaks"]
    assert index.entity_neighbours(WS_A, ["payments api"], limit=3) == ["card processor"]


def test_turn_neighbours_follow_the_episode_chain() -> None:
    index = MemoryIndex()
    for n in range(3):
        index.add(memory(f"t{n}", f"turn {n}", turn_index=n))
    middle = index.lexical(WS_A, _query("turn 1"), limit=1)[0][0]
    names = sorted(
        m.id for k in index.turn_neighbours(middle) if (m := index.memory(k)) is not None
    )
    assert names == ["t0", "t2"]


def test_one_writer_and_concurrent_readers() -> None:
    index = MemoryIndex()
    for n in range(50):
        index.add(memory(f"seed{n}", f"queue worker note {n}"))
    errors: list[BaseException] = []
    start = threading.Barrier(5)

    def read() -> None:
        start.wait()
        try:
            for _ in range(200):
                index.lexical(WS_A, _query("queue worker"), limit=10)
        except BaseException as exc:  # pragma: no cover - the assertion reports it
            errors.append(exc)

    def write() -> None:
        start.wait()
        for n in range(300):
            index.add(memory(f"w{n}", f"queue worker change {n}"))
            if n % 3 == 0:
                index.remove(f"w{n}")

    threads = [threading.Thread(target=read) for _ in range(4)] + [threading.Thread(target=write)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads between any two appends of the writer
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert errors == []
    assert len(index) == 50 + 200
