"""The shipped model's reference vectors, checked at load through the real loading code:
a runtime that gives other vectors never embeds under the shipped model id."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from structlog.testing import capture_logs

from turngraph.doctor.checks import Status
from turngraph.doctor.service_checks import check_embeddings
from turngraph.settings import Settings
from turngraph.workers.embeddings.composite import CompositeEmbedder
from turngraph.workers.embeddings.errors import EmbeddingModelError
from turngraph.workers.embeddings.in_process import verify_checksums
from turngraph.workers.embeddings.local import StaticEmbedder
from turngraph.workers.embeddings.reference import REFERENCE_FILE, TOLERANCE, Agreement
from turngraph.workers.embeddings.transformer import DEFAULT_CONTEXTUAL_DIR, TransformerEmbedder
from turngraph.workers.recall.semantic import SemanticSignal

SHIPPED_ID = "onnx:minilm-l6-onnx"


def _copy(tmp_path: Path) -> Path:
    """The shipped folder, under its own name (the model id comes from it)."""
    folder = tmp_path / DEFAULT_CONTEXTUAL_DIR.name
    shutil.copytree(DEFAULT_CONTEXTUAL_DIR, folder)
    return folder


def _resum(folder: Path, name: str) -> None:
    """``name``'s line of SHA256SUMS for its new bytes (as a release of them would)."""
    sums = folder / "SHA256SUMS"
    digest = hashlib.sha256((folder / name).read_bytes()).hexdigest()
    lines = [
        f"{digest}  {name}" if line.endswith(f"  {name}") else line
        for line in sums.read_text().splitlines()
    ]
    sums.write_text("".join(f"{line}\n" for line in lines))


def _scale_weight(folder: Path, tensor: str, index: int, factor: float) -> None:
    """Multiply one float of an initializer in ``model.onnx`` (its raw bytes follow the
    name: protobuf field 9, ``J``, then the byte count as a varint)."""
    path = folder / "model.onnx"
    data = bytearray(path.read_bytes())
    found = re.search(re.escape(tensor.encode()) + rb"J([\x80-\xff]*[\x00-\x7f])", data)
    assert found is not None, tensor
    start = found.end() + 4 * index
    value = np.frombuffer(bytes(data[start : start + 4]), "<f4")[0]
    data[start : start + 4] = np.asarray([value * factor], "<f4").tobytes()
    path.write_bytes(bytes(data))
    _resum(folder, "model.onnx")


def test_the_shipped_model_gives_its_reference_vectors_bit_for_bit() -> None:
    with capture_logs() as logs:
        embedder = TransformerEmbedder(DEFAULT_CONTEXTUAL_DIR)
    check = embedder.reference
    assert check.agreement is Agreement.IDENTICAL and check.max_difference == 0.0
    assert embedder.model == SHIPPED_ID
    assert not [entry for entry in logs if entry["event"].startswith("embedding_reference")]
    # Tiny, and covered by the folder's checksums like the model itself.
    assert (DEFAULT_CONTEXTUAL_DIR / REFERENCE_FILE).stat().st_size < 16_000
    assert REFERENCE_FILE in (DEFAULT_CONTEXTUAL_DIR / "SHA256SUMS").read_text()
    assert verify_checksums(DEFAULT_CONTEXTUAL_DIR) == 3


def test_a_model_giving_other_vectors_embeds_under_another_id(tmp_path: Path) -> None:
    # Same file name and folder, one float of the last layer norm changed: what another
    # runtime's arithmetic does to the vectors, made real in the graph itself.
    folder = _copy(tmp_path)
    _scale_weight(folder, "model.encoder.layer.5.output.LayerNorm.weight", 7, 1.5)
    with capture_logs() as logs:
        drifted = TransformerEmbedder(folder)
        TransformerEmbedder(folder)  # a second replica in the process: checked once
    check = drifted.reference
    assert check.agreement is Agreement.DRIFTED and check.max_difference > TOLERANCE
    assert re.fullmatch(rf"{SHIPPED_ID}~[0-9a-f]{{8}}", drifted.model)
    (entry,) = [e for e in logs if e["event"].startswith("embedding_reference")]
    assert entry["event"] == "embedding_reference_drifted" and entry["log_level"] == "warning"
    assert entry["model_id"] == drifted.model and "onnxruntime " in entry["runtime"]
    assert "rebuild" in entry["fix"]
    probes = json.loads((folder / REFERENCE_FILE).read_text())["texts"]
    assert not any(text in str(entry) for text in probes)  # no text in the log
    # The stored vectors of the shipped id are foreign to it: embedded again, never mixed.
    signal = SemanticSignal(drifted)
    stored = TransformerEmbedder(DEFAULT_CONTEXTUAL_DIR).embed(["Anna adopted a puppy"])[0]
    assert signal.usable(SHIPPED_ID, stored) is None and signal.counters.foreign == 1
    assert signal.usable(drifted.model, drifted.embed(["Anna adopted a puppy"])[0]) is not None
    pair = CompositeEmbedder(drifted, StaticEmbedder())
    assert pair.model.startswith(f"composite:{drifted.model}*1+")
    # Machines that give the same bits agree on the id.
    again = _copy(tmp_path / "again")
    shutil.copy(folder / "model.onnx", again / "model.onnx")
    shutil.copy(folder / "SHA256SUMS", again / "SHA256SUMS")
    assert TransformerEmbedder(again).model == drifted.model


def test_a_difference_within_the_tolerance_keeps_the_id_and_warns(tmp_path: Path) -> None:
    # The reference one float-step off in one component: float noise, no rounding flipped.
    folder = _copy(tmp_path)
    document = json.loads((folder / REFERENCE_FILE).read_text())
    row = np.frombuffer(base64.b64decode(document["vectors"][1]), "<f4").copy()
    row[5] = np.nextafter(row[5], np.float32(1.0))
    document["vectors"][1] = base64.b64encode(row.tobytes()).decode()
    (folder / REFERENCE_FILE).write_text(json.dumps(document))
    _resum(folder, REFERENCE_FILE)
    with capture_logs() as logs:
        embedder = TransformerEmbedder(folder)
    assert embedder.reference.agreement is Agreement.CLOSE
    assert 0 < embedder.reference.max_difference <= TOLERANCE
    assert embedder.model == SHIPPED_ID
    (entry,) = [e for e in logs if e["event"].startswith("embedding_reference")]
    assert entry["event"] == "embedding_reference_close" and "onnxruntime " in entry["runtime"]


def test_an_altered_reference_file_is_refused_by_the_checksums(tmp_path: Path) -> None:
    folder = _copy(tmp_path)
    (folder / REFERENCE_FILE).write_text((folder / REFERENCE_FILE).read_text() + " ")
    with pytest.raises(EmbeddingModelError, match="checksum"):
        TransformerEmbedder(folder)


def test_doctor_reports_the_check(tmp_path: Path) -> None:
    shipped = check_embeddings(Settings(_env_file=None, embedding_provider="local"))
    assert shipped.status is Status.OK
    assert "reference vectors bit-identical" in shipped.detail
    folder = _copy(tmp_path)
    _scale_weight(folder, "model.encoder.layer.5.output.LayerNorm.weight", 7, 1.5)
    drifted = check_embeddings(
        Settings(_env_file=None, embedding_provider="local", embedding_model_path=folder)
    )
    assert drifted.status is Status.WARN and "drifted" in drifted.detail
    assert "turngraph embeddings rebuild" in drifted.fix and "onnxruntime" in drifted.fix
