"""What one publisher did, counted in-process (the shared counters are in Redis)."""

from __future__ import annotations

from dataclasses import asdict, dataclass

__all__ = ["PublisherStats"]


@dataclass
class PublisherStats:
    """What one publisher did; ``published`` counts every call to ``publish``.

    ``published == buffered + dropped_local + not_consented + dropped_closed`` and
    ``buffered == sent + failed + abandoned + pending``, where
    ``sent == enqueued + duplicates + dropped_newest`` (Redis's answers). ``truncated``
    counts sent events a field of which redaction pushed past its limit (cut, marked).
    """

    published: int = 0
    buffered: int = 0
    not_consented: int = 0
    dropped_local: int = 0
    dropped_closed: int = 0
    sent: int = 0
    enqueued: int = 0
    duplicates: int = 0
    dropped_newest: int = 0
    evicted_oldest: int = 0
    failed: int = 0
    abandoned: int = 0
    send_errors: int = 0
    truncated: int = 0
    """Events sent with a field cut to its limit after redaction grew it (marked in text)."""
    ids_hashed: int = 0
    """Events sent under the hash of their id, which looked like a secret."""

    def as_dict(self) -> dict[str, int]:
        """The counters as a plain dict (for JSON replies and benchmarks)."""
        return asdict(self)
