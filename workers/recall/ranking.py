"""Every number that decides recall's order, as one frozen value with named presets.

A :class:`Ranking` is given to the index when it is built (``MemoryIndex(ranking=...)``:
the BM25 weights of the postings depend on it) and every search of that index uses it.
The recall worker takes the preset its ``Settings.recall_ranking`` names; benches and the
tuning loop pass a preset or a :meth:`Ranking.with_values` copy of one. Nothing is
changed by assigning module attributes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from turngraph.schemas.errors import ConfigurationError

__all__ = ["DEFAULT", "PRESETS", "RANK_FUSION", "Ranking", "RankingValueError", "preset"]


class RankingValueError(ConfigurationError):
    """A ranking preset or override names no setting, or gives a value of the wrong kind."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Ranking:
    """The ranking's settings (``docs/recall.md`` says how each was chosen)."""

    # -- lexical signal (BM25) ------------------------------------------------------
    bm25_k1: float = 1.2
    """BM25 term-frequency saturation."""
    bm25_b: float = 0.3
    """BM25 document-length normalisation. Lower than the usual 0.75: chat turns vary from
    "Hey Kate!" to paragraphs, and 0.75 lets greetings that name someone outrank the turns
    about them (REALTALK R@10 +1.5 points, our own set +2.9, lexical only)."""
    postings_budget: int = 3_000
    """Postings one query may walk to generate lexical candidates (newest first)."""
    rescore_candidates: int = 100
    """Candidates that terms too common to walk still rescore (by binary search)."""

    # -- candidates -----------------------------------------------------------------
    lexical_candidates: int = 60
    """Lexical candidates per partition entering the fusion."""
    graph_candidates: int = 40
    """Entity (graph) candidates per partition entering the fusion."""
    neighbour_entities: int = 5
    """Co-mentioned entities added to the graph signal (one hop), at ``neighbour_weight``."""
    neighbour_weight: float = 0.3
    chain_sources: int = 10
    """Top lexical hits whose neighbouring turns join as episode-chain candidates."""
    chain_decay: float = 0.6
    """A neighbouring turn's chain score relative to the hit it neighbours."""
    distilled_graph_share: float = 0.0
    """What an entity hit of a span digest (summary, recap) counts in the graph signal: it
    holds the entities of every turn of its span, so it matches any entity the span named
    (graph score 0.40 on average against 0.07-0.14 for turns in the top 10), and then fills
    the top 10 with one session. 0: its turns carry the entities. Decision records keep
    theirs (curated; the seed ranks them first for their decision)."""

    session_weight: float = 2.0
    """Fusion weight of the session signal (``sessions.py``): the opening turn of a session
    whose first turns match the question gets the session's strength. RealMem dev, re-run
    from a capture: R@10 0.274 -> 0.371, session hit@10 0.713 -> 0.719 (docs/history.md).
    2.5 buys RealMem session hit@10 (+1.4 dev) for our own dev set's first places (R@5
    0.769 -> 0.712: unrelated openers above the answer). 0 turns it off."""
    session_user_share: float = 0.15
    """For a question about the user, the share of a strong session's strength its user's
    later turns up to ``session_reach`` get, times their own semantic score
    (``sessions.later_user_turns``; fusion weight ``session_weight``). RealMem R@10 / session
    hit@10, re-run from captures: dev 0.396 / 0.761 -> 0.413 / 0.758, test 0.467 / 0.775 ->
    0.483 / 0.772; own dev and REALTALK unchanged (docs/history.md). 0 turns it off."""
    session_count: int = 10
    """Strongest sessions whose opening turns get the session signal."""
    session_hits: int = 3
    """Best lexical hits of a session summed into its strength."""
    session_reach: int = 9
    """Only hits up to this turn index count toward a session's strength: further into a
    long session the topic has moved on from what its opening turn said. 6 -> 9, RealMem
    dev with context 0.393/0.744 -> 0.396/0.753, without 0.376/0.728 -> 0.383/0.736; own
    dev R@10 and R@5 unchanged (docs/history.md)."""

    # -- fusion ---------------------------------------------------------------------
    lexical_weight: float = 1.0
    graph_weight: float = 0.8
    chain_weight: float = 0.5
    semantic_weight: float = 0.5
    """How much each candidate list counts in the fusion."""
    fusion_score_share: float = 1.0
    """Share of the fused relevance taken from the signals' normalised scores (CombSUM);
    the rest is rank-based (RRF). Ranks alone are robust but flat; scores keep the
    contrast between a strong match and a weak one, which must survive the multipliers."""
    rrf_k: int = 10
    """Reciprocal-rank-fusion constant. Smaller than the usual 60 on purpose: the fused
    score is multiplied by recency, so it must still separate rank 1 from rank 10."""

    # -- multipliers ----------------------------------------------------------------
    recency_floor: float = 0.8
    """Lowest recency multiplier: a memory of any age keeps 80 % of its relevance, so a
    clearly relevant old memory is never buried under a weakly related new one, while of
    two near-equals the newer wins (the bare product, floor 0, lost 2-5 points R@10 at
    real dates)."""
    latest_floor: float = 0.4
    """Floor when the query asks for "the latest" / "most recent": new memories count more."""
    outside_window: float = 0.5
    """Multiplier of a memory outside the time window the query names ("last week")."""
    speaker_multiplier: float = 1.6
    """Multiplier of a memory spoken by a person the query names: 1.15-2.0 all helped on
    the development sets, R@10 +0.8-1.1 points at real dates from 1.6 on."""
    person_multiplier: float = 3.0
    """``speaker_multiplier`` when the speaker named is a person, not a role ("user",
    "assistant": ``speakers.ROLE_WORDS``); the person's name is then also left out of the
    lexical query. REALTALK dev R@10 at real dates 0.537 -> 0.562 (1.6 and the name kept:
    before; 2.0 0.549, 2.5 0.554, 4.0 0.566); role names keep 1.6 (docs/history.md)."""
    scope_decay: float = 0.95
    """Scope order as a prior: each later scope in the request's order weighs 5 % less."""
    assistant_turn_multiplier: float = 0.7
    """Multiplier of a turn the assistant said, and of a summary or recap, when the
    question is in the first person singular ("my knee", "I'm planning",
    ``followups.is_about_the_user``): a question about the user is answered by what the
    user said about themselves, which the assistant's longer replies and the summaries
    only retell. Questions about shared work ("what did we pick") or about someone else
    keep them at 1.0. RealMem dev, re-run from a capture: R@10 0.255 -> 0.274, session
    hit@10 0.736 -> 0.713 (0.5: 0.281 and 0.694, a worse trade); own dev and REALTALK dev
    unchanged (docs/history.md)."""

    settling_multiplier: float = 1.3
    """Multiplier of what settles something (a decision, confirmation, stated preference,
    decision record: ``answers.py``) when the query is a question: the answer above the
    question (issue 37)."""
    settled_asked_multiplier: float = 2.0
    """``settling_multiplier`` when the question asks what was decided or preferred
    ("which X did we pick", "how does the user want Y"): the decision or stated preference
    is the answer, a turn that only shares the topic's words is not."""
    question_turn_multiplier: float = 0.6
    """Multiplier of a turn made only of questions when the query is a question: it shares
    the query's words and answers nothing (its answer is lifted and placed above it)."""
    answer_reach: int = 4
    """Later turns of its session searched for a question turn's answer (0: no pairing)."""
    answer_replies: int = 1
    """1: a question turn nothing settles is paired with the reply that follows it; 0:
    only with a turn that settles it."""

    # -- conversation context -------------------------------------------------------
    context_turns: int = 6
    """Recent turns of ``conversation_context`` considered (coreferences resolve within 2-3)."""
    context_terms: int = 8
    """Key terms taken from the context to expand a follow-up query."""
    expansion_weight: float = 0.5
    """Weight of a context term in the expanded query (the query's own terms weigh 1.0)."""
    context_entity_weight: float = 0.5
    """Weight of a context entity in the graph signal of a follow-up."""
    context_boost_max: float = 0.15
    """Largest boost for a memory tied to the session's recent turns (the seed's 15 %)."""
    query_context_turns: int = 1
    """Recent turns of ``conversation_context`` the query is embedded after (0: the query
    alone), as a memory is embedded after the previous turn of its session
    (``workers/embeddings/texts.py``): the static half reads them, the contextual half the
    query alone."""
    context_scored: int = 40
    """Best fused candidates checked against the session's key terms (the boost is small,
    so it can only reorder near the top)."""

    # -- packing --------------------------------------------------------------------
    summaries_after: int = 2
    """No summary among this many best results: the turns (facts, decisions) lead and a
    summary follows them (``assembly.py``; RealMem dev, docs/history.md)."""
    pack_pool: int = 3
    """Scored candidates kept per requested result before de-duplication and packing."""

    def signal_weight(self, signal: str) -> float:
        """The fusion weight of one candidate list (1.0 for one not named here)."""
        return {
            "lexical": self.lexical_weight,
            "graph": self.graph_weight,
            "chain": self.chain_weight,
            "semantic": self.semantic_weight,
            "session": self.session_weight,
            "session_user": self.session_weight,
        }.get(signal, 1.0)

    def with_values(self, **values: float) -> Ranking:
        """A copy with the given settings changed; :class:`RankingValueError` names an
        unknown setting or a value of the wrong kind (an integer setting given 2.5)."""
        known = {f.name: f for f in dataclasses.fields(self)}
        typed: dict[str, float | int] = {}
        for name, value in values.items():
            if name not in known:
                raise RankingValueError(
                    f"no ranking setting {name!r}; known: {', '.join(sorted(known))}"
                )
            if getattr(self, name).__class__ is int:
                if float(value) != int(value):
                    raise RankingValueError(f"ranking setting {name!r} takes a whole number")
                typed[name] = int(value)
            else:
                typed[name] = float(value)
        return dataclasses.replace(self, **typed)  # type: ignore[arg-type]

    @staticmethod
    def parse(assignments: str, base: Ranking | None = None) -> Ranking:
        """``"bm25_b=0.75,chain_weight=0"`` applied to ``base`` (the default preset)."""
        values: dict[str, float] = {}
        for item in filter(None, (part.strip() for part in assignments.split(","))):
            name, _, number = item.partition("=")
            try:
                values[name.strip()] = float(number)
            except ValueError:
                raise RankingValueError(
                    f"expected name=number in the ranking override, got {item!r}"
                ) from None
        return (base or DEFAULT).with_values(**values)


DEFAULT = Ranking()
"""The product's ranking."""

RANK_FUSION = DEFAULT.with_values(fusion_score_share=0.0)
"""Rank-based fusion (RRF) only, for comparison in the tuning loop."""

PRESETS: Mapping[str, Ranking] = MappingProxyType({"default": DEFAULT, "rank_fusion": RANK_FUSION})
"""The named presets ``Settings.recall_ranking`` and the benches choose from."""


def preset(name: str) -> Ranking:
    """The preset called ``name``; :class:`RankingValueError` lists the known ones."""
    try:
        return PRESETS[name]
    except KeyError:
        raise RankingValueError(
            f"no ranking preset {name!r}; known: {', '.join(sorted(PRESETS))}"
        ) from None
