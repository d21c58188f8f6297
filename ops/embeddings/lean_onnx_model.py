"""Recipe of the shipped contextual model's graph, step two (run by hand; not part of the service).

    /tmp/export/bin/python ops/embeddings/lean_onnx_model.py ORIGINAL.onnx \
        workers/embeddings/models/minilm-l6-onnx
    .venv/bin/python ops/embeddings/lean_onnx_model.py --variant ORIGINAL.onnx \
        workers/embeddings/models/minilm-l6-onnx   # on another kind of CPU

``ORIGINAL.onnx`` is the int8 model ``export_onnx_model.py`` quantises (the file shipped
until 2026-11-29, sha256 c06a9326...). The exporter traced the model for any batch and
padding, which leaves ~500 small nodes computing shapes and an attention mask that a text
embedded alone never needs. This script removes them and leaves every arithmetic node as
it was:

- each ``Reshape`` gets a constant target (``0`` copies a dimension, ``-1`` infers one),
  found by running the original at several batch sizes and lengths;
- the attention mask goes: the service embeds each text alone, without padding, so the
  mask is all ones, its additive term is ``+0.0`` and no softmax row can be all ``-inf``
  (the ``IsNaN``/``Where`` after each softmax never fires); the model's only input is
  ``input_ids``;
- the token-type ids (all zero) become the constant index 0.

onnxruntime's own fusions then run on the same arithmetic, so a text's vector is
bit-identical to the original's (checked here over every length from 1 to 256 tokens,
and by tests/unit/test_embeddings_contextual.py against the original's vectors kept in
tests/data/embeddings/). Writes ``model.onnx``, ``SHA256SUMS`` and that reference file;
then ``reference_vectors.py`` writes the folder's own probe vectors (``reference.json``).
"""

from __future__ import annotations

import hashlib
import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np

REFERENCE = Path("tests/data/embeddings/minilm_original_vectors.npz")
"""The original model's pooled token states of :data:`REFERENCE_TEXTS`, for the test."""

REFERENCE_TEXTS = (
    "ok",
    "",
    "Which pet did Anna get recently?",
    "Anna: I adopted a puppy last week, his name is Max.",
    "assistant: The stack trace points at src/billing/client.py line 42: a timeout talking "
    "to Postgres.",
    "user: decision: we use Redis streams for sync events instead of polling (PR #311).",
    "Bob: ¿Dónde está la estación? 駅はどこですか 🚉",
    "def pooled(ids):\n    return session.run(None, {'input_ids': ids})[0].mean(axis=0)",
    "skiing " * 40,
    "skiing " * 400,  # truncated at 256 tokens
    " ".join(f"word{n}" for n in range(120)),
)

PROBE_SHAPES = ((1, 5), (2, 7), (1, 13), (3, 1))
"""(batch, tokens) at which the original is run to read each Reshape's target."""


def _dead_code_removed(graph: Any) -> None:
    """Drop the nodes, initializers and inputs nothing downstream of the outputs reads."""
    needed = {output.name for output in graph.output}
    kept = []
    for node in reversed(list(graph.node)):
        if any(name in needed for name in node.output):
            kept.append(node)
            needed.update(node.input)
    kept.reverse()
    del graph.node[:]
    graph.node.extend(kept)
    for field in (graph.initializer, graph.input, graph.value_info):
        live = [item for item in field if item.name in needed]
        del field[:]
        field.extend(live)


def _without_mask(graph: Any) -> None:
    """Skip each layer's mask ``Add`` and the ``Where(IsNaN(softmax))`` after it."""
    rename: dict[str, str] = {}
    dropped = set()
    for node in graph.node:
        if node.op_type == "Add" and node.name.endswith("/attention/self/Add"):
            scores, mask = node.input
            assert "MatMul" in scores and "Where" in mask, node.name
            rename[node.output[0]] = scores
            dropped.add(node.name)
        elif node.op_type == "Where" and node.name.endswith("/attention/self/Where_1"):
            assert node.input[2].endswith("/Softmax_output_0"), node.name
            rename[node.output[0]] = node.input[2]
            dropped.add(node.name)
    assert len(dropped) == 12, f"expected 6 layers' mask nodes, found {len(dropped)}"
    kept = [node for node in graph.node if node.name not in dropped]
    for node in kept:
        for n, name in enumerate(node.input):
            node.input[n] = rename.get(name, name)
    del graph.node[:]
    graph.node.extend(kept)


def _token_type_zero(graph: Any) -> None:
    from onnx import numpy_helper

    name = "/model/embeddings/token_type_embeddings/Gather"
    (gather,) = [node for node in graph.node if node.name == name]
    graph.initializer.append(numpy_helper.from_array(np.asarray(0, np.int64), "lean_token_type"))
    gather.input[1] = "lean_token_type"
    stale = {gather.output[0], gather.output[0].removesuffix("_quantized")}
    live = [info for info in graph.value_info if info.name not in stale]
    del graph.value_info[:]
    graph.value_info.extend(live)


def _probe(original: Any, names: list[str]) -> list[dict[str, np.ndarray]]:
    """The values of ``names`` when the original runs at each of :data:`PROBE_SHAPES`."""
    import onnx
    import onnxruntime

    model = onnx.ModelProto()
    model.CopyFrom(original)
    outputs = {output.name for output in model.graph.output}
    model.graph.output.extend(
        onnx.helper.make_empty_tensor_value_info(name) for name in names if name not in outputs
    )
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = onnxruntime.InferenceSession(model.SerializeToString(), options)
    probes = []
    for batch, tokens in PROBE_SHAPES:
        ids = np.full((batch, tokens), 2000, np.int64)
        values = session.run(names, {"input_ids": ids, "attention_mask": np.ones_like(ids)})
        probes.append(dict(zip(names, values, strict=True)))
    return probes


def _static_target(inputs: list[tuple[int, ...]], targets: list[np.ndarray]) -> list[int]:
    """One Reshape target (``0`` = the input's dimension, ``-1`` = the rest) that gives
    every probed target from its probed input."""
    target: list[int | None] = []
    pairs = list(zip(inputs, targets, strict=True))
    for axis in range(len(targets[0])):
        values = {int(t[axis]) for t in targets}
        if all(axis < len(i) and int(t[axis]) == i[axis] for i, t in pairs):
            target.append(0)
        elif len(values) == 1:
            target.append(values.pop())
        else:
            target.append(None)
    assert target.count(None) <= 1, f"no static target for {targets}"
    return [-1 if value is None else value for value in target]


def _static_reshapes(graph: Any, original: Any) -> None:
    from onnx import numpy_helper

    reshapes = [node for node in graph.node if node.op_type == "Reshape"]
    probes = _probe(original, sorted({name for node in reshapes for name in node.input}))
    for n, node in enumerate(reshapes):
        data, shape = node.input
        target = _static_target([p[data].shape for p in probes], [p[shape] for p in probes])
        name = f"lean_reshape_{n}"
        graph.initializer.append(numpy_helper.from_array(np.asarray(target, np.int64), name))
        node.input[1] = name


def lean(original_path: Path) -> Any:
    """The lean graph of the original int8 model at ``original_path``."""
    import onnx

    original = onnx.load(str(original_path))
    model = onnx.load(str(original_path))
    graph = model.graph
    _without_mask(graph)
    _token_type_zero(graph)
    _dead_code_removed(graph)
    _static_reshapes(graph, original)
    _dead_code_removed(graph)
    assert [i.name for i in graph.input] == ["input_ids"], [i.name for i in graph.input]
    onnx.checker.check_model(model)
    return model


def _session(model: bytes | str) -> Any:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 3
    return onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])


def _check_identical(original_path: Path, lean_bytes: bytes) -> None:
    """Every length from 1 to 256 tokens, random ids: the same hidden states, bit for bit."""
    old, new = _session(str(original_path)), _session(lean_bytes)
    rng = np.random.default_rng(0)
    for tokens in range(1, 257):
        ids = rng.integers(999, 30522, size=(1, tokens), dtype=np.int64)
        ids[0, 0], ids[0, -1] = 101, 102
        (a,) = old.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids)})
        (b,) = new.run(None, {"input_ids": ids})
        assert np.array_equal(a, b), f"{tokens} tokens: max abs diff {np.abs(a - b).max()}"


def _reference_means(original_path: Path, tokenizer_path: Path) -> np.ndarray:
    """The original's mean token states of :data:`REFERENCE_TEXTS` (the service's pooling
    before it normalises)."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(tokenizer_path))
    tokenizer.enable_truncation(max_length=256)
    tokenizer.no_padding()
    session = _session(str(original_path))
    rows = []
    for encoding in tokenizer.encode_batch(list(REFERENCE_TEXTS)):
        ids = np.asarray([encoding.ids], np.int64)
        (hidden,) = session.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids)})
        rows.append(np.asarray(hidden[0].mean(axis=0), dtype=np.float32))
    return np.vstack(rows)


def add_variant(original_path: Path, shipped: Path) -> None:
    """On another kind of CPU: check the shipped graph against the original at every length
    here too, and keep the original's means on this kind beside the reference machine's
    (the test compares the kind it runs on)."""
    from turngraph.workers.embeddings.reference import cpu_kernels

    _check_identical(original_path, (shipped / "model.onnx").read_bytes())
    kept = dict(np.load(REFERENCE))
    kernels = cpu_kernels()
    if kernels == str(kept["kernels"]):
        raise SystemExit(f"this CPU ({kernels}) is the reference's kind")
    labels = [str(k) for k in kept.get("variant_kernels", np.asarray([], dtype=str))]
    rows = list(kept.get("variant_means", np.zeros((0, *kept["means"].shape), np.float32)))
    if kernels in labels:
        del rows[labels.index(kernels)], labels[labels.index(kernels)]
    labels.append(kernels)
    rows.append(_reference_means(original_path, shipped / "tokenizer.json"))
    kept["variant_kernels"], kept["variant_means"] = np.asarray(labels), np.stack(rows)
    np.savez_compressed(REFERENCE, **kept)
    print(f"bit-identical to the original at 1-256 tokens on {kernels}; its means kept")


def main(original_path: Path, out: Path) -> None:
    model = lean(original_path)
    data = model.SerializeToString()
    _check_identical(original_path, data)
    original_sha = hashlib.sha256(original_path.read_bytes()).hexdigest()
    tokenizer = original_path.parent / "tokenizer.json"
    if tokenizer.is_file() and tokenizer.resolve() != (out / "tokenizer.json").resolve():
        shutil.copy(tokenizer, out / "tokenizer.json")
    means = _reference_means(original_path, out / "tokenizer.json")
    REFERENCE.parent.mkdir(parents=True, exist_ok=True)
    texts = np.asarray(REFERENCE_TEXTS)
    from turngraph.workers.embeddings.reference import cpu_kernels

    np.savez_compressed(
        REFERENCE, texts=texts, means=means, sha256=original_sha, kernels=cpu_kernels()
    )
    (out / "model.onnx").write_bytes(data)
    sums = []
    for name in ("model.onnx", "tokenizer.json"):
        sums.append(f"{hashlib.sha256((out / name).read_bytes()).hexdigest()}  {name}\n")
    (out / "SHA256SUMS").write_text("".join(sums))
    print(f"{len(model.graph.node)} nodes, bit-identical to {original_sha[:12]} at 1-256 tokens")


if __name__ == "__main__":
    if sys.argv[1] == "--variant":
        add_variant(Path(sys.argv[2]), Path(sys.argv[3]))
    else:
        main(Path(sys.argv[1]), Path(sys.argv[2]))
