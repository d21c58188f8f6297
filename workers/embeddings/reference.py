"""Does this runtime give the shipped model's vectors? Checked once when a model loads.

A model folder may carry ``reference.json``: a few probe texts and the vectors the model
gave for them on the reference machine (written by ``ops/embeddings/reference_vectors.py``,
covered by the folder's ``SHA256SUMS``). At load the probes are embedded once and compared:

- bit-identical: normal, nothing logged;
- within :data:`TOLERANCE` (float noise, no int8 rounding flipped): logged once as a
  warning naming the runtime; the model id is unchanged;
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
    "REFERENCE_FILE", "TOLERANCE", "Agreement", "ReferenceCheck", "check_reference",
    "encode_reference", "runtime_versions",
]  # fmt: skip

log = structlog.get_logger(__name__)

REFERENCE_FILE = "reference.json"

TOLERANCE = 1e-5
"""Largest difference of one vector component (unit vectors) still taken as the same
space. A different float summation order moves components by ~1e-7; one flipped int8
rounding by 1e-4 or more (measured: docs/recall.md)."""

RUNTIME_PACKAGES = ("onnxruntime", "tokenizers")


class Agreement(StrEnum):
    IDENTICAL = "identical"
    CLOSE = "close"
    """Not the same bits, within :data:`TOLERANCE`: same model id, one warning."""
    DRIFTED = "drifted"
    """Beyond :data:`TOLERANCE`: the model id is suffixed, stored vectors are foreign."""
    UNCHECKED = "unchecked"
    """The folder has no reference (a model of the operator's own)."""


@dataclass(frozen=True)
class ReferenceCheck:
    agreement: Agreement
    max_difference: float = 0.0
    runtime: str = ""
    """This process's ``onnxruntime`` and ``tokenizers`` versions."""
    reference_runtime: str = ""
    """The versions the reference vectors were made with."""
    digest: str = ""
    """Of this runtime's probe vectors: the suffix of a drifted model's id."""
    milliseconds: float = 0.0

    @property
    def model_suffix(self) -> str:
        return f"~{self.digest}" if self.agreement is Agreement.DRIFTED else ""

    def describe(self) -> str:
        """One line for ``turngraph doctor`` (no probe text)."""
        if self.agreement is Agreement.UNCHECKED:
            return "no reference vectors in the model folder (not checked)"
        if self.agreement is Agreement.IDENTICAL:
            return f"reference vectors bit-identical ({self.runtime})"
        return (
            f"reference vectors {self.agreement.value}: max difference "
            f"{self.max_difference:.1e} (tolerance {TOLERANCE:.0e}) with {self.runtime}, "
            f"made with {self.reference_runtime}"
        )


def runtime_versions() -> str:
    found = []
    for name in RUNTIME_PACKAGES:
        try:
            found.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            found.append(f"{name} ?")
    return ", ".join(found)


def encode_reference(texts: Sequence[str], vectors: Vectors) -> str:
    """The ``reference.json`` text for ``vectors`` (float32 bytes, base64: exact)."""
    rows = [base64.b64encode(np.asarray(row, "<f4").tobytes()).decode() for row in vectors]
    document = {"runtime": runtime_versions(), "texts": list(texts), "vectors": rows}
    return json.dumps(document, ensure_ascii=False, indent=1) + "\n"


def _read(path: Path) -> tuple[list[str], Vectors, str]:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        texts = [str(text) for text in document["texts"]]
        rows = [np.frombuffer(base64.b64decode(row), "<f4") for row in document["vectors"]]
        vectors = np.vstack(rows).astype(np.float32)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise EmbeddingModelError(f"unreadable reference vectors: {path}") from exc
    if len(texts) != len(vectors) or not texts:
        raise EmbeddingModelError(f"reference vectors and texts do not match: {path}")
    return texts, vectors, str(document.get("runtime", "?"))


def check_reference(
    folder: Path, model: str, embed: Callable[[list[str]], Vectors]
) -> ReferenceCheck:
    """Embed the folder's probe texts with ``embed`` and compare; logs once when not
    identical (``model``: the id before any suffix)."""
    path = folder / REFERENCE_FILE
    if not path.is_file():
        return ReferenceCheck(Agreement.UNCHECKED, runtime=runtime_versions())
    texts, expected, reference_runtime = _read(path)
    started = time.perf_counter()
    got = np.asarray(embed(texts), dtype=np.float32)
    milliseconds = (time.perf_counter() - started) * 1000
    if got.shape != expected.shape:
        raise EmbeddingModelError(
            f"the model gives {got.shape[-1]}-d vectors, its reference {expected.shape[-1]}-d: "
            f"{path}"
        )
    difference = float(np.abs(got - expected).max())
    if np.array_equal(got, expected):
        agreement = Agreement.IDENTICAL
    elif difference <= TOLERANCE:
        agreement = Agreement.CLOSE
    else:
        agreement = Agreement.DRIFTED
    check = ReferenceCheck(
        agreement,
        max_difference=difference,
        runtime=runtime_versions(),
        reference_runtime=reference_runtime,
        digest=hashlib.sha256(np.ascontiguousarray(got, "<f4").tobytes()).hexdigest()[:8],
        milliseconds=milliseconds,
    )
    if agreement is Agreement.CLOSE:
        log.warning(
            "embedding_reference_close", model=model, max_difference=difference,
            tolerance=TOLERANCE, runtime=check.runtime, reference_runtime=reference_runtime,
        )  # fmt: skip
    elif agreement is Agreement.DRIFTED:
        log.warning(
            "embedding_reference_drifted", model=model, model_id=model + check.model_suffix,
            max_difference=difference, tolerance=TOLERANCE, runtime=check.runtime,
            reference_runtime=reference_runtime,
            fix=f"install the reference runtime ({reference_runtime}) to keep the stored "
            "vectors, or run `turngraph embeddings rebuild` once the whole fleet runs this one",
        )  # fmt: skip
    return check
