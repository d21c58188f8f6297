"""Session-level evidence: the turn that opened a session that matches the question.

A question asked in a later session is often answered by what the user said when an
earlier session began: the opening turn states the goal or the situation ("I'm a courier
and my back hurts"), and the later turns of that session, which share the question's
words, talk about it without restating it. A turn's own score sees only its own words, so
the opening turn of a session whose turns match the question well is found by neither the
lexical nor the semantic signal. The session signal adds up the best lexical hits among
each session's first turns and gives that strength to the session's opening turn, which
then joins the candidates (and gets its semantic cosine like any other), in a chat the
user opened with an assistant (figures: docs/history.md).

For a question about the user, the user's later turns of those sessions (up to the same
reach) get a share of the strength times their own semantic score
(:func:`later_user_turns`, :func:`by_own_cosine`): there the user goes on stating the
situation (a detail, a constraint, an answer to the assistant's question), and the cosine
keeps the share for the turns that are about the question.

The session the question is asked in takes no part: the signal looks for an *earlier*
session, and the current one's turns that match best are the conversation the assistant
is having (the window leaves them out of the answer). Counted, it took one of the
strongest places and set the bar for "a full session", so every earlier session looked
weak beside it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from turngraph.workers.recall.memory import Memory
from turngraph.workers.recall.ranking import Ranking

__all__ = ["by_own_cosine", "later_user_turns", "session_signal"]


class _Sessions(Protocol):
    def memory(self, internal: int) -> Memory | None: ...

    def session_turn(self, session_id: str, turn_index: int) -> int | None: ...


def session_signal(
    index: _Sessions,
    lexical_hits: Sequence[tuple[int, float]],
    ranking: Ranking,
    current_session: str | None = None,
) -> dict[int, float]:
    """``internal id -> strength`` of the opening turns of the ``ranking.session_count``
    strongest sessions among ``lexical_hits``: the sum of a session's
    ``ranking.session_hits`` best lexical scores up to turn ``ranking.session_reach``,
    over that many hits as good as the best hit of all (a full session is 1.0). The
    ``current_session`` (the one the question is asked in) is left out of both."""
    if ranking.session_weight <= 0 or ranking.session_count <= 0:
        return {}
    scores: dict[str, list[float]] = {}
    best_hit = 0.0
    for key, score in lexical_hits:
        memory = index.memory(key)
        if memory is None or memory.session_id is None or memory.turn_index is None:
            continue
        if memory.session_id == current_session:
            continue  # an earlier session is wanted; this one is the conversation itself
        best_hit = max(best_hit, score)
        if memory.turn_index <= ranking.session_reach:  # the opening still frames it
            scores.setdefault(memory.session_id, []).append(score)
    strength = {
        session: sum(sorted(found, reverse=True)[: ranking.session_hits])
        for session, found in scores.items()
    }
    if len(strength) < 2:  # the signal tells sessions apart; one session has no rival,
        return {}  # and its turns already compete on their own words
    strongest = sorted(strength, key=strength.__getitem__, reverse=True)[: ranking.session_count]
    if strength[strongest[0]] <= 0:
        return {}
    # a full session: as many hits as the best hit of all (one weak hit lends little)
    full = ranking.session_hits * best_hit
    signal: dict[int, float] = {}
    for session in strongest:
        opener = index.session_turn(session, 0)
        if opener is not None and _opens_with_a_request(index, session, opener):
            signal[opener] = strength[session] / full
    return signal


def _opens_with_a_request(index: _Sessions, session: str, opener: int) -> bool:
    """The user opened the session and the assistant answered: a chat with an assistant,
    whose first turn states what the user wants. Between people (every turn a user's) a
    session opens with a greeting (REALTALK dev R@10 0.535 -> 0.427 without this check)."""
    first = index.memory(opener)
    reply = index.session_turn(session, 1)
    second = index.memory(reply) if reply is not None else None
    return (
        first is not None
        and second is not None
        and first.extra.get("role") == "user"
        and second.extra.get("role") == "assistant"
    )


def later_user_turns(
    index: _Sessions, openers: Mapping[int, float], ranking: Ranking
) -> dict[int, float]:
    """``internal id -> ranking.session_user_share x its session's strength`` for the
    user's turns after the opening one, up to turn ``ranking.session_reach``, of each
    session whose opener ``openers`` (the :func:`session_signal`) lifts."""
    if ranking.session_user_share <= 0:
        return {}
    found: dict[int, float] = {}
    for opener, strength in openers.items():
        memory = index.memory(opener)
        if memory is None or memory.session_id is None:
            continue
        for turn in range(1, ranking.session_reach + 1):
            key = index.session_turn(memory.session_id, turn)
            if key is None:
                continue
            said = index.memory(key)
            if said is not None and said.extra.get("role") == "user":
                found[key] = ranking.session_user_share * strength
    return found


def by_own_cosine(shares: Mapping[int, float], semantic: Mapping[int, float]) -> dict[int, float]:
    """Each share times the turn's own semantic score; a turn without one gets nothing
    (no embedder, or the query embedding missed its budget: the shares need it)."""
    return {key: share * semantic[key] for key, share in shares.items() if semantic.get(key, 0) > 0}
