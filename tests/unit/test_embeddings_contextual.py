"""The shipped contextual model (ONNX) and the shipped pair, through the real loading code."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from turngraph.workers.embeddings.composite import CompositeEmbedder
from turngraph.workers.embeddings.errors import EmbeddingModelError
from turngraph.workers.embeddings.factory import default_local_embedder, local_embedder
from turngraph.workers.embeddings.local import DEFAULT_MODEL_DIR, StaticEmbedder, verify_checksums
from turngraph.workers.embeddings.protocol import normalise_rows
from turngraph.workers.embeddings.reference import Agreement
from turngraph.workers.embeddings.texts import embedding_text, own_part
from turngraph.workers.embeddings.transformer import DEFAULT_CONTEXTUAL_DIR, TransformerEmbedder

REFERENCE_VECTORS = Path(__file__).parents[1] / "data/embeddings/minilm_original_vectors.npz"


@pytest.fixture(scope="module")
def contextual() -> TransformerEmbedder:
    return TransformerEmbedder(DEFAULT_CONTEXTUAL_DIR)


def test_the_shipped_model_matches_its_checksums() -> None:
    assert verify_checksums(DEFAULT_CONTEXTUAL_DIR) == 3  # model, tokenizer, reference
    assert "Apache License" in (DEFAULT_CONTEXTUAL_DIR / "NOTICE").read_text()


def test_the_shipped_graph_gives_the_original_models_vectors(
    contextual: TransformerEmbedder,
) -> None:
    # The shipped graph is the exported int8 model with its shape arithmetic and mask path
    # removed (ops/embeddings/lean_onnx_model.py); the reference holds the original file's
    # pooled token states, written by that script from the original on each kind of CPU
    # (AMX, and AVX2 as a variant: their float kernels give other bits). Same onnxruntime,
    # same kind of CPU: the same bits (a wrong transformation is off by 1e-3 or more).
    reference = np.load(REFERENCE_VECTORS)
    assert str(reference["sha256"]).startswith("c06a932690fe")  # the int8 export of 2026-11-25
    texts = [str(text) for text in reference["texts"]]
    assert len(texts) >= 10 and max(len(text) for text in texts) > 2000  # truncated ones too
    check = contextual.reference  # which kind this CPU's vectors are (the folder's own check)
    assert check.agreement in (Agreement.IDENTICAL, Agreement.VARIANT), check.describe()
    kinds = [str(reference["kernels"]), *(str(k) for k in reference["variant_kernels"])]
    means = [reference["means"], *reference["variant_means"]]
    expected = normalise_rows(means[kinds.index(check.reference_kernels)])
    vectors = contextual.embed(texts)
    assert np.abs(vectors - expected).max() <= 1e-6
    assert [i.name for i in contextual._session.get_inputs()] == ["input_ids"]


def test_vectors_are_unit_length_and_carry_meaning(contextual: TransformerEmbedder) -> None:
    vectors = contextual.embed(
        [
            "Anna: I adopted a puppy last week, his name is Max.",
            "Which pet did Anna get recently?",
            "The quarterly tax report is due on Friday",
        ]
    )
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    sims = vectors @ vectors.T
    assert sims[0, 1] > sims[0, 2] + 0.2  # the question finds the puppy, not the tax report
    assert contextual.embed([]).shape == (0, 384)
    # The folder's name, and on a kind of CPU other than the reference's its vectors' digest.
    assert contextual.model == "onnx:minilm-l6-onnx" + contextual.reference.model_suffix


def test_batching_and_padding_do_not_change_a_vector(contextual: TransformerEmbedder) -> None:
    texts = ["ok", "skiing " * 2000, "what did we decide about the release branch?", "!!"] * 10
    batch = contextual.embed(texts)
    for n, text in enumerate(texts[:4]):
        assert np.allclose(contextual.embed([text])[0], batch[n], atol=1e-4)


def test_a_tampered_model_is_refused(tmp_path: Path) -> None:
    copy = tmp_path / "model"
    shutil.copytree(DEFAULT_CONTEXTUAL_DIR, copy)
    data = bytearray((copy / "model.onnx").read_bytes())
    data[-1] ^= 0xFF
    (copy / "model.onnx").write_bytes(bytes(data))
    with pytest.raises(EmbeddingModelError, match="checksum"):
        TransformerEmbedder(copy)


def test_a_broken_model_file_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "model.onnx").write_bytes(b"not an onnx graph")
    shutil.copy(DEFAULT_CONTEXTUAL_DIR / "tokenizer.json", tmp_path / "tokenizer.json")
    with pytest.raises(EmbeddingModelError, match="cannot load"):
        TransformerEmbedder(tmp_path)
    with pytest.raises(EmbeddingModelError, match=r"tokenizer\.json"):
        TransformerEmbedder(tmp_path / "missing")


def test_a_model_folder_is_loaded_by_what_it_holds(tmp_path: Path) -> None:
    assert isinstance(local_embedder(DEFAULT_CONTEXTUAL_DIR), TransformerEmbedder)
    assert isinstance(local_embedder(DEFAULT_MODEL_DIR), StaticEmbedder)


def test_the_pair_fuses_the_two_cosines_with_its_weights(contextual: TransformerEmbedder) -> None:
    static = StaticEmbedder()
    pair = CompositeEmbedder(contextual, static, contextual_weight=2.0, static_weight=1.0)
    memory = embedding_text("Bob: yes, every winter!", "Anna: do you still go skiing?")
    query = "does Bob ski?"
    joined = pair.embed([memory, query])
    assert joined.shape == (2, 384 + static.dimension)
    assert np.allclose(np.linalg.norm(joined, axis=1), 1.0, atol=1e-5)
    # The contextual model sees the memory alone, the static one with its previous turn.
    c = contextual.embed(["Bob: yes, every winter!", query])
    s = static.embed([str(memory), query])
    expected = (2.0 * float(c[0] @ c[1]) + 1.0 * float(s[0] @ s[1])) / 3.0
    assert math.isclose(float(joined[0] @ joined[1]), expected, abs_tol=1e-5)
    suffix = contextual.reference.model_suffix
    assert pair.model == f"composite:onnx:minilm-l6-onnx{suffix}*2+model2vec:minilm-l6-static*1"


def test_the_default_local_embedder_is_the_shipped_pair() -> None:
    embedder = default_local_embedder()
    assert isinstance(embedder, CompositeEmbedder)
    assert embedder.dimension == 384 + 256
    assert embedder.embed(["hello"]).shape == (1, 640)


def test_an_embedding_text_is_the_joined_string_and_keeps_its_parts() -> None:
    text = embedding_text("Bob: yes!", "Anna: skiing?")
    assert text == "Anna: skiing?\nBob: yes!" and isinstance(text, str)
    assert (own_part(text), own_part("a plain query")) == ("Bob: yes!", "a plain query")
    assert embedding_text("Bob: yes!", None) == "Bob: yes!"
