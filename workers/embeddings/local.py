"""The in-process embedder: a model2vec static model loaded from a local folder.

No service and no torch: a text's vector is the SIF-weighted mean of its WordPiece
tokens' vectors (numpy), a query embeds in well under a millisecond. The default model
ships in this package (``models/minilm-l6-static``, distilled from all-MiniLM-L6-v2 by
``ops/embeddings/distill_static_model.py``; Apache-2.0, see its NOTICE). Any other
model2vec folder can be named instead (an air-gapped install copies one in); nothing is
ever fetched from a hub here.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from safetensors import SafetensorError, safe_open
from tokenizers import Tokenizer

from turngraph.workers.embeddings.errors import EmbeddingModelError
from turngraph.workers.embeddings.in_process import (
    InProcessEmbedder,
    require_files,
    verify_checksums,
)
from turngraph.workers.embeddings.protocol import Vectors, normalise_rows

__all__ = ["DEFAULT_MODEL_DIR", "REQUIRED_FILES", "StaticEmbedder"]

DEFAULT_MODEL_DIR = Path(__file__).resolve().parent / "models" / "minilm-l6-static"
"""The shipped static model (256 dimensions, int8 weights, ~8 MB)."""

REQUIRED_FILES = ("config.json", "model.safetensors", "tokenizer.json")


@lru_cache(maxsize=4)
def _load(folder: Path) -> Any:
    """Load (and check) a model folder once per process; replicas in one process share it
    (the model is read-only)."""
    verify_checksums(folder)
    from model2vec import StaticModel  # imported here: a lexical-only worker skips it

    try:
        model = _from_folder(folder, StaticModel)
        return model or StaticModel.from_pretrained(str(folder), force_download=False)
    except (OSError, ValueError, KeyError, SafetensorError) as exc:
        raise EmbeddingModelError(f"cannot load the model in {folder}") from exc


def _from_folder(folder: Path, model_class: Any) -> Any | None:
    """The model of a model2vec folder (``REQUIRED_FILES``, model2vec's own layout), read
    as model2vec's loader reads that layout and made with its public constructor; ``None``
    for a folder whose config leaves out ``normalize`` or ``max_length``, or whose tensors
    are not named as model2vec names them (model2vec's loader and its defaults then).

    Written here because ``StaticModel.from_pretrained`` imports huggingface_hub (and
    its HTTP stack) for hub downloads this never makes: half a second of CPU at the start
    of every worker and ``turngraph doctor`` (``bench.startup``, docs/history.md)."""
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    if not isinstance(config, dict) or not {"normalize", "max_length"} <= config.keys():
        return None
    with safe_open(str(folder / "model.safetensors"), framework="numpy") as tensors:
        names = set(tensors.keys())
        if "embeddings" not in names:
            return None
        vectors = tensors.get_tensor("embeddings")
        weights = tensors.get_tensor("weights") if "weights" in names else None
        mapping = tensors.get_tensor("mapping") if "mapping" in names else None
    return model_class(
        vectors=vectors,
        tokenizer=Tokenizer.from_file(str(folder / "tokenizer.json")),
        config=config,
        normalize=bool(config["normalize"]),
        weights=weights,
        token_mapping=mapping,
        max_length=config["max_length"],
    )


class StaticEmbedder(InProcessEmbedder):
    """:class:`~workers.embeddings.protocol.Embedder` over a model2vec folder."""

    def __init__(self, folder: Path = DEFAULT_MODEL_DIR) -> None:
        folder = Path(folder)
        require_files(folder, REQUIRED_FILES, "a model2vec model")
        self._model = _load(folder.resolve())
        super().__init__(f"model2vec:{folder.name}", int(self._model.dim))

    def embed(self, texts: Sequence[str]) -> Vectors:
        self._count(texts)
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
