"""``openai`` costs ~1 s of CPU to import (its generated types): a process started without
an LLM or embeddings endpoint (the embedded default: offline extractor, local model) must
not pay it at every start. Each case runs in its own interpreter."""

from __future__ import annotations

import subprocess
import sys

_WORKER_MODULES = (
    "import sys\n"
    "import turngraph.app, turngraph.cli.worker_cmd, turngraph.cli.run_cmd\n"
    "import turngraph.cli.endpoint_cmd, turngraph.cli.doctor_cmd, turngraph.cli.distill_cmd\n"
    "from turngraph.app import build_embedder, build_extractor\n"
    "from turngraph.settings import Settings\n"
)


def _loads_openai(code: str) -> bool:
    done = subprocess.run(
        [sys.executable, "-c", _WORKER_MODULES + code + "\nprint('openai' in sys.modules)"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout.strip().splitlines()[-1] == "True"


def test_the_default_worker_modules_and_offline_extractor_do_not_load_openai() -> None:
    assert not _loads_openai("build_extractor(Settings(), None)")


def test_an_embeddings_endpoint_loads_it_when_built() -> None:
    code = (
        "s = Settings(embedding_provider='openai', embedding_base_url='http://127.0.0.1:9/v1',"
        " embedding_model='m', embedding_dimensions=8)\n"
        "build_embedder(s)"
    )
    assert _loads_openai(code)
