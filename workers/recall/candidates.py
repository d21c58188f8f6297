"""The candidates of one recall search: which partitions it reads, and each signal's
scores (lexical, graph, episode chain, session, semantic, the context match), every one
normalised over what was said (``what_was_said``, docs/recall.md)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import islice

from turngraph.schemas.recall import RecallRequest
from turngraph.schemas.scopes import ScopeName
from turngraph.workers.recall.followups import QueryPlan
from turngraph.workers.recall.index import Hit, MemoryIndex, PartitionKey, idf
from turngraph.workers.recall.postings import restated_key
from turngraph.workers.recall.ranking import Ranking
from turngraph.workers.recall.scoring import normalise
from turngraph.workers.recall.semantic import SemanticSignal
from turngraph.workers.recall.sessions import later_user_turns, session_signal
from turngraph.workers.recall.vectors import Vector

__all__ = [
    "Target", "best_idf", "candidates", "context_scores", "known_entities", "search_targets",
    "semantic_scores", "what_was_said",
]  # fmt: skip


@dataclass(frozen=True, slots=True)
class Target:
    """One partition a search reads (a workspace's or the user's)."""

    partition: PartitionKey
    session_id: str | None  # restrict to this session (session scope without workspace)


def search_targets(
    index: MemoryIndex, request: RecallRequest, scopes: Iterable[ScopeName]
) -> list[Target]:
    """The partitions the asked ``scopes`` read (a session scope without the workspace
    reads the workspace's partition, restricted to the session)."""
    wanted = set(scopes)
    targets: list[Target] = []
    if ScopeName.WORKSPACE in wanted and request.workspace:
        targets.append(Target(("workspace", request.workspace), None))
    elif ScopeName.SESSION in wanted and request.session_id and request.workspace:
        targets.append(Target(("workspace", request.workspace), request.session_id))
    if ScopeName.USER in wanted and request.user:
        targets.append(Target(("user", request.user), None))
    return [t for t in targets if index.has_partition(t.partition)]


def best_idf(index: MemoryIndex, targets: Sequence[Target], term: str) -> float:
    """How specific ``term`` is in the searched partitions (its best idf; 0 if unseen)."""
    best = 0.0
    for target in targets:
        df, n = index.doc_frequency(target.partition, term)
        if df:
            best = max(best, idf(n, df))
    return best


def known_entities(
    index: MemoryIndex, targets: Sequence[Target], grams: Iterable[str]
) -> list[str]:
    """Which ``grams`` name an entity of what was said in the searched partitions, in
    their order."""
    grams = list(grams)
    found: dict[str, None] = {}
    for target in targets:
        found.update(dict.fromkeys(index.known_entities(target.partition, grams)))
    return list(found)


def candidates(
    index: MemoryIndex,
    targets: Sequence[Target],
    plan: QueryPlan,
    ranking: Ranking,
    current_session: str | None = None,
    about_user: bool = False,
) -> dict[str, dict[int, float]]:
    """Candidate scores per signal, each normalised so its best candidate has 1.0
    (``current_session``: the one the question is asked in, for the session signal;
    ``about_user``: a question about the user, whose later turns of the strong sessions
    join as ``session_user``, to be weighed by their cosine: ``sessions.by_own_cosine``)."""
    lexical_hits: list[Hit] = []
    graph_hits: list[Hit] = []
    for target in targets:
        lexical_hits += index.lexical(
            target.partition,
            _shared_idf_terms(index, targets, target, plan.terms),
            limit=ranking.lexical_candidates,
            session_id=target.session_id,
        )
        entities = dict(plan.entities)
        seeds = [key for key, weight in plan.entities.items() if weight >= 1.0]
        for name in index.entity_neighbours(target.partition, seeds, ranking.neighbour_entities):
            entities.setdefault(name, ranking.neighbour_weight)
        graph_hits += index.entity_hits(
            target.partition,
            entities,
            limit=ranking.graph_candidates,
            session_id=target.session_id,
            distilled_share=ranking.distilled_graph_share,
        )
    lexical_hits.sort(key=lambda hit: hit[1], reverse=True)
    graph_hits.sort(key=lambda hit: hit[1], reverse=True)
    chain: dict[int, float] = {}
    lexical_keys = {key for key, _ in lexical_hits}
    for key, score in islice(_stated(index, lexical_hits), max(0, ranking.chain_sources)):
        for neighbour in index.turn_neighbours(key):
            if neighbour not in lexical_keys:
                chain[neighbour] = max(chain.get(neighbour, 0.0), ranking.chain_decay * score)
    session_ids = {t.session_id for t in targets if t.session_id}
    if session_ids:
        chain = {k: v for k, v in chain.items() if _in_sessions(index, k, session_ids)}
    said = what_was_said(index)
    lexical = normalise(dict(lexical_hits), said)
    top_lexical = next(_stated(index, lexical_hits), (0, 0.0))[1]  # the hits are sorted
    signals = {
        "lexical": lexical,
        "graph": normalise(dict(graph_hits), said),
        "chain": {k: v / top_lexical for k, v in chain.items()} if top_lexical else {},
    }
    session = session_signal(index, lexical_hits, ranking, current_session)
    if session:
        signals["session"] = session
        if about_user:
            users = later_user_turns(index, session, ranking)
            if users:
                signals["session_user"] = users
    return signals


def what_was_said(index: MemoryIndex) -> Callable[[int], bool]:
    """Whether a candidate is what was said (``Memory.in_statistics``), not a restatement.
    Every normaliser is taken over what was said, so a turn scores as it would with no
    restatement in the index; a restatement is placed among the turns by its own score
    (``Partition``, docs/recall.md)."""
    return index.said


def _stated(index: MemoryIndex, hits: Iterable[Hit]) -> Iterator[Hit]:
    """``hits`` without the restatements (``Memory.in_statistics``), in their order, as
    they are asked for: a summary, recap or ownership context has no neighbouring turns,
    so it takes no chain-source place from a turn. Before, a digest among the best
    lexical hits pushed the last source out and its neighbour lost the chain score it has
    with distillation off (docs/history.md)."""
    return (hit for hit in hits if index.said(hit[0]))


def _shared_idf_terms(
    index: MemoryIndex, targets: Sequence[Target], target: Target, terms: Mapping[str, float]
) -> Mapping[str, float]:
    """Query weights for one partition's walk, rescaled so that its scores use the idf of
    the searched partitions together: a user partition of a few promoted memories would
    otherwise rate every word as common and lose to any workspace turn."""
    if len({t.partition for t in targets}) < 2:
        return terms
    scaled: dict[str, float] = {}
    for term, weight in terms.items():
        stats = [index.doc_frequency(t.partition, term) for t in targets]
        df, n = index.doc_frequency(target.partition, term)
        total_df, total_n = sum(d for d, _ in stats), sum(m for _, m in stats)
        own = idf(n, df) if df else 0.0
        scaled[term] = weight * idf(total_n, total_df) / own if own > 0 else weight
    return scaled


def _in_sessions(index: MemoryIndex, key: int, session_ids: set[str]) -> bool:
    memory = index.memory(key)
    return memory is not None and memory.session_id in session_ids


def semantic_scores(
    index: MemoryIndex,
    semantic: SemanticSignal,
    targets: Sequence[Target],
    vector: Vector,
    signals: Mapping[str, Mapping[int, float]],
) -> dict[int, float]:
    """Nearest memories of the searched partitions, plus the cosine of every other
    candidate, min-max normalised (``semantic.candidates``)."""
    partitions = [
        (t.partition, _session_filter(index, t.session_id) if t.session_id else None)
        for t in targets
    ]
    restated = [(restated_key(partition), keep) for partition, keep in partitions]
    pool = {key for scores in signals.values() for key in scores}
    return semantic.candidates(partitions, vector, pool, restated)


def _session_filter(index: MemoryIndex, session_id: str) -> Callable[[int], bool]:
    return lambda key: _in_sessions(index, key, {session_id})


def context_scores(
    index: MemoryIndex,
    targets: Sequence[Target],
    plan: QueryPlan,
    fused: Mapping[int, float],
    scored: int,
    said: Callable[[int], bool],
) -> dict[int, float]:
    """How well the ``scored`` best candidates of what was said (and the restatements
    ranked among them) match the session's recent key terms, normalised over what was
    said."""
    if not plan.context_terms or not fused:
        return {}
    ranked = sorted(fused, key=fused.__getitem__, reverse=True)
    top: list[int] = []
    places = 0
    for key in ranked:
        if said(key):
            if places == scored:
                break
            places += 1
        top.append(key)
    scores: dict[int, float] = {}
    for target in targets:
        scores.update(index.term_scores(target.partition, plan.context_terms, top))
    return normalise(scores, said)
