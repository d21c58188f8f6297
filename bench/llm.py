"""The LLM path against a configured endpoint: ``python -m bench.llm``.

Runs the 40-turn, two-session developer conversation (``tests/support/dev_sessions.py``)
through embedded Redis and graph services and the endpoint the ``TURNGRAPH_LLM_*``
settings name (a real llama.cpp / llama-cpp-python / Ollama / vLLM server; nothing is
faked): publish, one ingest worker, then re-extraction runs until nothing is pending (or
``--max-runs`` / ``--max-minutes``), then one summary per session. Prints the HTTP
statuses the endpoint answered (500s after the first request are counted apart), per
call wall time and tokens, per re-extraction batch wall time, and ends with
``RESULT llm …``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import openai

from bench.report import percentile, result_line, table
from tests.support.dev_sessions import dev_sessions
from turngraph.app import build_distiller, build_ingest_worker, build_pipeline, ingest_burst
from turngraph.clients import Clients, build_clients, with_endpoints
from turngraph.embedded import EmbeddedServices
from turngraph.logs import configure_logging
from turngraph.producers.bounded_queue import BoundedQueue, read_stats
from turngraph.schemas.keys import REEXTRACT_PENDING
from turngraph.settings import Settings
from turngraph.workers.extraction.endpoint import Answer, LLMEndpoint, OutputMode, SystemPrompt
from turngraph.workers.llm_provider import EXTRACTION_COUNTERS, ProviderStats
from turngraph.workers.maintenance import reextract
from turngraph.workers.maintenance.summaries import summarize_last_turns


class Recorder:
    """HTTP statuses (in order) and completed answers of the endpoint."""

    def __init__(self) -> None:
        self.statuses: list[int] = []
        self.answers: list[Answer] = []

    def on_response(self, response: Any) -> None:
        if response.request.url.path.endswith("/chat/completions"):
            self.statuses.append(response.status_code)


@contextmanager
def services(settings: Settings, recorder: Recorder) -> Iterator[Clients]:
    with tempfile.TemporaryDirectory() as tmp, EmbeddedServices(Path(tmp)) as endpoints:
        configured = with_endpoints(settings.model_copy(update={"data_dir": Path(tmp)}), endpoints)
        clients = build_clients(configured)
        # the same client the application builds, with a hook that sees every status
        key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else "none"
        client = openai.OpenAI(
            base_url=settings.llm_base_url,
            api_key=key,
            timeout=settings.llm_timeout_s,
            max_retries=settings.llm_max_retries,
            http_client=openai.DefaultHttpxClient(event_hooks={"response": [recorder.on_response]}),
        )
        endpoint = LLMEndpoint(
            client,
            model=settings.llm_model,
            output_mode=OutputMode(settings.llm_output_mode),
            system_prompt=SystemPrompt(settings.llm_system_prompt),
            max_tokens_parameter=settings.llm_max_tokens_parameter,
            temperature=settings.llm_temperature,
        )
        endpoint.observer = recorder.answers.append
        if clients.llm is not None:
            clients.llm.close()
        clients.llm, clients.llm_endpoint = client, endpoint
        try:
            yield clients
        finally:
            clients.close()


def run(max_runs: int, max_minutes: float) -> int:
    settings = Settings()
    if not settings.llm_configured:
        print("no LLM configured: set TURNGRAPH_LLM_BASE_URL (and _MODEL) first")
        return 2
    configure_logging(settings)
    recorder = Recorder()
    turns = dev_sessions("bench")
    with services(settings, recorder) as clients:
        stats = ProviderStats(EXTRACTION_COUNTERS)
        pipeline = build_pipeline(clients, stats=stats)
        queue = BoundedQueue(clients.redis, name=clients.settings.ingest_queue, max_length=1_000)
        worker = build_ingest_worker(clients, pipeline)
        published = time.monotonic()
        queue.enqueue_many(turns)
        ingest_burst(clients, worker)
        stored_s = time.monotonic() - published
        records, _, _ = clients.graph.execute_query(
            "MATCH (e:Episode) RETURN count(e) AS n", database_=clients.graph_database
        )
        stored = int(records[0]["n"])
        dead = read_stats(clients.redis, clients.settings.ingest_queue).dead_lettered
        ingest_calls = len(recorder.answers)
        print(f"ingest: {stored} of {len(turns)} turns stored {stored_s:.1f} s after publishing")
        print(f"  extraction {stats.snapshot()} reasons {stats.reasons()}")

        distiller = build_distiller(clients)
        assert distiller.reextractor is not None
        rx = distiller.reextractor
        rows: list[list[object]] = []
        batch_seconds: list[float] = []
        deadline = time.monotonic() + max_minutes * 60
        pending = int(clients.redis.zcard(REEXTRACT_PENDING))
        given_up = 0
        for run_index in range(max_runs):
            if pending == 0 or time.monotonic() > deadline:
                break
            started = time.monotonic()
            before = len(recorder.answers)
            result = reextract.reextract_pending(distiller, rx)
            wall = time.monotonic() - started
            pending = result.pending
            given_up += result.given_up
            done = result.succeeded + result.failed
            batches = max(1, -(-done // max(1, rx.extractor.turns_per_call)))
            if done:
                batch_seconds.append(wall / batches)
            rows.append([run_index + 1, result.succeeded, result.failed, result.entities,
                         len(recorder.answers) - before, round(wall, 1), pending])  # fmt: skip
            print(f"  re-extraction run {run_index + 1}: {result.as_counts()} in {wall:.0f} s")
        if rows:
            print()
            print(table(["run", "done", "failed", "entities", "calls", "wall_s", "pending"], rows))

        summaries: list[list[object]] = []
        for session in sorted({t.session_id for t in turns}):
            started = time.monotonic()
            summary = summarize_last_turns(distiller, session, 20)
            method = summary.method.value if summary else "none"
            summaries.append([session, method, round(time.monotonic() - started, 1)])
            if summary is not None:  # what the model wrote (the bench's own conversation)
                print(f"  {session} {method}: {summary.content.model_dump_json()}")
        print()
        print(table(["session", "summary", "wall_s"], summaries))

    answers = recorder.answers
    statuses = Counter(recorder.statuses)
    late_500 = sum(1 for s in recorder.statuses[1:] if s == 500)
    print()
    print(f"HTTP statuses: {dict(statuses)} (500 after the first request: {late_500})")
    per_call = [[i + 1, round(a.seconds, 1), a.prompt_tokens, a.completion_tokens,
                 "cut" if a.truncated else ""] for i, a in enumerate(answers)]  # fmt: skip
    if per_call:
        print(table(["call", "wall_s", "prompt_tokens", "completion_tokens", "answer"], per_call))
    prompt = [float(a.prompt_tokens) for a in answers]
    completion = [float(a.completion_tokens) for a in answers]
    seconds = [a.seconds for a in answers]
    print(
        result_line(
            "llm",
            model=settings.llm_model,
            mode=clients.llm_endpoint.mode.value if clients.llm_endpoint else "none",
            turns=len(turns),
            stored=stored,
            stored_within_s=round(stored_s, 1),
            dead_lettered=dead,
            ingest_calls=ingest_calls,
            calls=len(answers),
            http_500_after_first=late_500,
            reextract_pending=pending,
            reextract_given_up=given_up,
            cut_answers=sum(1 for a in answers if a.truncated),
            wall_s_per_batch_p50=round(percentile(batch_seconds, 50), 1),
            wall_s_per_call_p50=round(percentile(seconds, 50), 1),
            prompt_tokens_per_call=round(sum(prompt) / len(prompt)) if prompt else 0,
            completion_tokens_per_call=round(sum(completion) / len(completion))
            if completion
            else 0,
            summaries_llm=sum(1 for s in summaries if s[1] == "llm"),
            summaries_stored=sum(1 for s in summaries if s[1] != "none"),
        )
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.llm")
    parser.add_argument("--max-runs", type=int, default=50, help="re-extraction runs at most")
    parser.add_argument(
        "--max-minutes", type=float, default=30.0, help="stop re-extracting after this"
    )
    args = parser.parse_args(argv)
    return run(args.max_runs, args.max_minutes)


if __name__ == "__main__":
    sys.exit(main())
