"""The embedder of tests about queues, processes and hostile input rather than recall.

They run their workers on the static model alone, a real embedder still: the default
pair's contextual model costs ~4 ms of CPU per turn (docs/history.md), which on their
thousands of turns was most of their time. The pair itself is tested where embeddings
are the subject (test_embeddings_contextual, test_stored_embeddings,
test_recall_semantic_worker).
"""

from __future__ import annotations

import dataclasses

from turngraph.clients import Clients
from turngraph.workers.embeddings.local import DEFAULT_MODEL_DIR

STATIC_MODEL_ENV = {"TURNGRAPH_EMBEDDING_MODEL_PATH": str(DEFAULT_MODEL_DIR)}
"""For a worker process's environment."""


def with_static_model(clients: Clients) -> Clients:
    """The same connections, with settings that name the static model."""
    settings = clients.settings.model_copy(update={"embedding_model_path": DEFAULT_MODEL_DIR})
    return dataclasses.replace(clients, settings=settings)
