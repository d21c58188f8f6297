"""Follow-up questions and scope choice: the plan seed's query rewriting, entity session
memory and document bias, done with rules inside the deadline (no LLM on this path).

- A query full of references ("it", "that", "the same rule", "which comes first") is
  expanded with the key terms and entities of the recent turns in
  ``conversation_context``, at a lower weight than the query's own words.
- Memories tied to what the session already discussed get a small, bounded boost.
- ``auto`` scope picks the scopes to search from the wording of the query.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from turngraph.schemas.recall import ConversationTurn
from turngraph.schemas.scopes import ScopeName
from turngraph.workers.recall.ranking import Ranking
from turngraph.workers.recall.text import entity_ngrams, tokenize

__all__ = [
    "FOLLOW_UP_MAX_TERMS", "FOLLOW_UP_OPENERS", "PREFERENCE_EXPANSION_WEIGHT", "REFERENCE_WORDS",
    "SHORT_QUERY_TERMS", "QueryPlan", "auto_scopes", "context_boost", "is_about_the_user",
    "is_follow_up", "is_project_specific", "is_user_directed", "plan_query", "resolve_scopes",
]  # fmt: skip

REFERENCE_WORDS = frozenset(
    """
    it its that this those these they them their same which both either one ones there then
    above former latter other others
    """.split()  # noqa: SIM905
)
"""Words that point back into the conversation instead of naming something."""

FOLLOW_UP_OPENERS = ("and ", "what about", "how about", "so ", "also ", "but ", "then ", "ok ")

SHORT_QUERY_TERMS = 3
"""A query with this few content terms is treated as a follow-up when context exists."""

FOLLOW_UP_MAX_TERMS = 5
"""A query with more content terms than this says what it is about: its reference words
("it", "that") are the chat's ordinary speech, not gaps the context must fill. Expanded
with the context's terms, such a query was diluted (RealMem dev, 356 questions asked as
long chat turns, 84 % with 8+ content terms: R@10 with context 0.374 -> 0.387, session
hit@10 0.733 -> 0.739; our own follow-ups have 1-3 terms and are unchanged)."""

_WORD = re.compile(r"[a-z']+")
_IDENTIFIER = re.compile(r"[A-Za-z0-9]+[_./-][A-Za-z0-9_./-]+|[a-z]+[A-Z][A-Za-z0-9]*|#\d+")
_USER_WORDS = frozenset(
    """
    prefer prefers preferred preference preferences terminology term terms call naming style
    styles convention conventions habit habits usually usual workflow like likes setup
    set-up settings config configuration dotfiles defaults default
    """.split()  # noqa: SIM905
)
_PROJECT_WORDS = frozenset(
    """
    repo repository project codebase branch pr pull commit build ci pipeline deploy
    deployment test tests migration service module file function class endpoint bug issue
    release schema config configuration api database queue worker
    """.split()  # noqa: SIM905
)


def is_follow_up(query: str) -> bool:
    """True when the query leans on the conversation: too short to stand alone, or short
    with references or a follow-up opener ("and …", "what about …")."""
    lower = query.lower().strip()
    terms = len(set(tokenize(query)))
    if terms <= SHORT_QUERY_TERMS:
        return True
    words = set(_WORD.findall(lower))
    leans = bool(words & REFERENCE_WORDS) or lower.startswith(FOLLOW_UP_OPENERS)
    return leans and terms <= FOLLOW_UP_MAX_TERMS


_FIRST_PERSON = re.compile(
    r"\b(?:i|i'm|i've|i'd|i'll|my|me|mine|myself|the\s+user(?:'s)?)\b", re.IGNORECASE
)


def is_about_the_user(query: str) -> bool:
    """The question speaks in the first person singular ("I", "my", "me") or of "the
    user" (an assistant asking what the user wants)."""
    return _FIRST_PERSON.search(query) is not None


def is_user_directed(query: str) -> bool:
    """About the user's own preferences or terminology ("my preferences", "what do I call")."""
    words = set(_WORD.findall(query.lower()))
    return bool(words & {"my", "i", "me"}) and bool(words & _USER_WORDS)


PREFERENCE_EXPANSION_WEIGHT = 1.0
"""Weight of the word "preference" added to a question about the user's own ways: stated
and promoted preferences say "preference", the question says "prefer", "like", "setup"."""

_PREFERENCE_TERMS = tuple(tokenize("preference preferences"))


def is_project_specific(query: str, known_entity: Callable[[str], bool]) -> bool:
    """Names code, a project artefact, or an entity known in the workspace."""
    if _IDENTIFIER.search(query):
        return True
    if set(_WORD.findall(query.lower())) & _PROJECT_WORDS:
        return True
    return any(known_entity(gram) for gram in entity_ngrams(query))


def auto_scopes(query: str, known_entity: Callable[[str], bool]) -> tuple[ScopeName, ...]:
    """``auto``: user first for personal questions, session and workspace for project ones,
    otherwise everything in the default order session, workspace, user."""
    if is_user_directed(query):
        return (ScopeName.USER, ScopeName.SESSION, ScopeName.WORKSPACE)
    if is_project_specific(query, known_entity):
        return (ScopeName.SESSION, ScopeName.WORKSPACE)
    return (ScopeName.SESSION, ScopeName.WORKSPACE, ScopeName.USER)


def resolve_scopes(
    requested: Sequence[ScopeName], query: str, known_entity: Callable[[str], bool]
) -> tuple[ScopeName, ...]:
    """Expand ``auto`` in place and drop repeats, keeping the order."""
    ordered: list[ScopeName] = []
    for scope in requested:
        expanded = auto_scopes(query, known_entity) if scope is ScopeName.AUTO else (scope,)
        for item in expanded:
            if item not in ordered:
                ordered.append(item)
    return tuple(ordered)


@dataclass(slots=True)
class QueryPlan:
    """What to look for: weighted terms and entities, plus what the session discussed."""

    terms: dict[str, float]
    entities: dict[str, float]
    follow_up: bool = False
    context_terms: dict[str, float] = field(default_factory=dict)
    context_entities: set[str] = field(default_factory=set)


def plan_query(
    query: str,
    context: Sequence[ConversationTurn],
    *,
    idf_of: Callable[[str], float],
    known_entities: Callable[[Iterable[str]], list[str]],
    ranking: Ranking,
) -> QueryPlan:
    """Analyse the query; with context, expand a follow-up and note the session's topics.

    ``idf_of`` rates how specific a term is in the searched partitions (common context
    words make poor expansions); ``known_entities`` filters n-grams to real entity keys.
    """
    terms = dict.fromkeys(tokenize(query), 1.0)
    if is_user_directed(query):
        for term in _PREFERENCE_TERMS:
            terms.setdefault(term, PREFERENCE_EXPANSION_WEIGHT)
    entities = dict.fromkeys(known_entities(entity_ngrams(query)), 1.0)
    plan = QueryPlan(terms=terms, entities=entities)
    recent = list(context)[-ranking.context_turns :]
    if not recent:
        return plan
    plan.follow_up = is_follow_up(query)
    plan.context_terms = _key_terms(recent, idf_of, ranking.context_terms)
    context_text = " ".join(turn.content for turn in recent)
    context_entities = known_entities(entity_ngrams(context_text))
    plan.context_entities = set(context_entities)
    if plan.follow_up:
        for term, strength in plan.context_terms.items():
            weight = ranking.expansion_weight * strength
            plan.terms[term] = max(plan.terms.get(term, 0.0), weight)
        for key in context_entities:
            plan.entities.setdefault(key, ranking.context_entity_weight)
    return plan


def _key_terms(
    turns: Sequence[ConversationTurn], idf_of: Callable[[str], float], count: int
) -> dict[str, float]:
    """The most specific terms of the recent turns, the latest and the user's counting more."""
    scores: dict[str, float] = {}
    for age, turn in enumerate(reversed(turns)):
        position = 1.0 / (1 + 0.5 * age)
        role = 1.0 if turn.role == "user" else 0.7
        for term in dict.fromkeys(tokenize(turn.content)):
            specificity = idf_of(term)
            if specificity > 0:
                scores[term] = scores.get(term, 0.0) + position * role * specificity
    best = sorted(scores.items(), key=lambda item: item[1], reverse=True)[:count]
    if not best:
        return {}
    top = best[0][1]
    return {term: score / top for term, score in best}


def context_boost(shared_entities: int, context_match: float, boost_max: float) -> float:
    """``1 + boost_max x tie`` (``Ranking.context_boost_max``) where ``tie`` in [0, 1]
    grows with shared entities and with how well the memory matches the context's key
    terms (normalised 0..1)."""
    tie = min(1.0, 0.5 * shared_entities + 0.5 * max(0.0, min(1.0, context_match)))
    return 1.0 + boost_max * tie
