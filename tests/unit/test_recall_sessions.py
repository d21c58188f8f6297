"""Session-level evidence (``workers/recall/sessions.py``): a session whose later turns
match the question lends its strength to the turn that opened it, in a chat with an
assistant."""

from __future__ import annotations

from tests.support.recall import NOW, memory, request
from turngraph.workers.recall.index import MemoryIndex
from turngraph.workers.recall.ranking import DEFAULT, Ranking
from turngraph.workers.recall.search import search
from turngraph.workers.recall.sessions import by_own_cosine, later_user_turns, session_signal

OPENER = "I deliver parcels on a scooter all day and my spine hurts by evening."
LATER = [
    ("assistant", "Try the cat-cow stretch for your back pain at every stop, ten breaths."),
    ("user", "The stretches help a bit, the back pain is still there after long rides."),
    ("assistant", "Add a lumbar cushion: back pain from long rides often comes from posture."),
]
OTHER = [
    ("s_trip", "Back in Yogyakarta we rode to the beach, a long and lovely ride."),
    ("s_food", "Pain au chocolat or a croissant for breakfast? The stretch of shops is closed."),
]
QUERY = "What can I do about my back pain after long rides now?"


def _index(ranking: Ranking, *, assistant: bool = True) -> MemoryIndex:
    """Internal ids ascend in insertion order: opener 0, later 1-3, then per other
    session its opening turn and its reply (4-5, 6-7)."""
    index = MemoryIndex(ranking=ranking)
    index.add(memory("opener", OPENER, days_ago=20, session_id="s_back", turn_index=0,
                     extra={"role": "user"}))  # fmt: skip
    for n, (role, text) in enumerate(LATER, start=1):
        index.add(memory(f"later_{n}", text, days_ago=20, session_id="s_back", turn_index=n,
                         extra={"role": role if assistant else "user"}))  # fmt: skip
    reply = "assistant" if assistant else "user"
    for session, text in OTHER:
        index.add(memory(f"{session}_0", text, days_ago=5, session_id=session, turn_index=0,
                         extra={"role": "user"}))  # fmt: skip
        index.add(memory(f"{session}_1", "Sounds good!", days_ago=5, session_id=session,
                         turn_index=1, extra={"role": reply}))  # fmt: skip
    return index


def _ids(index: MemoryIndex) -> list[str]:
    return [index.memory(n).id for n in range(len(index))]  # type: ignore[union-attr]


def test_a_strong_sessions_opening_turn_joins_the_answer() -> None:
    found = [r.memory_id for r in search(_index(DEFAULT), request(QUERY), now=NOW).results]
    assert "opener" in found, found
    off = DEFAULT.with_values(session_weight=0)
    without = [r.memory_id for r in search(_index(off), request(QUERY), now=NOW).results]
    assert "opener" not in without, without  # it shares no word with the question


def test_a_sessions_strength_is_the_sum_of_its_best_hits_against_a_full_session() -> None:
    ranking = DEFAULT.with_values(session_weight=1.0, session_hits=2, session_count=2)
    index = _index(ranking)
    assert _ids(index)[:5] == ["opener", "later_1", "later_2", "later_3", "s_trip_0"]
    hits = [(1, 3.0), (2, 2.0), (3, 1.0), (4, 2.5), (6, 0.5)]
    # a full session is two hits as good as the best (3.0): s_back 3 + 2 (its best two) of
    # 6, s_trip 2.5 of 6; s_food is not among the two strongest
    assert session_signal(index, hits, ranking) == {0: 5 / 6, 4: 2.5 / 6}


def test_hits_far_into_a_long_session_lend_its_opening_turn_nothing() -> None:
    ranking = DEFAULT.with_values(session_reach=2)
    index = _index(ranking)
    rivals = [(4, 0.5), (6, 0.5)]  # the other two sessions' openers
    assert 0 not in session_signal(index, [(3, 3.0), *rivals], ranking)  # later_3 is turn 3
    assert session_signal(index, [(2, 3.0), *rivals], ranking)[0] == 1 / ranking.session_hits


def test_a_single_session_gets_no_session_signal() -> None:
    """The signal tells sessions apart: with one session among the hits it lends nothing."""
    index = _index(DEFAULT)
    assert session_signal(index, [(1, 3.0), (2, 2.0)], DEFAULT) == {}


def test_a_chat_between_people_gets_no_session_signal() -> None:
    """Every turn a user's (REALTALK): sessions open with greetings, not requests."""
    ranking = DEFAULT.with_values(session_weight=1.0)
    index = _index(ranking, assistant=False)
    assert session_signal(index, [(1, 3.0), (2, 2.0), (4, 2.5)], ranking) == {}


def test_off_when_its_weight_is_zero() -> None:
    off = DEFAULT.with_values(session_weight=0)
    assert session_signal(_index(off), [(1, 1.0), (2, 1.0)], off) == {}


def test_in_a_single_session_the_answer_comes_before_the_opener() -> None:
    """One chat (`make demo`'s shape): its opener is about something else and the
    question's answer is a later turn; with no other session to tell apart, the session
    signal lends the opener nothing, so the answer comes first."""
    index = MemoryIndex(ranking=DEFAULT)
    turns = [
        ("user", "The ingest worker crashes on job ids with dots, see the jobs module."),
        ("assistant", "Hash the event id into the job id; dots are refused by the queue."),
        ("user", "Decision: the queue's store uses the noeviction memory policy."),
        ("assistant", "Noted: with noeviction the store refuses writes instead of evicting."),
    ]
    for n, (role, text) in enumerate(turns):
        index.add(memory(f"t{n}", text, days_ago=1, session_id="s_one", turn_index=n,
                         extra={"role": role}))  # fmt: skip
    query = "which eviction policy did we choose for the queue?"
    found = [r.memory_id for r in search(index, request(query), now=NOW).results]
    assert found[0] == "t2", found
    assert "t0" in found and found.index("t0") > found.index("t2"), found


def test_the_session_asked_in_lends_nothing_and_sets_no_bar() -> None:
    """The signal looks for an earlier session: the one the question is asked in gets no
    strength, and its hits (the conversation itself) do not set what a full session is."""
    ranking = DEFAULT.with_values(session_hits=1, session_count=3)
    index = _index(ranking)
    hits = [(1, 4.0), (4, 2.0), (6, 1.0)]  # s_back holds the best hit
    assert session_signal(index, hits, ranking) == {0: 1.0, 4: 0.5, 6: 0.25}
    # asked inside s_back: s_trip is the strongest earlier session, a full one
    assert session_signal(index, hits, ranking, current_session="s_back") == {4: 1.0, 6: 0.5}


def test_a_question_asked_inside_a_session_does_not_lift_its_own_opener() -> None:
    asked_elsewhere = [
        r.memory_id for r in search(_index(DEFAULT), request(QUERY), now=NOW).results
    ]
    assert "opener" in asked_elsewhere, asked_elsewhere
    inside = search(_index(DEFAULT), request(QUERY, session_id="s_back"), now=NOW).results
    assert "opener" not in [r.memory_id for r in inside], inside


def test_the_users_later_turns_of_a_lifted_session_get_a_share_of_its_strength() -> None:
    """After the opening turn the user goes on stating the situation; those turns (not
    the assistant's) get ``session_user_share`` of the session's strength."""
    ranking = DEFAULT.with_values(session_user_share=0.5)
    index = _index(ranking)
    openers = {0: 0.8, 4: 0.6}  # s_back's and s_trip's opening turns
    # s_back: later_2 (internal 2) is the user's, later_1 and later_3 the assistant's;
    # s_trip's only later turn is the assistant's reply
    assert later_user_turns(index, openers, ranking) == {2: 0.4}
    assert later_user_turns(index, openers, ranking.with_values(session_reach=1)) == {}
    assert later_user_turns(index, openers, ranking.with_values(session_user_share=0)) == {}


def test_a_later_turns_share_is_weighed_by_its_own_cosine() -> None:
    """Only the later turns about the question keep their share; without a cosine (no
    embedder, or the query embedding missed its budget) none does."""
    assert by_own_cosine({2: 0.4, 5: 0.3}, {2: 0.5, 9: 1.0}) == {2: 0.2}
    assert by_own_cosine({2: 0.4}, {}) == {}
