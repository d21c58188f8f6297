"""The shipped static model through the real model2vec code (no fake): our reading of its
folder gives the model model2vec's own loader gives."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
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


TEXTS = ["Kate's hobbies?", "we'll use Postgres 16 for orders", "skiing " * 3000, "!!", ""]


def _same_model(ours: object, library: object) -> None:
    for name in ("normalize", "max_length", "config", "unk_token_id", "median_token_length"):
        assert getattr(ours, name) == getattr(library, name), name
    for name in ("embedding", "weights", "token_mapping"):
        a, b = getattr(ours, name), getattr(library, name)
        assert (a is None and b is None) or np.array_equal(a, b), name
    assert np.array_equal(ours.encode(TEXTS), library.encode(TEXTS))  # type: ignore[attr-defined]


def test_the_model_is_the_one_model2vecs_own_loader_makes() -> None:
    from model2vec import StaticModel

    library = StaticModel.from_pretrained(str(DEFAULT_MODEL_DIR), force_download=False)
    _same_model(StaticEmbedder(DEFAULT_MODEL_DIR)._model, library)


def test_loading_the_model_imports_no_hub_client() -> None:
    """model2vec's own loader imports huggingface_hub and its HTTP stack (half a second of
    CPU at every worker's start) for downloads a local folder never needs."""
    code = (
        "import sys; from turngraph.workers.embeddings.local import StaticEmbedder; "
        "StaticEmbedder().embed(['hello']); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'huggingface_hub'))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "[]", done.stdout


def test_a_config_without_its_defaults_goes_through_model2vecs_loader(tmp_path: Path) -> None:
    from model2vec import StaticModel

    copy = tmp_path / "model"
    shutil.copytree(DEFAULT_MODEL_DIR, copy)
    (copy / "SHA256SUMS").unlink()  # the config is changed on purpose
    config = json.loads((copy / "config.json").read_text())
    del config["max_length"], config["normalize"]
    (copy / "config.json").write_text(json.dumps(config))
    ours = StaticEmbedder(copy)._model
    _same_model(ours, StaticModel.from_pretrained(str(copy), force_download=False))
    assert ours.max_length is not None  # the library's default, not none at all


def test_a_config_that_is_not_json_is_a_clear_error(tmp_path: Path) -> None:
    copy = tmp_path / "model"
    shutil.copytree(DEFAULT_MODEL_DIR, copy)
    (copy / "SHA256SUMS").unlink()
    (copy / "config.json").write_text("{not json")
    with pytest.raises(EmbeddingModelError, match="cannot load the model"):
        StaticEmbedder(copy)
