"""Session recap (``seeds/session-recap.md``): what a session did, within a token budget.

Each turn becomes a line (tool turns collapsed to an action, never their output), lines
are chunked at user turns, similar neighbours merged, each chunk summarised offline,
scored by position and selected to fit the budget, the last one ("Where we stopped")
always kept. docs/distill.md ("Session recap").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from turngraph.schemas.memory_block import Said
from turngraph.schemas.recap import RecapSection, SessionRecap
from turngraph.workers.graph.session_turns import SessionTurn
from turngraph.workers.maintenance.extractive import decisions_of
from turngraph.workers.maintenance.text import sentences, shorten
from turngraph.workers.maintenance.tool_calls import CHANGE, OBSERVE, RUN, collapse, tool_name
from turngraph.workers.recall.text import STOPWORDS, estimate_tokens

__all__ = [
    "CHUNK_TOKENS", "MAX_ACTIONS", "MAX_CHUNK_TOKENS", "MAX_MERGED_TURNS", "MERGE_OVERLAP",
    "SECTION_CHARS", "Chunk", "build_recap", "chunk_turns", "merge_similar", "summarize_chunk",
]  # fmt: skip

CHUNK_TOKENS = 150
"""A chunk closes at the next user turn once its lines reach this many tokens."""

MAX_CHUNK_TOKENS = 400
"""...and at any turn beyond this."""

MERGE_OVERLAP = 0.3
"""Neighbouring chunks whose content words overlap this much (Jaccard) are merged."""

MAX_MERGED_TURNS = 30

SECTION_CHARS = 420
"""Longest chunk summary (about 100 tokens)."""

MAX_ACTIONS = 4


@dataclass
class Chunk:
    turns: list[SessionTurn] = field(default_factory=list)
    tokens: int = 0
    words: set[str] = field(default_factory=set)

    def add(self, turn: SessionTurn, line: str) -> None:
        self.turns.append(turn)
        self.tokens += estimate_tokens(line)
        if turn.role != "tool":  # what was talked about, not the tools' boilerplate
            self.words |= _content_words(line)


def _content_words(text: str) -> set[str]:
    return {
        w
        for w in "".join(c if c.isalnum() else " " for c in text.lower()).split()
        if len(w) > 2 and w not in STOPWORDS
    }


def _line(turn: SessionTurn) -> str | None:
    if turn.role == "tool":
        return collapse(turn)
    text = " ".join(turn.content.split())
    return f"{turn.role}: {shorten(text, 300)}" if text else None


def chunk_turns(turns: Sequence[SessionTurn]) -> list[Chunk]:
    chunks: list[Chunk] = [Chunk()]
    for turn in turns:
        line = _line(turn)
        if line is None:
            continue
        current = chunks[-1]
        boundary = turn.role == "user" and current.tokens >= CHUNK_TOKENS
        if current.turns and (boundary or current.tokens >= MAX_CHUNK_TOKENS):
            current = Chunk()
            chunks.append(current)
        current.add(turn, line)
    return [c for c in chunks if c.turns]


def merge_similar(chunks: Sequence[Chunk]) -> list[Chunk]:
    merged: list[Chunk] = []
    for chunk in chunks:
        if merged:
            last = merged[-1]
            union = last.words | chunk.words
            overlap = len(last.words & chunk.words) / len(union) if union else 0.0
            if overlap >= MERGE_OVERLAP and len(last.turns) + len(chunk.turns) <= MAX_MERGED_TURNS:
                last.turns += chunk.turns
                last.tokens += chunk.tokens
                last.words = union
                continue
        merged.append(Chunk(list(chunk.turns), chunk.tokens, set(chunk.words)))
    return merged


def _clause(text: str, max_chars: int) -> str:
    return shorten(text, max_chars).rstrip(".!;:,")


def summarize_chunk(chunk: Chunk, *, last: bool = False) -> str:
    """What was asked, decided and done in the chunk, and what was said last; for the
    session's last chunk, the last request first (the unfinished work). A decision the
    request already states word for word is not said again (``Said``)."""
    parts: list[str] = []
    asks = [s for t in chunk.turns if t.role == "user" for s in sentences(t.content)]
    if asks and last:
        final = [
            s for s in sentences(next(t for t in reversed(chunk.turns) if t.role == "user").content)
        ]
        parts.append(f"Last request: {_clause(' '.join(final), 240)}")
    elif asks:
        parts.append(f"Asked: {_clause(asks[0], 140)}")
    stated = Said()
    for part in parts:
        stated.add(part)
    decided = [text for text, _ in decisions_of(chunk.turns) if not stated.repeats(text)]
    if decided:
        parts.append(f"Decided: {_clause('; '.join(decided[-2:]), 160)}")
    changes: list[str] = []
    observed = 0
    for turn in chunk.turns:
        if turn.role != "tool":
            continue
        name = tool_name(turn)
        if name in OBSERVE:
            observed += 1
        elif name in CHANGE or name in RUN:
            line = collapse(turn)
            if line:
                action = line.split(" (", 1)[0].rstrip(".")
                if action not in changes:
                    changes.append(action)
    if changes:
        extra = f" (+{len(changes) - MAX_ACTIONS} more)" if len(changes) > MAX_ACTIONS else ""
        parts.append(f"Did: {'; '.join(changes[:MAX_ACTIONS])}{extra}")
    if observed:
        parts.append(f"Looked at {observed} tool result(s)")
    said = [s for t in chunk.turns if t.role == "assistant" for s in sentences(t.content)]
    if said:
        parts.append(f"Last said: {_clause(said[-1], 140)}")
    span = f"turns {chunk.turns[0].turn_index}-{chunk.turns[-1].turn_index}"
    return shorten(f"[{span}] " + ". ".join(parts) + ".", SECTION_CHARS)


def _fit(text: str, budget: int) -> str:
    while estimate_tokens(text) > budget and len(text) > 20:
        text = shorten(text, int(len(text) * 0.85))
    return text


def build_recap(
    turns: Sequence[SessionTurn], budget_tokens: int, session_id: str | None = None
) -> SessionRecap:
    """The recap of ``turns`` (one session, in order, at least one) within the budget."""
    if not turns:
        raise ValueError("nothing to recap")
    chunks = merge_similar(chunk_turns(turns))
    n = len(chunks)
    header = (
        f"Recap of the previous session ({len(turns)} turns, "
        f"{turns[0].occurred_at:%Y-%m-%d %H:%M} to {turns[-1].occurred_at:%Y-%m-%d %H:%M} UTC):"
    )
    remaining = budget_tokens - estimate_tokens(header)
    summaries = [summarize_chunk(chunk, last=i == n - 1) for i, chunk in enumerate(chunks)]
    last_text = _fit(f"Where we stopped {summaries[-1]}", max(20, remaining // 2))
    candidates = [
        RecapSection(
            first_turn=c.turns[0].turn_index,
            last_turn=c.turns[-1].turn_index,
            text=text if i < n - 1 else last_text,
            score=round((i + 1) / n, 6),
            tokens=estimate_tokens(text if i < n - 1 else last_text),
            source_event_ids=tuple(t.event_id for t in c.turns),
        )
        for i, (c, text) in enumerate(zip(chunks, summaries, strict=True))
    ]
    chosen = [candidates[-1]]
    used = candidates[-1].tokens
    for section in sorted(candidates[:-1], key=lambda s: s.score, reverse=True):
        if used + section.tokens + 1 <= remaining:
            chosen.append(section)
            used += section.tokens + 1
    chosen.sort(key=lambda s: s.first_turn)
    text = "\n".join([header, *(s.text for s in chosen)])
    first = turns[0]
    return SessionRecap(
        session_id=session_id or first.session_id,
        workspace=first.workspace,
        user=first.user,
        budget_tokens=budget_tokens,
        tokens=estimate_tokens(text),
        turns=len(turns),
        chunks=n,
        sections=tuple(chosen),
        text=text,
        session_start=first.occurred_at,
        session_end=turns[-1].occurred_at,
    )
