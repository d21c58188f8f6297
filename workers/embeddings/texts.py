"""What a memory's vector is made from: the one definition ingest and recall share.

``speaker: text`` (the speaker when known), after the previous turn of its session when
there is one: a reply such as "Yes, every winter!" means little alone (measured:
docs/recall.md). The ingest workers embed this text once and store the vector; a recall
replica that has to embed a memory itself builds the same text, so both vectors agree.
"""

from __future__ import annotations

EMBED_PREVIOUS_TURN = True
"""Embed a turn after the previous turn of its session (measured: docs/recall.md)."""


def speaker_text(text: str, speaker: str | None) -> str:
    """What the index analyses and the vector starts from: ``speaker: text``."""
    return f"{speaker}: {text}" if speaker else text


def embedding_text(own: str, previous: str | None) -> str:
    """``own`` (a :func:`speaker_text`) after the previous turn's, when there is one."""
    if EMBED_PREVIOUS_TURN and previous:
        return f"{previous}\n{own}"
    return own
