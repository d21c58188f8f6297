"""``python -m bench.llm`` against the local server made to behave as llama-cpp-python
with a gemma template does (a 500 naming ``response_format`` for ``json_schema``, system
messages dropped, the first extraction calls failing): the run stores all 40 turns,
meets one 500 only, re-extracts everything and reports per-call figures."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support.fake_openai import FakeOpenAI, error

pytestmark = pytest.mark.integration


def test_bench_llm_reports_the_protocol_figures() -> None:
    with FakeOpenAI(
        refuse_formats=("json_schema",), refuse_status=500, drop_system=True, echo=True
    ) as server:
        server.add(*[error(503)] * 6)  # ingest falls back: re-extraction has the work
        env = {
            **os.environ,
            "TURNGRAPH_LLM_BASE_URL": server.base_url,
            "TURNGRAPH_LLM_MAX_RETRIES": "0",
            "TURNGRAPH_LLM_FALLBACK_COOLDOWN_S": "0",
            "TURNGRAPH_LOG_LEVEL": "WARNING",
        }
        done = subprocess.run(
            [sys.executable, "-m", "bench.llm", "--max-runs", "3"],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert done.returncode == 0, done.stderr[-2000:]
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("RESULT llm "), done.stdout
    values = dict(part.split("=", 1) for part in last.split()[2:])
    assert (values["stored"], values["dead_lettered"], values["reextract_pending"]) == (
        "40",
        "0",
        "0",
    )
    assert (values["mode"], values["http_500_after_first"]) == ("json_object_schema", "0")
    assert int(values["prompt_tokens_per_call"]) > 0 and values["summaries_stored"] == "2"
    assert "llm_system_prompt_dropped" in done.stdout + done.stderr
