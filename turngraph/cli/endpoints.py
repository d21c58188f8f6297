"""Where producer commands find Redis: the configured URL, else running embedded services."""

from __future__ import annotations

from turngraph.embedded.services import read_endpoints
from turngraph.producers.consent import consent_endpoint
from turngraph.settings import Settings


def producer_redis_url(settings: Settings) -> str | None:
    """The configured Redis URL, or the embedded one if ``turngraph up`` runs; never waits."""
    if settings.redis_url:
        return settings.redis_url
    running = read_endpoints(settings.data_dir)
    return running.redis_url if running else None


def producer_consent_endpoint(settings: Settings) -> str:
    """The endpoint consent is recorded for under these settings."""
    return consent_endpoint(settings.redis_url, settings.data_dir)
