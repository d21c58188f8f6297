"""The LLM never delays recall (issue 36), with real worker processes: against a server
that accepts and never answers, every turn is stored by the offline rules and recallable
within 5 s of the flush (as fast as without an LLM), the turns wait for enrichment, none
lost."""

from __future__ import annotations

import pytest

from tests.support.fake_openai import FakeOpenAI
from tests.support.llm_deployment import (
    RECALLABLE_WITHIN_S,
    TURNS,
    deployment,
    make_turns,
    recall_after_flush,
    without_llm,
)
from tests.support.worker_processes import wait_for
from turngraph.clients import Clients
from turngraph.workers.enrichment import read_status

pytestmark = [pytest.mark.integration, pytest.mark.heavy(85), pytest.mark.timeout(900)]


def test_a_server_that_never_answers_never_delays_recall(clients: Clients) -> None:
    reference = without_llm(clients)
    turns = make_turns("s1")
    hanging = FakeOpenAI(echo=True, read_s=3_600)  # accepts, then never answers
    with hanging as server, deployment(clients, server, TURNGRAPH_LLM_TIMEOUT_S="5") as outputs:
        recallable_s = recall_after_flush(clients, turns)
        assert wait_for(lambda: server.requests, 60), "enrichment never asked the LLM"
        assert read_status(clients.redis).backlog == TURNS  # waiting, none lost
    print(f"recallable after {recallable_s:.2f} s (no LLM: {reference:.2f} s)")
    assert recallable_s <= max(RECALLABLE_WITHIN_S, 2 * reference), (recallable_s, reference)
    for output in outputs:
        assert "Traceback" not in output, output[-3000:]
