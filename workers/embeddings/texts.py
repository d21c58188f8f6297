"""What a memory's vector is made from: the one definition ingest and recall share.

``speaker: text``, after the previous turn of its session when there is one (a reply such
as "Yes, every winter!" means little alone). An :class:`EmbeddingText` is the joined
string every provider embeds and keeps its two parts, for a model that does better on
the memory alone (the contextual model does: docs/history.md).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "EMBED_PREVIOUS_TURN", "QUERY_CONTEXT_CHARS", "EmbeddingText", "embedding_text", "own_part",
    "query_text", "speaker_text",
]  # fmt: skip

EMBED_PREVIOUS_TURN = True
"""Embed a turn after the previous turn of its session (measured: docs/history.md)."""


class EmbeddingText(str):
    """``previous + "\\n" + own`` as a string, with ``own`` and ``previous`` kept."""

    own: str
    previous: str | None

    def __new__(cls, own: str, previous: str | None = None) -> EmbeddingText:
        joined = f"{previous}\n{own}" if previous else own
        text = super().__new__(cls, joined)
        text.own = own
        text.previous = previous
        return text


def own_part(text: str) -> str:
    """The memory's own text (a plain string, such as a query, is all its own)."""
    return text.own if isinstance(text, EmbeddingText) else text


def speaker_text(text: str, speaker: str | None) -> str:
    """What the index analyses and the vector starts from: ``speaker: text``."""
    return f"{speaker}: {text}" if speaker else text


def embedding_text(own: str, previous: str | None) -> EmbeddingText:
    """``own`` (a :func:`speaker_text`) after the previous turn's, when there is one."""
    return EmbeddingText(own, previous if EMBED_PREVIOUS_TURN else None)


QUERY_CONTEXT_CHARS = 2_000
"""The end of the recent turns a query is embedded after (a context turn may be 20,000
characters; the query's own words stay whole)."""


def query_text(query: str, recent: Sequence[str]) -> EmbeddingText:
    """A query as a memory is embedded: after the recent turns of its conversation (their
    last :data:`QUERY_CONTEXT_CHARS`), when there are any; else the query alone."""
    previous = "\n".join(recent)[-QUERY_CONTEXT_CHARS:]
    return embedding_text(query, previous if previous.strip() else None)
