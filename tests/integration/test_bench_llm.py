"""``python -m bench.llm`` against the local server made to behave as llama-cpp-python
with a gemma template does (a 500 naming ``response_format`` for ``json_schema``, system
messages dropped, every other answer after a delay): every turn is recalled, one strict
request is sent, everything is enriched, and the run reports the figures of issue 36."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support.fake_openai import FakeOpenAI

pytestmark = pytest.mark.integration


def test_bench_llm_reports_the_figures() -> None:
    with FakeOpenAI(
        refuse_formats=("json_schema",), refuse_status=500, drop_system=True, echo=True, read_s=0.5
    ) as server:
        env = {
            **os.environ,
            "TURNGRAPH_LLM_BASE_URL": server.base_url,
            "TURNGRAPH_LOG_LEVEL": "WARNING",
        }
        done = subprocess.run(
            [sys.executable, "-m", "bench.llm", "--max-minutes", "4"],
            env=env,
            capture_output=True,
            text=True,
            timeout=500,
        )
    assert done.returncode == 0, done.stderr[-2000:]
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("RESULT llm "), done.stdout
    values = dict(part.split("=", 1) for part in last.split()[2:])
    assert (values["never_recalled"], values["backlog_final"], values["enriched"]) == (
        "0",
        "0",
        "40",
    )
    assert (values["mode"], values["strict_requests"], values["http_500"]) == (
        "json_object_schema",
        "1",
        "1",
    )
    assert float(values["recall_s_p95"]) > 0 and values["summaries_stored"] == "2"
    assert int(values["prompt_tokens_per_call"]) > 0
    assert "llm_system_prompt_dropped" in done.stdout + done.stderr
