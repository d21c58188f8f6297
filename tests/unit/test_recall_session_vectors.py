"""A session's own vector (``workers/recall/session_vectors.py``): the mean of its user's
first turns' vectors, kept by the index as turns come and go, and the openers of the
sessions nearest the query as a candidate source (``sessions.session_vector_signal``)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.recall import NOW, memory, request
from turngraph.workers.embeddings.local import StaticEmbedder
from turngraph.workers.recall.index import MemoryIndex
from turngraph.workers.recall.ranking import DEFAULT, Ranking
from turngraph.workers.recall.search import search
from turngraph.workers.recall.session_vectors import SessionVectors, mean_vector
from turngraph.workers.recall.sessions import session_vector_signal

ON = DEFAULT.with_values(session_vector_weight=1.0, session_vector_count=2, session_reach=2)
WORKSPACE = ("workspace", "ws_a")

SESSIONS = {
    "s_garden": [
        ("user", "I want to start growing vegetables on my balcony this spring."),
        ("assistant", "Great idea! What space and light do you have?"),
        ("user", "Tomatoes and basil in pots, watered by a drip irrigation line."),
        ("assistant", "Drip lines suit pots well; water early in the morning."),
        ("user", "Later: the neighbour's cat keeps sleeping in the planter."),
    ],
    "s_car": [
        ("user", "I want to buy a used car for commuting."),
        ("assistant", "What budget and what kind of car?"),
        ("user", "A small hatchback under ten thousand with low mileage."),
    ],
    "s_meals": [
        ("user", "Help me plan my meals for the week."),
        ("assistant", "Sure, any preferences?"),
        ("user", "Mostly lentils and rice, quick dinners after work."),
    ],
}


@pytest.fixture(scope="module")
def embedder() -> StaticEmbedder:
    return StaticEmbedder()


def _index(embedder: StaticEmbedder, ranking: Ranking = ON) -> MemoryIndex:
    index = MemoryIndex(embedder, ranking)
    for session, turns in SESSIONS.items():
        for n, (role, text) in enumerate(turns):
            index.add(_turn(session, n, role, text))
    return index


def _turn(session: str, n: int, role: str, text: str):  # type: ignore[no-untyped-def]
    return memory(f"{session}_{n}", text, days_ago=9, session_id=session, turn_index=n,
                  extra={"role": role})  # fmt: skip


def _held(index: MemoryIndex, session: str) -> np.ndarray:
    """The session's held vector, read back through a search for itself."""
    assert index.semantic is not None and index.semantic.sessions is not None
    probe = np.eye(index.semantic.sessions.dimension, dtype=np.float32)
    found = [dict(index.semantic.sessions.nearest(WORKSPACE, row, 3)).get(session) for row in probe]
    assert None not in found, found
    return np.asarray(found, dtype=np.float32)


def test_a_sessions_vector_is_the_mean_of_its_users_first_turns(
    embedder: StaticEmbedder,
) -> None:
    index = _index(embedder)
    assert index.semantic is not None and index.semantic.vectors is not None
    # s_garden: the user's turns 0 and 2 (turn 4 is past session_reach 2, 1 and 3 are
    # the assistant's)
    keys = [index._ids["s_garden_0"], index._ids["s_garden_2"]]
    stored = index.semantic.vectors.vectors(keys)
    expected = mean_vector([stored[k] for k in keys])
    assert expected is not None
    assert np.allclose(_held(index, "s_garden"), expected, atol=0.02)
    assert len(index.semantic.sessions or []) == 3


def test_removed_turns_remake_the_vector_and_a_session_without_any_has_none(
    embedder: StaticEmbedder,
) -> None:
    index = _index(embedder)
    sessions = index.semantic.sessions  # type: ignore[union-attr]
    assert sessions is not None
    index.remove("s_car_2")
    keys = [index._ids["s_car_0"]]
    only = index.semantic.vectors.vectors(keys)[keys[0]]  # type: ignore[union-attr]
    assert np.allclose(_held(index, "s_car"), only / np.linalg.norm(only), atol=0.02)
    index.remove("s_car_0")
    assert len(sessions) == 2
    index.forget("workspace", "ws_a")
    assert len(sessions) == 0


def test_a_bootstrap_holds_the_vectors_one_by_one_adds_hold(embedder: StaticEmbedder) -> None:
    one_by_one = _index(embedder)
    bulk = MemoryIndex(embedder, ON)
    bulk.add_many(
        _turn(session, n, role, text)
        for session, turns in SESSIONS.items()
        for n, (role, text) in enumerate(turns)
    )
    for session in SESSIONS:
        assert np.allclose(_held(bulk, session), _held(one_by_one, session), atol=1e-6)


def test_off_holds_no_session_vectors(embedder: StaticEmbedder) -> None:
    index = _index(embedder, DEFAULT.with_values(session_vector_weight=0))
    assert index.semantic is not None and index.semantic.sessions is None


def test_the_nearest_sessions_lend_their_opener_and_the_current_one_nothing(
    embedder: StaticEmbedder,
) -> None:
    index = _index(embedder)
    opener = {session: index._ids[f"{session}_0"] for session in SESSIONS}
    nearest = [("s_garden", 0.9), ("s_meals", 0.5), ("s_car", 0.3)]
    assert session_vector_signal(index, nearest, ON) == {
        opener["s_garden"]: 1.0,
        opener["s_meals"]: pytest.approx(1 / 3),
    }
    # asked inside s_garden: the two others, the last of them at 0
    assert session_vector_signal(index, nearest, ON, current_session="s_garden") == {
        opener["s_meals"]: 1.0
    }
    off = ON.with_values(session_vector_weight=0)
    assert session_vector_signal(index, nearest, off) == {}


def test_an_opener_that_shares_nothing_with_the_question_joins_the_answer(
    embedder: StaticEmbedder,
) -> None:
    """The question is about a detail the session went on to discuss (drip watering of
    pots): its opening turn says only what the user set out to do."""
    query = "How often should the drip line water the pots?"
    on = [r.memory_id for r in search(_index(embedder), request(query), now=NOW).results]
    assert "s_garden_0" in on, on
    off = _index(embedder, ON.with_values(session_vector_weight=0))
    without = [r.memory_id for r in search(off, request(query), now=NOW).results]
    assert on.index("s_garden_0") < (without.index("s_garden_0") if "s_garden_0" in without
                                      else len(without)), (on, without)  # fmt: skip


def test_rows_of_dropped_sessions_are_reused_and_the_table_grows() -> None:
    held = SessionVectors(4)
    rows = np.eye(4, dtype=np.float32)
    for n in range(100):
        held.set(WORKSPACE, f"s{n}", rows[n % 4])
    assert len(held) == 100
    held.set(WORKSPACE, "s1", None)
    held.set(WORKSPACE, "s_new", rows[1])
    assert len(held) == 100
    nearest = dict(held.nearest(WORKSPACE, rows[1], 100))
    assert "s1" not in nearest and nearest["s_new"] == pytest.approx(1.0)
    assert held.nearest(("workspace", "other"), rows[0], 3) == []
