"""What the OpenAI-compatible endpoints have in common (extraction, summaries, embeddings):
one shape (:class:`Provider`: a model name and one :class:`ProviderStats`), one stats class
and one converter of the ``openai`` client's errors into ours.

The client (built in ``turngraph.clients``) retries 408/409/429 and 5xx itself: an error
that reaches us has been retried already, and is converted at the boundary with
``raise convert_error(err, ERRORS) from err``. Messages carry status and type only, never
a prompt or a text.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from turngraph.schemas.errors import PermanentError, TransientError, TurngraphError

if TYPE_CHECKING:
    import openai

__all__ = [
    "CONFIGURATION_STATUS", "EMBEDDING_COUNTERS", "ENDPOINT_COUNTERS", "EXTRACTION_COUNTERS",
    "SUMMARY_COUNTERS", "TRANSIENT_STATUS", "Provider", "ProviderErrors", "ProviderStats",
    "convert_error",
]  # fmt: skip

TRANSIENT_STATUS = frozenset({408, 409, 429})
"""Statuses worth trying later (besides 5xx)."""

CONFIGURATION_STATUS = frozenset({401, 403, 404})
"""Statuses that say the key, base URL or model is wrong."""


@dataclass(frozen=True)
class ProviderErrors:
    """The exceptions one endpoint's failures become, and how its messages name it."""

    service: str
    """``LLM endpoint``, ``embeddings endpoint``."""
    unavailable: type[TransientError]
    """Timeouts, unreachable, 5xx and ``TRANSIENT_STATUS``."""
    configuration: type[PermanentError]
    """``CONFIGURATION_STATUS``."""
    rejected: type[PermanentError]
    """Any other refusal of the request."""
    unknown: type[TurngraphError]
    """Any other ``openai`` error (no status: a malformed answer, a client-side failure)."""

    @property
    def raised(self) -> tuple[type[TurngraphError], ...]:
        """Every type :func:`convert_error` makes of this endpoint's failures (to catch)."""
        return (self.unavailable, self.configuration, self.rejected, self.unknown)


def convert_error(err: openai.OpenAIError, errors: ProviderErrors) -> Exception:
    """An ``openai`` error as one of ours: transient (try later) or permanent."""
    import openai  # here, not at the top: a process without an endpoint never loads it

    service = errors.service
    if isinstance(err, openai.APITimeoutError):
        return errors.unavailable(f"{service} timed out")
    if isinstance(err, openai.APIConnectionError):
        return errors.unavailable(f"{service} unreachable")
    if isinstance(err, openai.APIStatusError):
        status = err.status_code
        if status >= 500 or status in TRANSIENT_STATUS:
            return errors.unavailable(f"{service} answered {status} after retries")
        if status in CONFIGURATION_STATUS:
            return errors.configuration(
                f"{service} answered {status}: check the API key, base URL and model"
            )
        return errors.rejected(f"{service} rejected the request ({status})")
    return errors.unknown(f"{service} call failed ({type(err).__name__})")


ENDPOINT_COUNTERS = ("mode_downgrades", "system_prompt_dropped", "strict_requests")
"""The endpoint's own findings: output modes refused, system message found dropped; and
the requests sent in strict ``json_schema`` mode (retries included)."""

EXTRACTION_COUNTERS = (
    "turns",
    "batches",
    "calls",
    "reasks",
    "prompt_tokens",
    "completion_tokens",
    "invalid_answers",
    "unanswered_turns",
    "dropped",
    "repaired",
    "transient_failures",
    "fallback_batches",  # batches the offline rules extracted because the LLM failed
    "fallback_turns",  # their turns, recorded for a later LLM pass
    "truncated_answers",  # cut at the output limit (fewer turns per call since)
    *ENDPOINT_COUNTERS,  # an extractor that makes its own endpoint shares its stats
)
"""An extractor's counters (ingest and re-extraction); ``calls`` counts completed requests
(one the client retried after a 429 counts once), ``reasks`` re-sent invalid answers."""

SUMMARY_COUNTERS = (
    "summaries",
    "calls",
    "reasks",
    "fallbacks",  # summaries stored offline because the LLM failed
    "prompt_tokens",
    "completion_tokens",
    "items_cut",  # list items beyond the schema's limits, cut from valid answers
)

EMBEDDING_COUNTERS = ("calls", "texts", "rate_limited", "failures", "prompt_tokens")
"""``rate_limited``: 429 answers seen, retried or not; ``prompt_tokens`` as reported."""


class ProviderStats:
    """The counters of one use of a provider in one process (extraction, re-extraction,
    summaries, embeddings, the LLM endpoint's own), thread-safe, with fallback reasons.

    The counter names are fixed when it is made (``EXTRACTION_COUNTERS`` …) and read as
    attributes (``stats.calls``); adding to another name is a ``KeyError``. ``mirror`` is
    told of every increment (``SharedCounts``: the counters across processes).
    """

    def __init__(
        self, names: Iterable[str], *, mirror: Callable[[dict[str, int]], None] | None = None
    ) -> None:
        self._counts = dict.fromkeys(names, 0)
        self._reasons: dict[str, int] = {}
        self.mirror = mirror
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> int:
        counts = self.__dict__.get("_counts")
        if counts is None or name not in counts:
            raise AttributeError(name)
        value: int = counts[name]
        return value

    def add(self, **counts: int) -> None:
        with self._lock:
            for name, value in counts.items():
                if name not in self._counts:
                    raise KeyError(f"no counter {name!r} (known: {', '.join(self._counts)})")
                self._counts[name] += value
        if self.mirror is not None:
            self.mirror(counts)

    def add_reason(self, reason: str) -> None:
        with self._lock:
            self._reasons[reason] = self._reasons.get(reason, 0) + 1
        if self.mirror is not None:
            self.mirror({f"fallback:{reason}": 1})

    def reasons(self) -> dict[str, int]:
        """Fallbacks per reason (``endpoint_cooling_down``, ``budget_spent`` …)."""
        with self._lock:
            return dict(self._reasons)

    def snapshot(self) -> dict[str, int]:
        """The counters as plain numbers (for a metrics exporter or a RESULT line)."""
        with self._lock:
            return dict(self._counts)

    def per_turn(self) -> dict[str, float]:
        """Calls and tokens per extracted turn (0 before the first turn)."""
        snap = self.snapshot()
        turns = snap["turns"]
        return {
            f"{name}_per_turn": snap[name] / turns if turns else 0.0
            for name in ("calls", "prompt_tokens", "completion_tokens")
        }


class Provider(Protocol):
    """What extraction (:class:`~workers.extraction.llm.LLMExtractor`), summaries
    (:class:`~workers.maintenance.llm_summary.LLMSummarizer`), their shared
    :class:`~workers.extraction.endpoint.LLMEndpoint` and the embedders show of an
    endpoint: the model they ask and what they counted. Each declares it as a base, so
    mypy checks the shape where the class is written."""

    stats: ProviderStats

    @property
    def model(self) -> str: ...
