"""Write a model folder's reference vectors (run by hand on the reference machine).

    .venv/bin/python ops/embeddings/reference_vectors.py workers/embeddings/models/minilm-l6-onnx

Embeds :data:`PROBE_TEXTS` through the service's own loader and writes ``reference.json``
(the texts, the vectors as float32 bytes, the runtime's versions) and its line in the
folder's ``SHA256SUMS``. Every process that loads the model embeds the probes again and
compares (``workers/embeddings/reference.py``). Run it again only when the model file
changes: new reference vectors for the same model id would hide a drift, not fix it.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

from turngraph.workers.embeddings.reference import REFERENCE_FILE, encode_reference
from turngraph.workers.embeddings.transformer import TransformerEmbedder

PROBE_TEXTS = (
    "Which pet did Anna get recently?",
    "assistant: The stack trace points at src/billing/client.py line 42: a timeout talking "
    "to Postgres.",
    "Bob: ¿Dónde está la estación? 駅はどこですか 🚉",
)
"""A query and two turns, 9 to 30 word pieces: the two turns are those whose vectors moved
most when onnxruntime's fusions were turned off (docs/recall.md)."""


def main(folder: Path) -> None:
    reference = folder / REFERENCE_FILE
    reference.unlink(missing_ok=True)  # the embedder below must not check the old one
    sums = folder / "SHA256SUMS"
    kept = [line for line in sums.read_text().splitlines() if not line.endswith(REFERENCE_FILE)]
    sums.write_text("".join(f"{line}\n" for line in kept))
    vectors = TransformerEmbedder(folder).embed(list(PROBE_TEXTS))
    reference.write_text(encode_reference(PROBE_TEXTS, vectors), encoding="utf-8")
    digest = hashlib.sha256(reference.read_bytes()).hexdigest()
    sums.write_text(sums.read_text() + f"{digest}  {REFERENCE_FILE}\n")
    print(f"{len(PROBE_TEXTS)} reference vectors written to {reference}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
