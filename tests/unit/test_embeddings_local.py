"""The shipped static model through the real model2vec loading code (no fake)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from turngraph.workers.embeddings.errors import EmbeddingModelError
from turngraph.workers.embeddings.local import DEFAULT_MODEL_DIR, StaticEmbedder, verify_checksums


@pytest.fixture(scope="module")
def embedder() -> StaticEmbedder:
    return StaticEmbedder()


def test_the_shipped_model_matches_its_checksums() -> None:
    assert verify_checksums(DEFAULT_MODEL_DIR) == 4
    assert (DEFAULT_MODEL_DIR / "NOTICE").read_text().count("Apache License") >= 1


def test_vectors_are_unit_length_and_carry_meaning(embedder: StaticEmbedder) -> None:
    vectors = embedder.embed(
        [
            "I love skiing in the mountains every winter",
            "My favourite sport is snowboarding on fresh snow",
            "The quarterly tax report is due on Friday",
        ]
    )
    assert vectors.shape == (3, embedder.dimension) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    sims = vectors @ vectors.T
    assert sims[0, 1] > sims[0, 2] + 0.1  # winter sports are closer to each other than to tax
    assert embedder.embed([]).shape == (0, embedder.dimension)
    assert embedder.model == "model2vec:minilm-l6-static"


def test_a_tampered_model_is_refused(tmp_path: Path) -> None:
    copy = tmp_path / "model"
    shutil.copytree(DEFAULT_MODEL_DIR, copy)
    data = bytearray((copy / "model.safetensors").read_bytes())
    data[-1] ^= 0xFF
    (copy / "model.safetensors").write_bytes(bytes(data))
    with pytest.raises(EmbeddingModelError, match="checksum"):
        StaticEmbedder(copy)


def test_a_folder_without_a_model_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingModelError, match=r"model\.safetensors"):
        StaticEmbedder(tmp_path)


def test_a_model_folder_without_checksums_still_loads(tmp_path: Path) -> None:
    copy = tmp_path / "model"
    shutil.copytree(DEFAULT_MODEL_DIR, copy)
    (copy / "SHA256SUMS").unlink()
    assert StaticEmbedder(copy).embed(["hello there"]).shape[0] == 1


def test_the_one_text_path_matches_the_batch_path(embedder: StaticEmbedder) -> None:
    texts = ["Kate's hobbies?", "skiing " * 3000, "!!", "ok so what did we decide on the release"]
    batch = embedder.embed([*texts, "pad"])[: len(texts)]
    for n, text in enumerate(texts):
        assert np.allclose(embedder.embed([text])[0], batch[n], atol=1e-5)
