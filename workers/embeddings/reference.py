"""Does this runtime give the shipped model's vectors? Checked once when a model loads.

A model folder may carry ``reference.json``: a few probe texts and the vectors the model
gave for them on the reference machine (written by ``ops/embeddings/reference_vectors.py``,
covered by the folder's ``SHA256SUMS``), and the vectors other kinds of CPU give for them
(``variants``: the same runtime on other float kernels, AVX2 where the reference machine
has AMX). At load the probes are embedded once and compared:

- bit-identical to the reference: normal, nothing logged;
- bit-identical to a known variant: normal for that kind of CPU, logged once at info; the
  model id gets ``~`` and the digest of these vectors, as for a drift (below), so vectors
  of two kinds of CPU are never ranked together, and every machine of one kind agrees;
- within :data:`TOLERANCE` of the reference (float noise, no int8 rounding flipped):
  logged once as a warning naming the runtime; the model id is unchanged;
- beyond it (an int8 rounding flipped: vectors move by ~1e-3 to 1e-2): the model id gets
  ``~`` and a digest of this runtime's probe vectors, so vectors stored under the plain id
  count as another model's (``foreign``) and nothing ranks two vector spaces together.
  Machines giving the same bits get the same id. docs/recall.md ("The semantic signal").
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import numpy as np
import structlog

from turngraph.workers.embeddings.errors import EmbeddingModelError
from turngraph.workers.embeddings.protocol import Vectors

__all__ = [
    "REFERENCE_FILE", "TOLERANCE", "Agreement", "ReferenceCheck", "Variant", "check_reference",
    "cpu_kernels", "encode_reference", "read_reference", "runtime_versions",
]  # fmt: skip

log = structlog.get_logger(__name__)

REFERENCE_FILE = "reference.json"

TOLERANCE = 1e-5
"""Largest difference of one vector component (unit vectors) still taken as the same
space. A different float summation order moves components by ~1e-7; one flipped int8
rounding by 1e-4 or more (measured: docs/recall.md)."""

RUNTIME_PACKAGES = ("onnxruntime", "tokenizers")

CPU_FEATURES = (
    ("amx_int8", "AMX"), ("avx512_vnni", "AVX-512 VNNI"), ("avx512f", "AVX-512"),
    ("avx_vnni", "AVX-VNNI"), ("avx2", "AVX2"), ("asimd", "NEON"),
)  # fmt: skip
"""The widest int8/float kernels onnxruntime's CPU provider picks, by ``/proc/cpuinfo``
flag, widest first: machines of one label run the same kernels."""


class Agreement(StrEnum):
    IDENTICAL = "identical"
    VARIANT = "variant"
    """Bit-identical to the vectors of another kind of CPU the folder knows: the model id
    is suffixed (those vectors are not the reference's), logged at info only."""
    CLOSE = "close"
    """Not the same bits, within :data:`TOLERANCE`: same model id, one warning."""
    DRIFTED = "drifted"
    """Beyond :data:`TOLERANCE`: the model id is suffixed, stored vectors are foreign."""
    UNCHECKED = "unchecked"
    """The folder has no reference (a model of the operator's own)."""


@dataclass(frozen=True)
class Variant:
    """The probe vectors of one kind of CPU."""

    kernels: str
    """What ``cpu_kernels`` said on the machine that made them (``AVX2``, ``AMX`` …)."""
    runtime: str
    vectors: Vectors


@dataclass(frozen=True)
class ReferenceCheck:
    agreement: Agreement
    max_difference: float = 0.0
    """From the reference's vectors (a variant's too)."""
    runtime: str = ""
    """This process's ``onnxruntime`` and ``tokenizers`` versions."""
    reference_runtime: str = ""
    """The versions the reference vectors were made with."""
    reference_kernels: str = ""
    """The reference machine's kernels; a known variant's kernels when it matched."""
    kernels: str = ""
    """This machine's (:func:`cpu_kernels`)."""
    digest: str = ""
    """Of this runtime's probe vectors: the suffix of a drifted model's id."""
    milliseconds: float = 0.0

    @property
    def model_suffix(self) -> str:
        suffixed = (Agreement.DRIFTED, Agreement.VARIANT)
        return f"~{self.digest}" if self.agreement in suffixed else ""

    @property
    def fix(self) -> str:
        """What brings the reference's vectors back, by what differs from its machine."""
        rebuild = "`turngraph embeddings rebuild` once the whole fleet gives these vectors"
        if self.runtime != self.reference_runtime:
            return f"install the reference runtime ({self.reference_runtime}), or {rebuild}"
        if self.kernels != self.reference_kernels:
            return (
                f"this CPU's float kernels ({self.kernels}) are not the reference machine's "
                f"({self.reference_kernels or 'unknown'}): add this kind's vectors as a known "
                "variant (ops/embeddings/reference_vectors.py --variant), embed on one kind "
                f"of CPU, or {rebuild}"
            )
        return (
            "the reference's runtime on its kind of CPU gives other vectors here: check the "
            f"model file and the platform's math libraries, or {rebuild}"
        )

    def describe(self) -> str:
        """One line for ``turngraph doctor`` (no probe text)."""
        if self.agreement is Agreement.UNCHECKED:
            return "no reference vectors in the model folder (not checked)"
        if self.agreement is Agreement.IDENTICAL:
            return f"reference vectors bit-identical ({self.runtime}, {self.kernels})"
        if self.agreement is Agreement.VARIANT:
            return (
                f"the known {self.reference_kernels} variant's vectors bit-identical "
                f"({self.runtime}): model id suffix {self.model_suffix}"
            )
        return (
            f"reference vectors {self.agreement.value}: max difference "
            f"{self.max_difference:.1e} (tolerance {TOLERANCE:.0e}) with {self.runtime} "
            f"on {self.kernels}, made with {self.reference_runtime} on "
            f"{self.reference_kernels or 'unknown kernels'}"
        )


def runtime_versions() -> str:
    found = []
    for name in RUNTIME_PACKAGES:
        try:
            found.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            found.append(f"{name} ?")
    return ", ".join(found)


def cpu_kernels(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """A label for this CPU's widest kernels (``unknown`` where ``cpuinfo`` is unreadable)."""
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "unknown"
    flags: set[str] = set()
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name.strip() in ("flags", "Features"):
            flags.update(value.split())
    return next((label for flag, label in CPU_FEATURES if flag in flags), "unknown")


def _rows(vectors: Vectors) -> list[str]:
    return [base64.b64encode(np.asarray(row, "<f4").tobytes()).decode() for row in vectors]


def encode_reference(
    texts: Sequence[str],
    vectors: Vectors,
    kernels: str,
    runtime: str,
    variants: Sequence[Variant] = (),
) -> str:
    """The ``reference.json`` text for ``vectors`` (float32 bytes, base64: exact)."""
    document = {
        "runtime": runtime,
        "kernels": kernels,
        "texts": list(texts),
        "vectors": _rows(vectors),
        "variants": [
            {"kernels": v.kernels, "runtime": v.runtime, "vectors": _rows(v.vectors)}
            for v in variants
        ],
    }
    return json.dumps(document, ensure_ascii=False, indent=1) + "\n"


def _matrix(rows: object) -> Vectors:
    if not isinstance(rows, list) or not rows:
        raise ValueError("no vectors")
    return np.vstack([np.frombuffer(base64.b64decode(row), "<f4") for row in rows]).astype(
        np.float32
    )


def read_reference(path: Path) -> tuple[list[str], Variant, list[Variant]]:
    """The probe texts, the reference machine's vectors and the known variants."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        texts = [str(text) for text in document["texts"]]
        reference = Variant(
            str(document.get("kernels", "")),
            str(document.get("runtime", "?")),
            _matrix(document["vectors"]),
        )
        variants = [
            Variant(str(item["kernels"]), str(item.get("runtime", "?")), _matrix(item["vectors"]))
            for item in document.get("variants", [])
        ]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise EmbeddingModelError(f"unreadable reference vectors: {path}") from exc
    shapes = {reference.vectors.shape} | {v.vectors.shape for v in variants}
    if not texts or len(shapes) != 1 or len(texts) != len(reference.vectors):
        raise EmbeddingModelError(f"reference vectors and texts do not match: {path}")
    return texts, reference, variants


def check_reference(
    folder: Path, model: str, embed: Callable[[list[str]], Vectors]
) -> ReferenceCheck:
    """Embed the folder's probe texts with ``embed`` and compare; logs once when not
    identical (``model``: the id before any suffix)."""
    path = folder / REFERENCE_FILE
    kernels = cpu_kernels()
    if not path.is_file():
        return ReferenceCheck(Agreement.UNCHECKED, runtime=runtime_versions(), kernels=kernels)
    texts, reference, variants = read_reference(path)
    started = time.perf_counter()
    got = np.asarray(embed(texts), dtype=np.float32)
    milliseconds = (time.perf_counter() - started) * 1000
    if got.shape != reference.vectors.shape:
        raise EmbeddingModelError(
            f"the model gives {got.shape[-1]}-d vectors, its reference "
            f"{reference.vectors.shape[-1]}-d: {path}"
        )
    difference = float(np.abs(got - reference.vectors).max())
    matched = reference
    if np.array_equal(got, reference.vectors):
        agreement = Agreement.IDENTICAL
    elif known := next((v for v in variants if np.array_equal(got, v.vectors)), None):
        agreement, matched = Agreement.VARIANT, known
    elif difference <= TOLERANCE:
        agreement = Agreement.CLOSE
    else:
        agreement = Agreement.DRIFTED
    check = ReferenceCheck(
        agreement,
        max_difference=difference,
        runtime=runtime_versions(),
        reference_runtime=matched.runtime,
        reference_kernels=matched.kernels,
        kernels=kernels,
        digest=hashlib.sha256(np.ascontiguousarray(got, "<f4").tobytes()).hexdigest()[:8],
        milliseconds=milliseconds,
    )
    if agreement is Agreement.VARIANT:
        log.info(
            "embedding_reference_variant", model=model, model_id=model + check.model_suffix,
            kernels=matched.kernels, runtime=check.runtime,
        )  # fmt: skip
    elif agreement is Agreement.CLOSE:
        log.warning(
            "embedding_reference_close", model=model, max_difference=difference,
            tolerance=TOLERANCE, runtime=check.runtime, reference_runtime=matched.runtime,
            kernels=kernels, reference_kernels=matched.kernels,
        )  # fmt: skip
    elif agreement is Agreement.DRIFTED:
        log.warning(
            "embedding_reference_drifted", model=model, model_id=model + check.model_suffix,
            max_difference=difference, tolerance=TOLERANCE, runtime=check.runtime,
            reference_runtime=matched.runtime, kernels=kernels,
            reference_kernels=matched.kernels, fix=check.fix,
        )  # fmt: skip
    return check
