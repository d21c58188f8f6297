"""The in-process embedder: a model2vec static model loaded from a local folder.

No service and no torch: a text's vector is the SIF-weighted mean of its WordPiece
tokens' vectors (numpy), a query embeds in well under a millisecond. The default model
ships in this package (``models/minilm-l6-static``, distilled from all-MiniLM-L6-v2 by
``ops/embeddings/distill_static_model.py``; Apache-2.0, see its NOTICE). Any other
model2vec folder can be named instead (an air-gapped install copies one in); nothing is
ever fetched from a hub here.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from workers.embeddings.errors import EmbeddingModelError
from workers.embeddings.protocol import Vectors, normalise_rows

DEFAULT_MODEL_DIR = Path(__file__).resolve().parent / "models" / "minilm-l6-static"
"""The shipped static model (256 dimensions, int8 weights, ~8 MB)."""

REQUIRED_FILES = ("config.json", "model.safetensors", "tokenizer.json")


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


@lru_cache(maxsize=4)
def _load(folder: Path) -> Any:
    """Load (and check) a model folder once per process; replicas in one process share it
    (the model is read-only)."""
    verify_checksums(folder)
    from model2vec import StaticModel  # imported here: a lexical-only worker skips it

    try:
        return StaticModel.from_pretrained(str(folder), force_download=False)
    except (OSError, ValueError, KeyError) as exc:
        raise EmbeddingModelError(f"cannot load the model in {folder}") from exc


class StaticEmbedder:
    """:class:`~workers.embeddings.protocol.Embedder` over a model2vec folder."""

    def __init__(self, folder: Path = DEFAULT_MODEL_DIR) -> None:
        folder = Path(folder)
        missing = [name for name in REQUIRED_FILES if not (folder / name).is_file()]
        if missing:
            raise EmbeddingModelError(
                f"not a model2vec model folder ({', '.join(missing)} missing): {folder}"
            )
        self._model = _load(folder.resolve())
        self._name = f"model2vec:{folder.name}"
        self._dimension = int(self._model.dim)
        self.calls = 0
        """Calls to :meth:`embed` (for metrics)."""
        self.texts = 0
        """Texts embedded (for metrics)."""

    @property
    def model(self) -> str:
        return self._name

    @property
    def dimension(self) -> int:
        return self._dimension

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.calls += 1
        self.texts += len(texts)
        if len(texts) == 1:
            return self._embed_one(texts[0])
        if not texts:
            return np.zeros((0, self._dimension), dtype=np.float32)
        vectors = self._model.encode(
            list(texts), show_progress_bar=False, use_multiprocessing=False
        )
        return normalise_rows(np.asarray(vectors, dtype=np.float32))

    def _embed_one(self, text: str) -> Vectors:
        """One text (a query) without ``encode``'s batching set-up, which costs more than
        the arithmetic for one short text; same result (tested against ``encode``)."""
        model = self._model
        if model.max_length is not None:
            text = text[: model.max_length * model.median_token_length]
        ids = model.tokenize([text])[0]
        if not ids:
            return np.zeros((1, self._dimension), dtype=np.float32)
        if model.token_mapping is not None or model.weights is not None:
            rows = model._encode_helper(ids)
        else:
            rows = model.embedding[ids]
        return normalise_rows(rows.mean(axis=0, dtype=np.float32)[None, :])
