"""SPEC §7 scoring: fusion of candidate signals, recency, status, de-duplication, packing.

``final = semantic x recency_multiplier x status_multiplier x context_boost x
speaker_multiplier`` where ``semantic`` is the normalised fused relevance of the candidate
signals (lexical, graph, episode chain, and semantic vectors when the index has an
embedder), ``recency_multiplier`` is the time factor: relevance first, so the decay is
floored (``Ranking.recency_floor``) and only reorders near-equals; time named in the query
replaces it (:func:`time_multiplier`); ``speaker_multiplier`` lifts what a person the
query names said (``speakers.py``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import TypeVar

from turngraph.workers.recall.ranking import Ranking
from turngraph.workers.recall.text import words
from turngraph.workers.recall.timeq import TimeIntent, TimeMode

__all__ = [
    "DEDUP_JACCARD", "STATUS_MULTIPLIERS", "SUPERSEDED", "Deduplicator", "K", "Scored",
    "fuse", "is_visible", "merge_provenance", "near_duplicate", "normalise", "pack",
    "rank_key", "recency_multiplier", "recency_of", "rrf_fuse", "status_multiplier",
    "time_multiplier",
]  # fmt: skip

STATUS_MULTIPLIERS: Mapping[str, float] = {
    "DecisionRecord": 1.1,
    "Active": 1.0,
    "Superseded": 0.4,
}
"""The bridge seed's multipliers; any other status (Draft, Final…) counts as 1.0."""

SUPERSEDED = "Superseded"

DEDUP_JACCARD = 0.85
"""Two results whose word sets overlap this much are the same memory said twice."""

K = TypeVar("K", bound=Hashable)

_LN2 = math.log(2)


def recency_multiplier(reference: datetime, now: datetime, half_life_days: float) -> float:
    """``exp(-ln 2 x age_days / half_life_days)``; a future timestamp counts as age 0."""
    age_days = max(0.0, (now - reference).total_seconds() / 86_400.0)
    return math.exp(-_LN2 * age_days / half_life_days)


def time_multiplier(
    intent: TimeIntent,
    reference: datetime,
    now: datetime,
    half_life_days: float,
    ranking: Ranking,
) -> float:
    """The recency factor of one memory under the query's time intent (:func:`recency_of`)."""
    return recency_of(intent, now, half_life_days, ranking)(reference)


def recency_of(
    intent: TimeIntent, now: datetime, half_life_days: float, ranking: Ranking
) -> Callable[[datetime], float]:
    """The recency factor under one query's time intent, as a function of a memory's
    reference time: 1.0 when time does not matter, ``ranking.outside_window`` outside a
    named window, else the floored decay (``recency_multiplier``). Made once per search,
    which asks it of every candidate it scores."""
    if intent.mode is TimeMode.NEUTRAL:
        return lambda reference: 1.0
    if intent.mode is TimeMode.WINDOW:
        outside = ranking.outside_window
        return lambda reference: 1.0 if intent.contains(reference) else outside
    floor = ranking.latest_floor if intent.mode is TimeMode.LATEST else ranking.recency_floor
    span = 1.0 - floor

    def decayed(reference: datetime) -> float:
        return floor + span * recency_multiplier(reference, now, half_life_days)

    return decayed


def status_multiplier(status: str) -> float:
    return STATUS_MULTIPLIERS.get(status, 1.0)


def is_visible(status: str, include_superseded: bool) -> bool:
    return include_superseded or status != SUPERSEDED


def rrf_fuse(
    ranked: Mapping[str, Sequence[K]], ranking: Ranking, over: Callable[[K], bool] | None = None
) -> dict[K, float]:
    """Weighted reciprocal rank fusion, normalised so the best candidate scores 1.0.
    With ``over``, an item's rank counts only the items ``over`` accepts before it: an
    item it refuses (a restatement) takes a rank among them and moves none."""
    fused: dict[K, float] = {}
    for signal, items in ranked.items():
        weight = ranking.signal_weight(signal)
        accepted = 0
        for item in items:
            counted = over is None or over(item)
            rank = accepted + 1
            accepted += counted
            fused[item] = fused.get(item, 0.0) + weight / (ranking.rrf_k + rank)
    return normalise(fused, over)


def fuse(
    signals: Mapping[str, Mapping[K, float]],
    ranking: Ranking,
    over: Callable[[K], bool] | None = None,
) -> dict[K, float]:
    """Fused relevance: RRF over each signal's ranking, blended (by
    ``ranking.fusion_score_share``) with the weighted sum of the signals' max-normalised
    scores; the best candidate ``over`` accepts gets 1.0 (``normalise``)."""
    share = ranking.fusion_score_share
    by_rank: dict[K, float] = {}
    if share < 1.0:
        ranked = {
            name: sorted(scores, key=scores.__getitem__, reverse=True)
            for name, scores in signals.items()
        }
        by_rank = rrf_fuse(ranked, ranking, over)
    by_score: dict[K, float] = {}
    for name, scores in signals.items():
        weight = ranking.signal_weight(name)
        for item, score in scores.items():
            by_score[item] = by_score.get(item, 0.0) + weight * score
    by_score = normalise(by_score, over)
    if share >= 1.0:
        return by_score
    return normalise(
        {
            item: (1 - share) * by_rank.get(item, 0.0) + share * by_score.get(item, 0.0)
            for item in by_score
        },
        over,
    )


def normalise(scores: Mapping[K, float], over: Callable[[K], bool] | None = None) -> dict[K, float]:
    """Divide by the maximum, so the best is 1.0 (empty and all-zero stay as they are).
    With ``over``, the maximum is taken over the keys it accepts (what was said: a
    restatement scored above every turn gets more than 1.0, and no turn's score moves
    for it); over all keys when it accepts none. ``over`` is asked about the best key
    only, and about every key when that one is a restatement (the same maximum, without
    a call per key: a search normalises ~300 scores)."""
    if not scores:
        return {}
    best = max(scores, key=scores.__getitem__)  # the first key with the highest score
    top = scores[best]
    if over is not None and not over(best):  # a restatement leads: what was said sets it
        top = max((v for k, v in scores.items() if over(k)), default=0.0)
        if top <= 0:
            top = scores[best]
    return {k: v / top for k, v in scores.items()} if top > 0 else dict(scores)


SIGNATURE_CACHE = 4_096
"""Texts whose word set :class:`Deduplicator` keeps (a replica packs the same memories
again and again)."""


@lru_cache(maxsize=SIGNATURE_CACHE)
def _signature(text: str) -> frozenset[str]:
    """The text's word set (:func:`~turngraph.workers.recall.text.words`, any script); a
    text with no word at all (emoji, punctuation) is its own signature, so two such texts
    are duplicates only when they are the same."""
    return frozenset(words(text)) or frozenset((" ".join(text.split()),))


def near_duplicate(a: frozenset[str], b: frozenset[str]) -> bool:
    if not a or not b:
        return a == b
    small, large = sorted((len(a), len(b)))
    if small < DEDUP_JACCARD * large:
        return False  # sizes alone rule it out: Jaccard <= small / large
    return len(a & b) / len(a | b) >= DEDUP_JACCARD


@dataclass(slots=True)
class Scored:
    """A candidate after scoring, before packing."""

    key: int
    text: str
    final: float
    is_decision_record: bool
    tokens: int
    source_event_ids: tuple[str, ...]


class Deduplicator:
    """Remembers what was kept; a near-duplicate of a kept item merges its provenance into
    that item instead of being kept twice. Word-set sizes rule most pairs out cheaply."""

    def __init__(self) -> None:
        self.kept: list[Scored] = []
        self._seen: list[tuple[int, frozenset[str]]] = []
        self._pending: tuple[int, frozenset[str]] = (0, frozenset())

    def duplicate_of(self, item: Scored) -> Scored | None:
        signature = _signature(item.text)
        size = len(signature)
        for (other_size, other), kept in zip(self._seen, self.kept, strict=True):
            if min(size, other_size) >= DEDUP_JACCARD * max(size, other_size) and near_duplicate(
                signature, other
            ):
                return kept
        self._pending = (size, signature)
        return None

    def keep(self, item: Scored) -> None:
        """Keep ``item``; call right after :meth:`duplicate_of` returned ``None`` for it."""
        self.kept.append(item)
        self._seen.append(self._pending)


def merge_provenance(winner: Scored, loser: Scored) -> None:
    extra = tuple(e for e in loser.source_event_ids if e not in winner.source_event_ids)
    winner.source_event_ids = winner.source_event_ids + extra


def rank_key(item: Scored) -> tuple[float, bool]:
    """Best first; ties go to decision records (the bridge seed's tie-break)."""
    return (item.final, item.is_decision_record)


def pack(
    items: Sequence[Scored],
    *,
    max_results: int,
    max_tokens: int,
    truncate: Callable[[str, int], str] | None = None,
    estimate: Callable[[str], int] | None = None,
    min_truncated_tokens: int = 40,
) -> list[Scored]:
    """Take items best first until ``max_results`` or the token budget is reached,
    skipping near-duplicates of what was already taken (their provenance is merged).

    An item that does not fit is skipped (a smaller one further down may still fit);
    when ``truncate`` is given and the remaining budget is at least
    ``min_truncated_tokens``, the item is shortened to fit instead.
    """
    dedup = Deduplicator()
    chosen = dedup.kept
    used = 0
    for item in items:
        if len(chosen) >= max_results or used >= max_tokens:
            break
        winner = dedup.duplicate_of(item)
        if winner is not None:
            merge_provenance(winner, item)
            continue
        remaining = max_tokens - used
        if item.tokens > remaining:
            if truncate is None or estimate is None or remaining < min_truncated_tokens:
                continue
            text = truncate(item.text, remaining)
            tokens = estimate(text)
            if tokens > remaining:
                continue
            item = Scored(
                item.key, text, item.final, item.is_decision_record, tokens,
                item.source_event_ids,
            )  # fmt: skip
        dedup.keep(item)
        used += item.tokens
    return chosen
