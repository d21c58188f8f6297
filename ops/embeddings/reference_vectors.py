"""Write a model folder's reference vectors (run by hand; not part of the service).

    .venv/bin/python ops/embeddings/reference_vectors.py workers/embeddings/models/minilm-l6-onnx
    .venv/bin/python ops/embeddings/reference_vectors.py --variant \
        workers/embeddings/models/minilm-l6-onnx

Embeds :data:`PROBE_TEXTS` through the service's own loader and writes ``reference.json``
(the texts, the vectors as float32 bytes, the runtime's versions and the CPU's kernels) and
its line in the folder's ``SHA256SUMS``. Every process that loads the model embeds the
probes again and compares (``workers/embeddings/reference.py``). Run it on the reference
machine only when the model file changes: new reference vectors for the same model id would
hide a drift, not fix it (the known variants are dropped then: make them again).

``--variant``, run on another kind of CPU with the same runtime, keeps the reference and
adds (or replaces) this kind's vectors as a known variant: machines of this kind then load
the model without a drift warning, under the model id of their own vectors
(``onnx:<folder>~<digest>``, as before), and the tests that compare bits know what this kind
gives.
"""

from __future__ import annotations

import argparse
import hashlib
from pathlib import Path

from turngraph.workers.embeddings.reference import (
    REFERENCE_FILE,
    Variant,
    cpu_kernels,
    encode_reference,
    read_reference,
    runtime_versions,
)
from turngraph.workers.embeddings.transformer import TransformerEmbedder

PROBE_TEXTS = (
    "Which pet did Anna get recently?",
    "assistant: The stack trace points at src/billing/client.py line 42: a timeout talking "
    "to Postgres.",
    "Bob: ¿Dónde está la estación? 駅はどこですか 🚉",
)
"""A query and two turns, 9 to 30 word pieces: the two turns are those whose vectors moved
most when onnxruntime's fusions were turned off (docs/recall.md)."""


def _unchecked_vectors(folder: Path) -> Variant:
    """This machine's probe vectors, the folder's reference set aside while the model loads."""
    reference = folder / REFERENCE_FILE
    sums = folder / "SHA256SUMS"
    kept = [line for line in sums.read_text().splitlines() if not line.endswith(REFERENCE_FILE)]
    sums.write_text("".join(f"{line}\n" for line in kept))
    reference.unlink(missing_ok=True)  # the embedder below must not check the old one
    vectors = TransformerEmbedder(folder).embed(list(PROBE_TEXTS))
    return Variant(cpu_kernels(), runtime_versions(), vectors)


def main(folder: Path, variant: bool) -> None:
    path = folder / REFERENCE_FILE
    old = read_reference(path) if variant else None
    here = _unchecked_vectors(folder)
    if old is None:
        text = encode_reference(PROBE_TEXTS, here.vectors, here.kernels, here.runtime)
        said = f"{len(PROBE_TEXTS)} reference vectors ({here.kernels})"
    else:
        texts, reference, variants = old
        if list(texts) != list(PROBE_TEXTS):
            raise SystemExit("the reference's probe texts are not these: write it again first")
        if (here.vectors == reference.vectors).all():
            raise SystemExit(f"this machine ({here.kernels}) gives the reference's own vectors")
        others = [v for v in variants if v.kernels != here.kernels]
        text = encode_reference(
            texts, reference.vectors, reference.kernels, reference.runtime, [*others, here]
        )
        said = f"the {here.kernels} variant's vectors, beside the {reference.kernels} reference"
    path.write_text(text, encoding="utf-8")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    sums = folder / "SHA256SUMS"
    sums.write_text(sums.read_text() + f"{digest}  {REFERENCE_FILE}\n")
    print(f"{said} written to {path}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Write a model folder's reference vectors.")
    parser.add_argument("folder", type=Path)
    parser.add_argument("--variant", action="store_true", help="add this CPU's vectors")
    arguments = parser.parse_args()
    main(arguments.folder, arguments.variant)
