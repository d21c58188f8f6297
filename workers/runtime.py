"""The worker process's clients and pipeline, installed by the entrypoint before work starts.

RQ job arguments are JSON in Redis, so clients cannot be passed to a job function; the
entrypoint (``turngraph worker …``) or a test installs them here explicitly. Nothing is
created at import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from schemas.errors import ConfigurationError

if TYPE_CHECKING:
    from workers.ingest.pipeline import IngestPipeline

_pipeline: IngestPipeline | None = None
_batch_extras: list[Any] | None = None


def install(pipeline: IngestPipeline | None) -> None:
    """Make ``pipeline`` the one this process's jobs use (``None`` uninstalls)."""
    global _pipeline
    _pipeline = pipeline


def pipeline() -> IngestPipeline:
    if _pipeline is None:
        raise ConfigurationError("no ingest pipeline installed in this worker process")
    return _pipeline


def set_batch_extras(payloads: list[Any]) -> None:
    """Payloads the batching worker claimed beside the job it is about to run."""
    global _batch_extras
    _batch_extras = payloads


def take_batch_extras() -> list[Any] | None:
    """The claimed payloads, once; ``None`` when they were already taken (by the job)."""
    global _batch_extras
    extras, _batch_extras = _batch_extras, None
    return extras
