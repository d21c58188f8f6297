"""The ``--embedding`` choice the benches share, as the settings each one sets."""

from __future__ import annotations

from typing import Any

from turngraph.workers.embeddings.local import DEFAULT_MODEL_DIR

EMBEDDINGS: dict[str, dict[str, str]] = {
    "local": {"TURNGRAPH_EMBEDDING_PROVIDER": "local"},  # the shipped pair (the default)
    "static": {  # the static model alone: the fast setting (docs/recall.md)
        "TURNGRAPH_EMBEDDING_PROVIDER": "local",
        "TURNGRAPH_EMBEDDING_MODEL_PATH": str(DEFAULT_MODEL_DIR),
    },
    "none": {"TURNGRAPH_EMBEDDING_PROVIDER": "none"},
}
"""``--embedding`` choices: the environment a worker process gets for each."""


def settings_fields(choice: str) -> dict[str, Any]:
    """The same choice as :class:`~turngraph.settings.Settings` fields, for a process that
    builds its settings in code (``TURNGRAPH_EMBEDDING_PROVIDER`` -> ``embedding_provider``)."""
    return {
        key.removeprefix("TURNGRAPH_").lower(): value for key, value in EMBEDDINGS[choice].items()
    }
