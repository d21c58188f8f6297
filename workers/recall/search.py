"""One recall search over the in-memory index: request in, ranked and packed results out."""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache, partial

from turngraph.schemas.recall import (
    RecallRequest,
    RecallResponse,
    RecallResult,
    ScoreBreakdown,
)
from turngraph.schemas.scopes import ScopeName, ScopeValue
from turngraph.workers.embeddings.texts import query_text
from turngraph.workers.recall.answers import Act, asks_what_was_settled, is_question
from turngraph.workers.recall.assembly import (
    asks_about_ownership,
    summaries_after,
    summaries_below_their_turns,
)
from turngraph.workers.recall.candidates import (
    best_idf,
    candidates,
    context_scores,
    known_entities,
    search_targets,
    semantic_scores,
    what_was_said,
)
from turngraph.workers.recall.followups import (
    QueryPlan,
    context_boost,
    is_about_the_user,
    plan_query,
    resolve_scopes,
)
from turngraph.workers.recall.index import MemoryIndex
from turngraph.workers.recall.memory import Memory, MemoryKind
from turngraph.workers.recall.scoring import (
    STATUS_MULTIPLIERS,
    Scored,
    fuse,
    is_visible,
    pack,
    recency_of,
    status_multiplier,
)
from turngraph.workers.recall.semantic import QUERY_BUDGET_MAX_S, QUERY_BUDGET_SHARE
from turngraph.workers.recall.sessions import by_own_cosine
from turngraph.workers.recall.speakers import (
    persons_of,
    query_names,
    speaker_multiplier,
    without_names,
)
from turngraph.workers.recall.text import estimate_tokens, truncate_to_tokens
from turngraph.workers.recall.timeq import TimeIntent, parse_time
from turngraph.workers.recall.window import Window

__all__ = ["search"]

_tokens_of = lru_cache(maxsize=4_096)(estimate_tokens)
"""``estimate_tokens`` of the texts a replica packs again and again (memories' texts)."""


def search(
    index: MemoryIndex,
    request: RecallRequest,
    now: datetime | None = None,
) -> RecallResponse:
    """Answer ``request`` from ``index``, ranked by ``index.ranking``. With an embedder on
    the index, the query is embedded within its budget (else the answer is lexical,
    ``degraded`` says why)."""
    started = time.perf_counter()
    ranking = index.ranking
    now = now or datetime.now(UTC)

    def known(gram: str) -> bool:
        return any(index.known_entities(t.partition, [gram]) for t in targets_all)

    targets_all = search_targets(index, request, tuple(ScopeName))
    scopes = resolve_scopes(request.scopes, request.query, known)
    targets = search_targets(index, request, scopes)
    if not targets:
        return _response(request, [], started, degraded=["no_scope_key"])

    intent = parse_time(request.query, now)
    named = query_names(intent.query)
    names = frozenset(n for t in targets for n in index.speaker_names(t.partition, named))
    plan = plan_query(
        without_names(intent.query, persons_of(names)),
        request.conversation_context,
        idf_of=lambda term: best_idf(index, targets, term),
        known_entities=lambda grams: known_entities(index, targets, grams),
        ranking=ranking,
    )
    about_user = is_about_the_user(request.query)
    signals = candidates(index, targets, plan, ranking, request.session_id, about_user)
    degraded: list[str] = []
    semantic = index.semantic
    if semantic is not None and semantic.ready():
        recent = ranking.query_context_turns
        turns = request.conversation_context[-recent:] if recent > 0 else ()
        text = query_text(without_names(intent.query, names), [t.content for t in turns])
        vector, reason = semantic.queries.embed(text, _query_budget_s(request, started))
        if vector is not None:
            signals["semantic"] = semantic_scores(index, semantic, targets, vector, signals)
        elif reason is not None:
            degraded.append(reason)
    if "session_user" in signals:
        signals["session_user"] = by_own_cosine(
            signals["session_user"], signals.get("semantic", {})
        )
    said = what_was_said(index)
    fused = fuse(signals, ranking, said)
    context_match = context_scores(index, targets, plan, fused, ranking.context_scored, said)

    window = Window.of(
        request.session_id, request.conversation_context, request.query, request.window_from_turn
    )
    asked = is_question(request.query)
    score = partial(_score, index, request, now, intent, scopes, plan)
    factors = score(fused, context_match, names, window)
    if asked and ranking.answer_reach > 0:
        factors = _answers_above_questions(
            index, factors, request.max_results * ranking.pack_pool,
            lambda key, semantic: score({key: semantic}, context_match, names, window),
        )  # fmt: skip
    factors.sort(key=lambda f: (f.final, f.decision_record), reverse=True)
    factors = summaries_after(summaries_below_their_turns(factors), ranking.summaries_after)
    pool = [
        Scored(
            key=f.key,
            text=f.memory.text,
            final=f.final,
            is_decision_record=f.decision_record,
            tokens=_tokens_of(f.memory.text),
            source_event_ids=f.memory.source_event_ids,
        )
        for f in factors[: request.max_results * ranking.pack_pool]
    ]
    packed = pack(
        pool,
        max_results=request.max_results,
        max_tokens=request.max_tokens,
        truncate=truncate_to_tokens,
        estimate=_tokens_of,
    )
    by_key = {f.key: f for f in factors}
    results = [
        _result(by_key[item.key], item, signals["lexical"], signals["graph"]) for item in packed
    ]
    return _response(request, results, started, degraded=degraded)


@dataclass(slots=True)
class _Factors:
    """Every factor of one candidate's final score (becomes the ScoreBreakdown)."""

    key: int
    memory: Memory
    label: ScopeValue
    semantic: float
    recency: float
    status: float
    boost: float
    speaker: float
    scope_prior: float
    role: float
    final: float
    decision_record: bool
    answer: float = 1.0


def _score(
    index: MemoryIndex,
    request: RecallRequest,
    now: datetime,
    intent: TimeIntent,
    scopes: Sequence[ScopeName],
    plan: QueryPlan,
    fused: Mapping[int, float],
    context_match: Mapping[int, float],
    speakers_named: frozenset[str],
    window: Window,
) -> list[_Factors]:
    """``final = semantic x recency x status x context boost x speaker x scope prior x role
    x answer``, per
    candidate (``speakers_named``: words of the searched speakers' names in the query);
    superseded memories are dropped unless asked for, and so is anything outside the scopes,
    what the assistant already holds in its ``window`` (``window.py``), a tool call
    (``Memory.is_tool_call``), and an
    ownership context unless the query asks about ownership (``assembly.py``).

    Candidates are visited by falling ``semantic``; once even the largest possible
    multiplier cannot lift one into the packing pool, the rest cannot either (exact).
    """
    ranking = index.ranking
    about_user = is_about_the_user(request.query)
    asked = is_question(request.query)
    settles = ranking.settling_multiplier
    if asked and asks_what_was_settled(request.query):
        settles = ranking.settled_asked_multiplier
    ownership_asked = asks_about_ownership(request.query)
    priors: dict[str, float] = {}  # each scope's prior, by its place in the asked order
    for place, scope in enumerate(scopes):
        priors.setdefault(scope.value, ranking.scope_decay**place)
    pool_size = request.max_results * ranking.pack_pool
    ceiling = max(STATUS_MULTIPLIERS.values()) * (1.0 + ranking.context_boost_max)
    if not plan.context_terms:
        ceiling = max(STATUS_MULTIPLIERS.values())  # no boost without context terms
    if speakers_named:  # no lift when no speaker is named
        ceiling *= max(1.0, ranking.speaker_multiplier, ranking.person_multiplier)
    recency_at = recency_of(intent, now, request.half_life_days, ranking)
    memory_of = index.memory
    include_superseded = request.include_superseded
    pool_finals: list[float] = []  # min-heap of the pool's final scores
    found: list[_Factors] = []
    for key in sorted(fused, key=fused.__getitem__, reverse=True):
        semantic = fused[key]
        if len(pool_finals) >= pool_size and semantic * ceiling < pool_finals[0]:
            break
        memory = memory_of(key)
        if memory is None or not is_visible(memory.status, include_superseded):
            continue
        if window.holds(memory) or memory.is_tool_call:
            continue  # in the assistant's window; a tool's input is no answer
        if not ownership_asked and memory.is_ownership_context:
            continue  # it answers who owns a scope, not what was said (assembly.py)
        label = _scope_label(memory, request, scopes)
        if label is None:
            continue  # defence in depth: never return a memory outside the asked scopes
        recency = recency_at(memory.reference_time)
        status = status_multiplier(memory.status)
        boost = 1.0
        if plan.context_terms:
            shared = len(plan.context_entities.intersection(memory.entities))
            boost = context_boost(shared, context_match.get(key, 0.0), ranking.context_boost_max)
        speaker = speaker_multiplier(
            memory.extra.get("speaker"),
            speakers_named,
            ranking.speaker_multiplier,
            ranking.person_multiplier,
        )
        prior = priors[label]
        role = 1.0
        if about_user and _retold(memory):
            role = ranking.assistant_turn_multiplier
        decision = memory.kind is MemoryKind.DECISION_RECORD or memory.status == "DecisionRecord"
        answer = 1.0
        if asked:
            act = index.act(key)
            if act is Act.SETTLES:
                answer = settles
            elif act is Act.QUESTION:
                answer = ranking.question_turn_multiplier
        final = semantic * recency * status * boost * speaker * prior * role * answer
        found.append(
            _Factors(
                key, memory, label, semantic, recency, status, boost, speaker, prior, role,
                final, decision, answer,
            )
        )  # fmt: skip
        if len(pool_finals) < pool_size:
            heapq.heappush(pool_finals, final)
        elif final > pool_finals[0]:
            heapq.heapreplace(pool_finals, final)
    return found


def _answers_above_questions(
    index: MemoryIndex,
    factors: list[_Factors],
    pool_size: int,
    rescore: Callable[[int, float], list[_Factors]],
) -> list[_Factors]:
    """Each question turn among the ``pool_size`` best gets its answer (``answers.py``):
    the answer is scored with at least the question's relevance (``rescore``: the answer's
    key and that relevance, its factors or none when it may not be returned), and the
    question is placed just below it (its ``answer`` factor lowered, so ``final`` stays
    the product). An unanswered question stays where it is."""
    best = heapq.nlargest(pool_size, factors, key=lambda f: f.final)
    questions = [f for f in best if index.act(f.key) is Act.QUESTION]
    if not questions:
        return factors
    by_key = {f.key: f for f in factors}
    reach = index.ranking.answer_reach
    for question in questions:
        key = index.answer_of(question.key, reach)
        if key is None or (index.act(key) is not Act.SETTLES and not index.ranking.answer_replies):
            continue
        held = by_key.get(key)
        if held is None or held.semantic < question.semantic:
            fresh = rescore(key, question.semantic)
            if not fresh:
                continue
            if held is not None:
                factors.remove(held)
            held = by_key[key] = fresh[0]
            factors.append(held)
        if question.final >= held.final and question.final > 0:  # both 0: nothing to place
            lowered = 0.999 * held.final / question.final
            question.answer *= lowered
            question.final *= lowered
    return factors


_RETELLINGS = frozenset({MemoryKind.SUMMARY, MemoryKind.RECAP})


def _retold(memory: Memory) -> bool:
    """Said by the assistant, or a summary or recap of a span: not the user's own words."""
    return memory.extra.get("role") == "assistant" or memory.kind in _RETELLINGS


def _query_budget_s(request: RecallRequest, started: float) -> float:
    """What the query embedding may take: a share of what is left of the deadline."""
    left_ms = float(request.deadline_ms)
    if request.sent_at_ms is not None:
        left_ms = request.sent_at_ms + request.deadline_ms - time.time() * 1000
    left_ms -= (time.perf_counter() - started) * 1000
    return max(0.0, min(QUERY_BUDGET_MAX_S, QUERY_BUDGET_SHARE * left_ms / 1000))


def _scope_label(
    memory: Memory, request: RecallRequest, scopes: Sequence[ScopeName]
) -> ScopeValue | None:
    for scope in scopes:
        if scope is ScopeName.SESSION and request.session_id:
            if memory.session_id == request.session_id and memory.scope != "user":
                return "session"
        elif scope is ScopeName.WORKSPACE and request.workspace:
            if memory.workspace == request.workspace and memory.scope != "user":
                return "workspace"
        elif (
            scope is ScopeName.USER
            and request.user
            and memory.user == request.user
            and memory.scope == "user"
        ):
            return "user"
    return None


def _result(
    factors: _Factors, item: Scored, lexical: Mapping[int, float], graph: Mapping[int, float]
) -> RecallResult:
    memory = factors.memory
    breakdown = ScoreBreakdown(
        final_score=round(factors.final, 6),
        semantic_score=round(factors.semantic, 6),
        recency_multiplier=round(factors.recency, 6),
        status_multiplier=factors.status,
        lexical_score=round(lexical.get(item.key, 0.0), 6),
        graph_score=round(graph.get(item.key, 0.0), 6),
        context_boost=round(factors.boost, 6),
        speaker_multiplier=factors.speaker,
        scope_multiplier=round(factors.scope_prior, 6),
        role_multiplier=factors.role,
        answer_multiplier=round(factors.answer, 6),
    )
    return RecallResult(
        text=item.text,
        kind=memory.kind.value,
        topic=memory.topic,
        status=memory.status,
        created_at=memory.created_at.isoformat(),
        source_created_at=(
            memory.source_created_at.isoformat() if memory.source_created_at else None
        ),
        scope=factors.label,
        score=breakdown,
        tokens=item.tokens,
        source_event_ids=list(item.source_event_ids),
        memory_id=memory.id,
    )


def _response(
    request: RecallRequest, results: list[RecallResult], started: float, degraded: list[str]
) -> RecallResponse:
    return RecallResponse(
        request_id=request.request_id,
        success=True,
        results=results,
        result_count=len(results),
        total_tokens=sum(r.tokens for r in results),
        took_ms=round((time.perf_counter() - started) * 1000, 3),
        degraded=degraded,
    )
