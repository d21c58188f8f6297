"""The contextual model's pass, old graph beside new: ``python -m bench.embed_pass``.

The shipped int8 MiniLM (``workers/embeddings/models/minilm-l6-onnx``) is the exported
graph with its shape arithmetic and attention-mask path removed
(``ops/embeddings/lean_onnx_model.py``). This bench loads the original file (from the
repository's history, checked against its sha256, or ``--original PATH``) and the shipped
one through the same loader (:class:`TransformerEmbedder`) and embeds the same texts with
each, interleaved round by round: the CPU per text (``time.process_time``, one thread,
median of the rounds), the ratio old/new and whether the vectors are the same bits.

Texts: queries as a replica embeds them (~14 tokens), ``bench.ingest``'s turns (20-38
tokens), texts cut to 64, 128 and 256 tokens, and, when the shared RealMem data is
beside the repository, a sample of its turns as ingest embeds them (``speaker: text``:
median ~110 tokens, assistant turns 43 % at the 256-token cap).

    python -m bench.embed_pass [--rounds 7] [--original PATH]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bench.ingest import make_turns
from bench.report import result_line, table
from turngraph.workers.embeddings.texts import speaker_text
from turngraph.workers.embeddings.transformer import DEFAULT_CONTEXTUAL_DIR, TransformerEmbedder

ORIGINAL_COMMIT = "064c638aed51e6a8611c67de773cecf4277aacd5"
"""The commit that shipped the exported graph (replaced by the lean one on 2026-11-29)."""
ORIGINAL_SHA256 = "c06a932690fedff4e60d15a3f41f5b46449768f5bcba9860a3595df00b166c9d"
MODEL_PATH = "workers/embeddings/models/minilm-l6-onnx/model.onnx"

QUERIES = (
    "which database did we pick for the billing events?",
    "how does the user want the examples formatted in the docs?",
    "what was the timeout we set for the Postgres client last week?",
    "did Anna adopt a dog or a cat, and what is its name?",
    "why does the sync worker retry forever on a 409 response?",
    "where is the retry policy for the export jobs configured?",
)
LONG = (
    "The stack trace points at src/billing/client.py: a timeout talking to Postgres after "
    "the pool ran dry, so we moved the retry policy into the worker and kept the handler "
    "small; the export job now batches its writes and the sync worker stops retrying on a "
    "409, which was the loop the user saw every night. "
)


def original_folder(scratch: Path, given: Path | None) -> Path:
    """A model folder holding the original graph and the shipped tokenizer."""
    folder = scratch / "minilm-l6-onnx-original"
    folder.mkdir()
    if given is not None:
        data = given.read_bytes()
    else:
        repo = Path(__file__).resolve().parents[1]
        shown = subprocess.run(
            ["git", "-C", str(repo), "show", f"{ORIGINAL_COMMIT}:{MODEL_PATH}"],
            capture_output=True,
            check=False,
        )
        if shown.returncode != 0:
            raise SystemExit(
                "the original model is not in this checkout's history: pass --original PATH "
                f"(the file at {ORIGINAL_COMMIT[:12]}:{MODEL_PATH})"
            )
        data = shown.stdout
    if hashlib.sha256(data).hexdigest() != ORIGINAL_SHA256:
        raise SystemExit(f"the original model's sha256 is not {ORIGINAL_SHA256[:12]}...")
    (folder / "model.onnx").write_bytes(data)
    shutil.copy(DEFAULT_CONTEXTUAL_DIR / "tokenizer.json", folder / "tokenizer.json")
    return folder


def cut(embedder: TransformerEmbedder, text: str, tokens: int) -> str:
    """``text`` repeated and cut so that it encodes to ``tokens`` tokens (the cap at 256)."""
    words = (text * (1 + tokens // 40)).split()
    low, high = 1, len(words)
    while low < high:  # the longest prefix of words within the budget
        middle = (low + high + 1) // 2
        if len(embedder._tokenizer.encode(" ".join(words[:middle])).ids) <= tokens:
            low = middle
        else:
            high = middle - 1
    return " ".join(words[:low]) if tokens < 256 else text * 20


def realmem_turns(count: int) -> list[str]:
    """``count`` RealMem turns as ingest embeds them, when the shared data is there."""
    from bench.retrieval_realmem import SHARED_PATH

    repo = Path(__file__).resolve().parents[1]
    folder = next((p / SHARED_PATH for p in repo.parents if (p / SHARED_PATH).is_dir()), None)
    if folder is None:
        return []
    texts = []
    for path in sorted(folder.glob("*_dialogues_*.json")):
        for session in json.loads(path.read_text())["dialogues"]:
            for turn in session["dialogue_turns"]:
                if isinstance(turn.get("content"), str):
                    texts.append(speaker_text(turn["content"], turn["speaker"].lower()))
    return random.Random(3).sample(texts, min(count, len(texts)))


def text_sets(embedder: TransformerEmbedder) -> dict[str, list[str]]:
    sets = {
        "query": list(QUERIES),
        "bench.ingest turn": [speaker_text(t.content, t.role) for t in make_turns(24, sessions=6)],
        "64 tokens": [cut(embedder, LONG[n:] + LONG[:n], 64) for n in (0, 40, 80)],
        "128 tokens": [cut(embedder, LONG[n:] + LONG[:n], 128) for n in (0, 40)],
        "256 tokens (cap)": [cut(embedder, LONG[n:] + LONG[:n], 256) for n in (0, 40)],
    }
    real = realmem_turns(60)
    if real:
        sets["RealMem turn"] = real
    return sets


def cpu_per_text(embedder: TransformerEmbedder, texts: Sequence[str], repeat: int) -> float:
    """CPU seconds per text, embedding each alone ``repeat`` times (as recall and ingest do)."""
    started = time.process_time()
    for _ in range(repeat):
        for text in texts:
            embedder.embed([text])
    return (time.process_time() - started) / (repeat * len(texts))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--original", type=Path, help="the original model.onnx")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        old = TransformerEmbedder(original_folder(Path(scratch), args.original))
        new = TransformerEmbedder(DEFAULT_CONTEXTUAL_DIR)
    sets = text_sets(new)
    rows, result = [], {}
    worst = 0.0
    identical = 0
    total = 0
    for name, texts in sets.items():
        a, b = old.embed(texts), new.embed(texts)
        worst = max(worst, float(np.abs(a - b).max()))
        identical += sum(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
        total += len(texts)
        tokens = round(statistics.median(len(new._tokenizer.encode(t).ids) for t in texts))
        repeat = max(1, round(0.15 / (len(texts) * (0.0008 + 0.00014 * tokens))))
        cpu_per_text(old, texts, 1)  # warm both
        cpu_per_text(new, texts, 1)
        olds, news = [], []
        for _ in range(args.rounds):
            olds.append(cpu_per_text(old, texts, repeat))
            news.append(cpu_per_text(new, texts, repeat))
        old_ms, new_ms = statistics.median(olds) * 1e3, statistics.median(news) * 1e3
        rows.append([name, len(texts), tokens, old_ms, new_ms, old_ms / new_ms])
        key = name.split(" (")[0].replace(".", "_").replace(" ", "_").lower()
        result[f"{key}_old_ms"] = round(old_ms, 3)
        result[f"{key}_new_ms"] = round(new_ms, 3)
        result[f"{key}_ratio"] = round(old_ms / new_ms, 2)
    headers = ["texts", "n", "median_tokens", "old_ms_per_text", "new_ms_per_text", "old/new"]
    print(table(headers, rows))
    print(f"vectors: {identical} of {total} bit-identical, max abs difference {worst:g}")
    print(result_line("embed_pass", **result, identical=identical, texts=total, max_abs_diff=worst))
    return 0 if identical == total else 1


if __name__ == "__main__":
    sys.exit(main())
