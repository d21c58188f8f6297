"""The LLM never delays recall (issue 36), with real worker processes: two ingest workers,
two maintenance workers and a recall replica against a local OpenAI-compatible server.

As measured before: against a server that behaves like llama-cpp-python (HTTP 500 to a
``json_schema`` ``response_format``, ~5 s for anything else), 1 of 20 turns was
recallable 30 s after the flush and the strict form was sent 6 times. Here every turn is
stored by the offline rules and recallable within 5 s of the flush, the strict form goes
out at most twice for the whole deployment (the mode found is kept in Redis), and the
enrichment pass merges the LLM's answer in afterwards. Against a server that accepts and
never answers, the same 20 of 20 within 5 s.
"""

from __future__ import annotations

import pytest

from tests.support.fake_openai import FakeOpenAI
from tests.support.llm_deployment import (
    RECALLABLE_WITHIN_S,
    TURNS,
    deployment,
    make_turns,
    recall_after_flush,
    strict_requests,
    without_llm,
)
from tests.support.worker_processes import wait_for
from turngraph.clients import Clients
from turngraph.workers.enrichment import read_status

pytestmark = [pytest.mark.integration, pytest.mark.heavy(85), pytest.mark.timeout(900)]

LLM_DELAY_S = 5.0
"""How long the server takes to answer anything but a refusal (a small local model)."""


def test_a_slow_local_model_refusing_json_schema_never_delays_recall(clients: Clients) -> None:
    reference = without_llm(clients)
    turns = make_turns("s1")
    with (
        FakeOpenAI(
            refuse_formats=("json_schema",), refuse_status=500, echo=True, read_s=LLM_DELAY_S
        ) as server,
        deployment(clients, server) as outputs,
    ):
        recallable_s = recall_after_flush(clients, turns)
        enriched_then = read_status(clients.redis).enriched
        # later: every turn enriched (none dropped: the backlog has room)
        assert wait_for(lambda: read_status(clients.redis).enriched >= TURNS, 240), read_status(
            clients.redis
        )
        status = read_status(clients.redis)
        strict = strict_requests(server)
        answered = len(server.requests) - strict
    print(f"recallable after {recallable_s:.2f} s (no LLM: {reference:.2f} s); strict {strict}")
    assert recallable_s <= max(RECALLABLE_WITHIN_S, 2 * reference), (recallable_s, reference)
    assert enriched_then < TURNS  # recallable before the LLM had answered for them all
    assert (status.backlog, status.dropped) == (0, 0)
    assert strict <= 2, strict  # the whole deployment, not per process
    assert answered >= 1  # the LLM did the enrichment
    for output in outputs:
        assert "Traceback" not in output, output[-3000:]
