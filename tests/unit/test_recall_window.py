"""What the assistant already holds in its window stays out of recall's answer
(``workers/recall/window.py``; issue 20's first acceptance test)."""

from __future__ import annotations

from tests.support.recall import NOW, memory, request
from turngraph.schemas.recall import ConversationTurn
from turngraph.workers.recall.index import MemoryIndex
from turngraph.workers.recall.memory import MemoryKind
from turngraph.workers.recall.search import search
from turngraph.workers.recall.window import Window, asks_for_recap

EARLIER_ANSWER = "We went with esbuild as the bundler: webpack builds took four minutes."

CURRENT = [
    ("user", "Let's set up the bundler config for the new package, like we did before."),
    ("assistant", "Sure. Which bundler does the project use, and do you want source maps?"),
    ("user", "Source maps yes. I forget which bundler we settled on for the bundler config."),
]


def _index() -> MemoryIndex:
    index = MemoryIndex()
    index.add(memory("earlier", EARLIER_ANSWER, days_ago=30, session_id="s_old"))
    index.add(memory("earlier_chat", "Morning! Coffee first, then code.", days_ago=30,
                     session_id="s_old"))  # fmt: skip
    for n, (role, text) in enumerate(CURRENT):
        index.add(memory(f"now_{n}", text, days_ago=0.01, session_id="s_now", turn_index=n,
                         extra={"role": role}))  # fmt: skip
    index.add(
        memory(
            "now_summary",
            "Summary · bundler config: which bundler the project uses for the new package "
            "bundler config. Open: which bundler did we settle on?",
            days_ago=0.01,
            session_id="s_now",
            kind=MemoryKind.SUMMARY,
            scope="workspace",
            status="Draft",
            source_event_ids=("e_now_0", "e_now_1", "e_now_2"),
        )
    )
    index.add(
        memory(
            "now_recap",
            "Recap: the bundler config of the new package, which bundler, source maps.",
            days_ago=0.01,
            session_id="s_old",
            kind=MemoryKind.RECAP,
            source_event_ids=("e_earlier",),
        )
    )
    return index


def _context() -> tuple[ConversationTurn, ...]:
    return tuple(ConversationTurn(role=role, content=text) for role, text in CURRENT)  # type: ignore[arg-type]


def test_an_earlier_sessions_answer_beats_the_current_sessions_summary() -> None:
    index = _index()
    response = search(
        index,
        request("which bundler do we use?", conversation_context=_context()),
        now=NOW,
    )
    ids = [r.memory_id for r in response.results]
    assert ids and ids[0] == "earlier", ids
    # the current session's turns in the context and its summary are in the window
    assert not {"now_0", "now_1", "now_2", "now_summary"} & set(ids), ids


def test_without_context_nothing_is_assumed_in_the_window() -> None:
    response = search(_index(), request("which bundler do we use?"), now=NOW)
    ids = {r.memory_id for r in response.results}
    assert {"earlier", "now_summary", "now_2"} <= ids, ids


def test_a_recap_answers_only_where_the_work_stood() -> None:
    index = _index()
    plain = {r.memory_id for r in search(index, request("bundler source maps"), now=NOW).results}
    asked = search(index, request("recap: where did we leave off with the bundler?"), now=NOW)
    assert "now_recap" not in plain
    assert "now_recap" in {r.memory_id for r in asked.results}


def test_a_cut_context_turn_still_matches_its_turn() -> None:
    long_turn = "Here is the plan for the migration, step by step. " * 40
    window = Window.of("s_now", (ConversationTurn(role="assistant", content=long_turn[:300]),), "q")
    assert window.holds(memory("t", long_turn, session_id="s_now"))
    assert not window.holds(memory("t", long_turn, session_id="s_other"))
    assert not window.holds(memory("t", "Here is the plan.", session_id="s_now"))


def test_recap_questions() -> None:
    assert asks_for_recap("Can you recap the last session?")
    assert asks_for_recap("where did we leave off")
    assert not asks_for_recap("which bundler do we use")


def test_a_promoted_user_preference_is_first_for_what_do_i_prefer_under_auto() -> None:
    index = MemoryIndex()
    index.add(
        memory(
            "pref",
            "Preference: small pull requests, one concern each, squash-merged after review.",
            days_ago=40,
            workspace=None,
            session_id=None,
            scope="user",
            kind=MemoryKind.PROMOTED,
        )
    )
    chatter = [
        "I opened the pull request for the retry fix; CI is green on the pull request.",
        "Can you review my pull request? The pull requests queue is long this week.",
        "Merged two pull requests today, the release branch is cut.",
        "What do you prefer for lunch, pizza or noodles?",
    ]
    for n, text in enumerate(chatter):
        index.add(memory(f"turn_{n}", text, days_ago=1 + n, session_id=f"s_{n}"))
    for query in (
        "What do I prefer for pull requests?",
        "how do I like my pull requests?",
        "what's my setup for pull requests",
    ):
        response = search(index, request(query), now=NOW)
        assert response.results and response.results[0].memory_id == "pref", query
        assert response.results[0].scope == "user"


def test_an_editors_window_holds_its_session_from_the_last_compaction_on() -> None:
    # Issue 34: the prompt hook's context holds the last turns only, but the editor's
    # transcript holds the whole session since its last compaction.
    index = _index()
    index.add(memory("now_old", "We settled the bundler question: bundler is rollup for "
                     "the docs site.", days_ago=0.02, session_id="s_now", turn_index=7,
                     extra={"role": "user"}))  # fmt: skip
    query = "which bundler do we use?"
    ids = [r.memory_id for r in search(index, request(query), now=NOW).results]
    assert "now_old" in ids  # without a window it is found
    held = search(index, request(query, window_from_turn=0), now=NOW)
    ids = [r.memory_id for r in held.results]
    assert ids and ids[0] == "earlier", ids
    assert not {"now_0", "now_1", "now_2", "now_old", "now_summary"} & set(ids), ids
    # A compaction at turn 5 took turns 0-4 out of the window: they may come back.
    compacted = search(index, request(query, window_from_turn=5), now=NOW)
    ids = [r.memory_id for r in compacted.results]
    assert "now_old" not in ids and {"now_0", "now_2"} & set(ids), ids


def test_a_tool_call_is_never_an_item() -> None:
    index = MemoryIndex()
    index.add(memory("edit", "/p/ledger.py\nclass LedgerAmountColumn: cents = BigInteger()",
                     session_id="s_old", extra={"role": "tool", "speaker": "edit"}))  # fmt: skip
    index.add(memory("said", "The ledger column LedgerAmountColumn is now an integer.",
                     session_id="s_old", extra={"role": "assistant"}))  # fmt: skip
    ids = [r.memory_id for r in search(index, request("LedgerAmountColumn BigInteger")).results]
    assert ids == ["said"]
