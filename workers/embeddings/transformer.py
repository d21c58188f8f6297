"""The in-process contextual embedder: a sentence-transformer exported to ONNX.

A folder holds ``model.onnx``, ``tokenizer.json`` and ``SHA256SUMS``; a text's vector is
the mean of its tokens' hidden states, L2-normalised, run by onnxruntime on one CPU
thread. Each text runs alone, unpadded: the shipped graph takes ``input_ids`` only (its
attention-mask path removed, ops/embeddings/lean_onnx_model.py); a model that also takes
``attention_mask`` gets all ones. We run the session ourselves rather than through
fastembed, whose loader pulls huggingface_hub and an image stack in for the forty lines
below.
docs/recall.md ("The semantic signal").
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from turngraph.workers.embeddings.errors import EmbeddingModelError
from turngraph.workers.embeddings.in_process import (
    InProcessEmbedder,
    require_files,
    verify_checksums,
)
from turngraph.workers.embeddings.protocol import Vectors, normalise_rows
from turngraph.workers.embeddings.reference import ReferenceCheck, check_reference

__all__ = [
    "DEFAULT_CONTEXTUAL_DIR", "MAX_TOKENS", "REQUIRED_FILES", "TransformerEmbedder",
    "is_transformer_folder",
]  # fmt: skip

DEFAULT_CONTEXTUAL_DIR = Path(__file__).resolve().parent / "models" / "minilm-l6-onnx"
"""The shipped contextual model (all-MiniLM-L6-v2, 384 dimensions, int8 weights, 23 MB)."""

REQUIRED_FILES = ("model.onnx", "tokenizer.json")

MAX_TOKENS = 256
"""Longer texts are truncated: all-MiniLM-L6-v2 was trained on at most 256 word pieces."""


def is_transformer_folder(folder: Path) -> bool:
    return (Path(folder) / "model.onnx").is_file()


@lru_cache(maxsize=4)
def _load(folder: Path) -> tuple[Any, Any]:
    """Tokenizer and session, loaded (and checked) once per process."""
    verify_checksums(folder)
    import onnxruntime  # imported here: a lexical-only or static-model worker skips it
    from tokenizers import Tokenizer

    try:
        tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        session = onnxruntime.InferenceSession(
            str(folder / "model.onnx"), options, providers=["CPUExecutionProvider"]
        )
    except Exception as exc:  # onnxruntime raises its own untyped errors on a bad file
        raise EmbeddingModelError(f"cannot load the model in {folder}") from exc
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    tokenizer.no_padding()
    return tokenizer, session


_CHECKED: dict[Path, ReferenceCheck] = {}
"""The reference check of each folder loaded in this process (it runs once)."""


class TransformerEmbedder(InProcessEmbedder):
    """:class:`~workers.embeddings.protocol.Embedder` over an ONNX sentence-transformer.

    Each text runs alone: the int8 model quantises activations per run, so in a batch a
    text's vector would depend on its batch-mates, and ingest and a replica must agree on
    a memory's vector (batching bought no speed either: docs/history.md).

    The model id is ``onnx:<folder name>``, suffixed ``~<digest>`` when this runtime's
    vectors drifted from the folder's reference vectors (``reference``: that check,
    ``workers/embeddings/reference.py``).
    """

    def __init__(self, folder: Path) -> None:
        folder = Path(folder)
        require_files(folder, REQUIRED_FILES, "an ONNX model")
        self._tokenizer, self._session = _load(folder.resolve())
        self._takes_mask = "attention_mask" in {i.name for i in self._session.get_inputs()}
        super().__init__(f"onnx:{folder.name}", int(self._session.get_outputs()[0].shape[-1]))
        key = folder.resolve()
        if key not in _CHECKED:
            _CHECKED[key] = check_reference(key, self.model, self._unit_rows)
        self.reference = _CHECKED[key]
        self._name += self.reference.model_suffix

    def embed(self, texts: Sequence[str]) -> Vectors:
        self._count(texts)
        return self._unit_rows(texts)

    def _unit_rows(self, texts: Sequence[str]) -> Vectors:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, encoding in enumerate(self._tokenizer.encode_batch(list(texts))):
            out[row] = self._pooled(encoding.ids)
        return normalise_rows(out)

    def _pooled(self, ids: list[int]) -> Vectors:
        """The mean of one text's token states (no padding: the text runs alone)."""
        input_ids = np.asarray([ids], dtype=np.int64)
        feed = {"input_ids": input_ids}
        if self._takes_mask:
            feed["attention_mask"] = np.ones_like(input_ids)
        (hidden,) = self._session.run(None, feed)
        return np.asarray(hidden[0].mean(axis=0), dtype=np.float32)
