"""What a worker's configuration is, as far as its answers depend on it, in a form that
can be published: the LLM endpoint's host, model and output mode, and the embedding
provider and model, hashed together. Workers put it in their heartbeats (the RQ worker's
hash, the recall replica's key) and ``turngraph doctor`` compares it with its own
settings. No key, password or URL path is part of it, and only the hash is published."""

from __future__ import annotations

import hashlib
import json
from urllib.parse import urlsplit

from turngraph.settings import Settings

__all__ = ["FINGERPRINT_CHARS", "config_fingerprint"]

FINGERPRINT_CHARS = 12
"""Hex digits kept of the SHA-256: enough to tell configurations apart, nothing to read."""


def config_fingerprint(settings: Settings) -> str:
    """The hash of the settings that change what workers extract, summarize and embed."""
    llm = urlsplit(settings.llm_base_url) if settings.llm_base_url else None
    parts = {
        "llm_host": f"{llm.hostname}:{llm.port or ''}" if llm else None,
        "llm_model": settings.llm_model if llm else None,
        "llm_output_mode": settings.llm_output_mode if llm else None,
        "embedding_provider": settings.embedding_provider,
        "embedding_model": (
            settings.embedding_model
            if settings.embedding_provider == "openai"
            else str(settings.embedding_model_path or "")
            if settings.embedding_provider == "local"
            else None
        ),
    }
    digest = hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()
    return digest[:FINGERPRINT_CHARS]
