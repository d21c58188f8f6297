"""Forty developer turns in two sessions, with memory directives (``decision:``,
``preference (user):``, ``lesson:``): the conversation of issue 25's runs against a real
local model server, used by the slow-endpoint tests and ``bench.llm``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from turngraph.schemas.turn_event import ClientInfo, Role, TurnEvent

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)

_SESSION_A = [
    "The ingest worker in workers/ingest/batching.py stalls when the LLM is slow.",
    "It waits on the HTTP read; RQ's job timeout then fires inside the call.",
    "decision: every ingest batch gets one LLM budget derived from the job timeout",
    "Agreed. I will add llm_batch_budget_s to turngraph/settings.py.",
    "Which file reads the budget, workers/extraction/llm.py?",
    "Yes, LLMExtractor.extract takes a deadline and passes it to each request.",
    "preference (user): keep answers short, bullet points only",
    "Noted. The budget defaults to a quarter of TURNGRAPH_JOB_TIMEOUT_S.",
    "Run pytest on tests/integration/test_llm_slow_endpoint.py after the change.",
    "All green on branch fix/llm-budget, commit 3f9c2ab.",
    "lesson: a timer that fires once cannot bound the calls that run after it",
    "Open PR #118 for the budget and link issue #25.",
    "Should the summary jobs share the same budget?",
    "No, summaries run on the maintenance queue with their own job timeout.",
    "decision: summaries fall back to the offline summary on any LLM failure",
    "I changed workers/maintenance/llm_summary.py to catch the typed LLM errors.",
    "Check that turngraph summarize exits 0 when the endpoint is down.",
    "It does; the offline summary is stored with method extractive.",
    "Good. Update docs/llm.md with the new settings.",
    "Done, docs/llm.md lists every TURNGRAPH_LLM_ setting with its default.",
]

_SESSION_B = [
    "llama-cpp-python answers a json_schema response_format with HTTP 500.",
    "Its grammar converter accepts json_object with a schema field instead.",
    "decision: the auto output mode steps down on any rejection naming response_format",
    "I put the step-down in workers/extraction/endpoint.py.",
    "The gemma chat template drops the system message.",
    "We detect it from the prompt tokens the server reports and merge it.",
    "preference (user): run the real model server with one thread",
    "Started llama_cpp.server with n_threads 1 on port 8077.",
    "Reading a 3k token prompt takes about a minute on this CPU.",
    "Then ingest must not wait for it; re-extraction enriches later.",
    "lesson: a base model of 270M parameters rarely answers the schema well",
    "Use TURNGRAPH_LLM_BATCH_MAX_TURNS=2 for small context windows.",
    "Set TURNGRAPH_LLM_CONTEXT_TOKENS=4096 so the short prompt is used.",
    "Re-extraction now records results per batch in workers/maintenance/reextract.py.",
    "decision: re-extraction runs are bounded by llm_reextract_budget_s",
    "Queue status shows LLM calls and fallbacks by reason now.",
    "Run turngraph queue status --json to check the counters.",
    "llm_calls is 12 and fallback reasons show endpoint_cooling_down.",
    "Merge PR #121 into main after review.",
    "Merged; tagged v0.9.0 on main.",
]


def dev_sessions(prefix: str = "llm") -> list[TurnEvent]:
    """The 40 turns, session A then session B, user and assistant alternating."""
    turns = []
    for name, texts, offset in (("a", _SESSION_A, 0), ("b", _SESSION_B, 120)):
        for index, text in enumerate(texts):
            turns.append(
                TurnEvent(
                    session_id=f"{prefix}-{name}",
                    workspace=f"{prefix}-w",
                    user=f"{prefix}-u",
                    turn_index=index,
                    role=Role.USER if index % 2 == 0 else Role.ASSISTANT,
                    content=text,
                    occurred_at=T0 + timedelta(minutes=offset + index),
                    client=ClientInfo(name="tests", version="1"),
                )
            )
    return turns
