"""What the models run in this process share: their folder checks and their counters.

In-process embedders are called inline by recall (they cannot hang on a network) and
report their calls and texts to the metrics; endpoint embedders do neither.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

from turngraph.workers.embeddings.errors import EmbeddingModelError
from turngraph.workers.embeddings.protocol import Embedder
from turngraph.workers.llm_provider import EMBEDDING_COUNTERS, ProviderStats

__all__ = ["InProcessEmbedder", "require_files", "verify_checksums"]


def require_files(folder: Path, names: Sequence[str], kind: str) -> None:
    """A clear error naming what is missing when ``folder`` is not a ``kind`` folder."""
    missing = [name for name in names if not (folder / name).is_file()]
    if missing:
        raise EmbeddingModelError(f"not {kind} folder ({', '.join(missing)} missing): {folder}")


def verify_checksums(folder: Path) -> int:
    """Check every file listed in ``SHA256SUMS`` (when the folder has one); returns how many."""
    sums = folder / "SHA256SUMS"
    if not sums.is_file():
        return 0
    checked = 0
    for line in sums.read_text().splitlines():
        if not line.strip():
            continue
        digest, name = line.split(maxsplit=1)
        path = folder / name.strip().lstrip("*")
        if not path.is_file():
            raise EmbeddingModelError(f"model file missing: {path.name}")
        if hashlib.sha256(path.read_bytes()).hexdigest() != digest:
            raise EmbeddingModelError(f"model file does not match its checksum: {path.name}")
        checked += 1
    return checked


class InProcessEmbedder(Embedder):
    """Base of the in-process :class:`~workers.embeddings.protocol.Embedder` classes: the
    vector space's name and dimension, and the counts the metrics read."""

    def __init__(self, name: str, dimension: int) -> None:
        self._name = name
        self._dimension = dimension
        self.stats = ProviderStats(EMBEDDING_COUNTERS)
        """Calls to ``embed`` and texts embedded (for metrics)."""

    @property
    def model(self) -> str:
        return self._name

    @property
    def dimension(self) -> int:
        return self._dimension

    def _count(self, texts: Sequence[str]) -> None:
        self.stats.add(calls=1, texts=len(texts))
