"""The shipped model's reference vectors, checked at load through the real loading code:
a runtime that gives other vectors never embeds under the shipped model id."""

from __future__ import annotations

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
from turngraph.workers.embeddings.reference import (
    REFERENCE_FILE,
    TOLERANCE,
    Agreement,
    Variant,
    cpu_kernels,
    encode_reference,
    read_reference,
    runtime_versions,
)
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


def _own_vectors(tmp_path: Path) -> tuple[list[str], np.ndarray]:
    """The probe texts and what this machine's runtime gives for them (no check)."""
    folder = _copy(tmp_path / "unchecked")
    texts, _, _ = read_reference(folder / REFERENCE_FILE)
    (folder / REFERENCE_FILE).unlink()
    sums = folder / "SHA256SUMS"
    kept = [line for line in sums.read_text().splitlines() if not line.endswith(REFERENCE_FILE)]
    sums.write_text("".join(f"{line}\n" for line in kept))
    unchecked = TransformerEmbedder(folder)
    assert unchecked.reference.agreement is Agreement.UNCHECKED
    return texts, unchecked.embed(texts)


def _with_reference(
    tmp_path: Path, reference: np.ndarray, variants: list[Variant] | None = None
) -> Path:
    """A copy of the shipped folder whose reference.json holds ``reference`` (made on
    "REFERENCE-KERNELS") and ``variants``, as a release would write it."""
    folder = _copy(tmp_path)
    texts, _, _ = read_reference(folder / REFERENCE_FILE)
    runtime = runtime_versions()
    text = encode_reference(texts, reference, "REFERENCE-KERNELS", runtime, variants or [])
    (folder / REFERENCE_FILE).write_text(text, encoding="utf-8")
    _resum(folder, REFERENCE_FILE)
    return folder


def test_the_shipped_model_gives_its_reference_or_a_known_variant_bit_for_bit() -> None:
    # The reference was made on a machine with AMX; a kind of CPU running other float
    # kernels (AVX2) gives other bits, kept in the folder as a known variant: both kinds
    # load the shipped model without a warning, each under the id of its own vectors.
    with capture_logs() as logs:
        embedder = TransformerEmbedder(DEFAULT_CONTEXTUAL_DIR)
    check = embedder.reference
    assert check.agreement in (Agreement.IDENTICAL, Agreement.VARIANT), check.describe()
    if check.agreement is Agreement.IDENTICAL:
        assert check.max_difference == 0.0 and embedder.model == SHIPPED_ID
    else:
        assert check.reference_kernels == check.kernels  # made on this kind of CPU
        assert embedder.model == f"{SHIPPED_ID}~{check.digest}"
    assert not [entry for entry in logs if entry["log_level"] == "warning"]
    # Tiny, and covered by the folder's checksums like the model itself.
    assert (DEFAULT_CONTEXTUAL_DIR / REFERENCE_FILE).stat().st_size < 16_000
    assert REFERENCE_FILE in (DEFAULT_CONTEXTUAL_DIR / "SHA256SUMS").read_text()
    assert verify_checksums(DEFAULT_CONTEXTUAL_DIR) == 3
    _, reference, variants = read_reference(DEFAULT_CONTEXTUAL_DIR / REFERENCE_FILE)
    assert reference.kernels == "AMX" and [v.kernels for v in variants] == ["AVX2"]


def test_the_reference_machines_own_bits_keep_the_plain_id(tmp_path: Path) -> None:
    _, own = _own_vectors(tmp_path)
    with capture_logs() as logs:
        embedder = TransformerEmbedder(_with_reference(tmp_path, own))
    assert embedder.reference.agreement is Agreement.IDENTICAL and embedder.model == SHIPPED_ID
    assert not [e for e in logs if e["event"].startswith("embedding_reference")]


def test_a_known_variant_embeds_under_its_own_id_without_a_warning(tmp_path: Path) -> None:
    _, own = _own_vectors(tmp_path)
    other = own.copy()
    other[0, 3] += 0.01  # the reference machine's bits: another kind of CPU's
    variant = Variant("VARIANT-KERNELS", runtime_versions(), own)
    with capture_logs() as logs:
        embedder = TransformerEmbedder(_with_reference(tmp_path, other, [variant]))
    check = embedder.reference
    assert check.agreement is Agreement.VARIANT and check.reference_kernels == "VARIANT-KERNELS"
    digest = hashlib.sha256(np.ascontiguousarray(own, "<f4").tobytes()).hexdigest()[:8]
    assert embedder.model == f"{SHIPPED_ID}~{digest}"  # the id a drift to these bits gets
    # At most one info line (dropped where another test set the level to warnings).
    entries = [e for e in logs if e["event"].startswith("embedding_reference")]
    assert [(e["event"], e["log_level"]) for e in entries] in (
        [],
        [("embedding_reference_variant", "info")],
    )
    assert "VARIANT-KERNELS" in check.describe() and check.model_suffix in check.describe()
    # Without the variant the same machine has drifted: same id, and a warning saying why.
    with capture_logs() as logs:
        drifted = TransformerEmbedder(_with_reference(tmp_path / "plain", other))
    assert drifted.reference.agreement is Agreement.DRIFTED and drifted.model == embedder.model
    (entry,) = [e for e in logs if e["event"].startswith("embedding_reference")]
    assert entry["log_level"] == "warning" and "--variant" in entry["fix"]


def test_the_cpus_kernels_are_read_from_its_flags(tmp_path: Path) -> None:
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx2 fma\n")
    assert cpu_kernels(info) == "AVX2"
    info.write_text("flags\t\t: avx2 avx512f avx512_vnni amx_tile amx_int8\n")
    assert cpu_kernels(info) == "AMX"
    info.write_text("Features\t: fp asimd evtstrm\n")
    assert cpu_kernels(info) == "NEON"
    assert cpu_kernels(tmp_path / "missing") == "unknown"


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
    _, own = _own_vectors(tmp_path)
    near = own.copy()
    near[1, 5] = np.nextafter(near[1, 5], np.float32(1.0))
    with capture_logs() as logs:
        embedder = TransformerEmbedder(_with_reference(tmp_path, near))
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
    assert "bit-identical" in shipped.detail
    folder = _copy(tmp_path)
    _scale_weight(folder, "model.encoder.layer.5.output.LayerNorm.weight", 7, 1.5)
    drifted = check_embeddings(
        Settings(_env_file=None, embedding_provider="local", embedding_model_path=folder)
    )
    assert drifted.status is Status.WARN and "drifted" in drifted.detail
    assert "turngraph embeddings rebuild" in drifted.fix
