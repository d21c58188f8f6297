"""The LLM path against a configured endpoint: ``python -m bench.llm``.

Runs the 40-turn, two-session developer conversation (``tests/support/dev_sessions.py``)
through embedded Redis and graph services, a recall replica (a thread) and the endpoint
the ``TURNGRAPH_LLM_*`` settings name (a real llama.cpp / llama-cpp-python / Ollama / vLLM
server, or a scripted one). Turns are published one at a time, each ingested (one burst
of the ingest worker) and asked of recall until it is found, while the enrichment pass
runs beside (a thread, as a maintenance worker runs it). The same turns are first run with
no LLM (another workspace): the reference the LLM run is compared with. Then enrichment
runs until the backlog is empty (or ``--max-minutes``), and one summary per session.

Reports the time from publishing a turn to recalling it (p50/p95, and its ratio to the
reference), the enrichment backlog and lag (largest, and when the turns were all
published), the strict ``json_schema`` requests sent, HTTP statuses, per-call wall time
and tokens; ends with ``RESULT llm …``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import openai

from bench.report import percentile, result_line, table
from tests.support.dev_sessions import dev_sessions
from turngraph.app import (
    build_distiller,
    build_ingest_worker,
    build_pipeline,
    build_recall_worker,
    ingest_burst,
)
from turngraph.clients import Clients, build_clients, with_endpoints
from turngraph.embedded import EmbeddedServices
from turngraph.logs import configure_logging
from turngraph.producers.bounded_queue import BoundedQueue
from turngraph.producers.recall_client import RecallClient
from turngraph.schemas.turn_event import TurnEvent
from turngraph.settings import Settings
from turngraph.workers.embeddings.factory import build_embedder
from turngraph.workers.enrichment import read_status
from turngraph.workers.extraction.endpoint import (
    Answer,
    LLMEndpoint,
    OutputMode,
    SystemPrompt,
    final_refusal,
)
from turngraph.workers.extraction.offline import OfflineExtractor
from turngraph.workers.extraction.shared_mode import SharedMode
from turngraph.workers.maintenance import reextract
from turngraph.workers.maintenance.context import Distiller
from turngraph.workers.maintenance.summaries import summarize_last_turns

RECALL_WAIT_S = 60.0
"""A turn not recallable this long after publishing counts as never (the run goes on)."""


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
        # the client the application builds, with a hook that sees every status
        key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else "none"
        hooks = {"response": [final_refusal, recorder.on_response]}
        client = openai.OpenAI(
            base_url=settings.llm_base_url,
            api_key=key,
            timeout=settings.llm_timeout_s,
            max_retries=settings.llm_max_retries,
            http_client=openai.DefaultHttpxClient(event_hooks=hooks),
        )
        endpoint = LLMEndpoint(
            client,
            model=settings.llm_model,
            output_mode=OutputMode(settings.llm_output_mode),
            system_prompt=SystemPrompt(settings.llm_system_prompt),
            max_tokens_parameter=settings.llm_max_tokens_parameter,
            temperature=settings.llm_temperature,
        )
        endpoint.shared = SharedMode(
            clients.redis, str(client.base_url), settings.llm_model, settings.llm_mode_ttl_s
        )
        endpoint.observer = recorder.answers.append
        if clients.llm is not None:
            clients.llm.close()
        clients.llm, clients.llm_endpoint = client, endpoint
        try:
            yield clients
        finally:
            clients.close()


@contextmanager
def recall_replica(clients: Clients) -> Iterator[RecallClient]:
    """A recall replica serving from a thread (lexical: the bench measures freshness)."""
    recall = build_recall_worker(clients, embedder=build_embedder("none"))
    thread = threading.Thread(target=recall.run, name="bench-recall", daemon=True)
    thread.start()
    try:
        yield RecallClient(clients.redis, deadline_ms=2_000)
    finally:
        recall.stop()
        thread.join(timeout=30)


@contextmanager
def enriching(distiller: Distiller) -> Iterator[None]:
    """The enrichment pass run again and again beside (as maintenance workers run it)."""
    assert distiller.reextractor is not None
    rx = distiller.reextractor
    stop = threading.Event()

    def loop() -> None:
        while not stop.is_set():
            idle = read_status(distiller.redis).backlog == 0
            if idle or reextract.reextract_pending(distiller, rx) is None:
                stop.wait(0.2)

    thread = threading.Thread(target=loop, name="bench-enrich", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=600)


def time_to_recall(
    clients: Clients,
    recall: RecallClient,
    worker: Any,
    turns: list[TurnEvent],
    samples: list[tuple[int, float]],
) -> list[float]:
    """Seconds from publishing each turn to finding it through recall; the backlog and
    its lag after each turn go to ``samples``."""
    queue = BoundedQueue(clients.redis, name=clients.settings.ingest_queue, max_length=1_000)
    seconds = []
    for event in turns:
        published = time.monotonic()
        queue.enqueue_many([event])
        ingest_burst(clients, worker)
        deadline = published + RECALL_WAIT_S
        while time.monotonic() < deadline:
            answer = recall.recall(
                event.content[:200],
                session_id=event.session_id,
                workspace=event.workspace,
                user=event.user,
                max_results=10,
            )
            if any(event.event_id in r.source_event_ids for r in answer.results):
                seconds.append(time.monotonic() - published)
                break
            time.sleep(0.02)  # the replica applies the change stream
        else:
            seconds.append(float("inf"))
        status = read_status(clients.redis)
        samples.append((status.backlog, status.lag_s))
    return seconds


def run(max_minutes: float) -> int:
    settings = Settings()
    if not settings.llm_configured:
        print("no LLM configured: set TURNGRAPH_LLM_BASE_URL (and _MODEL) first")
        return 2
    configure_logging(settings)
    recorder = Recorder()
    turns = dev_sessions("bench")
    reference_turns = dev_sessions("reference")  # other sessions, workspace and user
    with services(settings, recorder) as clients, recall_replica(clients) as recall:
        offline = build_ingest_worker(clients, build_pipeline(clients, OfflineExtractor()))
        reference = time_to_recall(clients, recall, offline, reference_turns, [])
        distiller = build_distiller(clients)
        worker = build_ingest_worker(clients, build_pipeline(clients))
        started = time.monotonic()
        samples: list[tuple[int, float]] = []
        with enriching(distiller):
            recall_s = time_to_recall(clients, recall, worker, turns, samples)
            published = read_status(clients.redis)
            deadline = time.monotonic() + max_minutes * 60
            while time.monotonic() < deadline and read_status(clients.redis).backlog:
                status = read_status(clients.redis)
                samples.append((status.backlog, status.lag_s))
                time.sleep(0.5)  # the enrichment thread works the backlog off
        enriched_s = time.monotonic() - started
        final = read_status(clients.redis)
        summaries: list[list[object]] = []
        for session in sorted({t.session_id for t in turns}):
            began = time.monotonic()
            summary = summarize_last_turns(distiller, session, 20)
            method = summary.method.value if summary else "none"
            summaries.append([session, method, round(time.monotonic() - began, 1)])
        strict = clients.llm_endpoint.stats.strict_requests if clients.llm_endpoint else 0
        mode = clients.llm_endpoint.mode.value if clients.llm_endpoint else "none"

    answers = recorder.answers
    statuses = Counter(recorder.statuses)
    print(f"HTTP statuses: {dict(statuses)}; strict json_schema requests: {strict}")
    rows = [
        ["no LLM (reference)", *_figures(reference)],
        ["LLM configured", *_figures(recall_s)],
    ]
    print(table(["recall a new turn", "p50_s", "p95_s", "max_s"], rows))
    print(table(["session", "summary", "wall_s"], summaries))
    lags = [lag for _, lag in samples] or [0.0]
    backlogs = [backlog for backlog, _ in samples] or [0]
    seconds = [a.seconds for a in answers]
    prompt = [float(a.prompt_tokens) for a in answers]
    completion = [float(a.completion_tokens) for a in answers]
    ratio = percentile(recall_s, 50) / max(percentile(reference, 50), 1e-6)
    print(
        result_line(
            "llm",
            model=settings.llm_model,
            mode=mode,
            turns=len(turns),
            recall_s_p50=round(percentile(recall_s, 50), 3),
            recall_s_p95=round(percentile(recall_s, 95), 3),
            reference_recall_s_p50=round(percentile(reference, 50), 3),
            recall_ratio_p50=round(ratio, 2),
            never_recalled=sum(1 for s in recall_s if s == float("inf")),
            strict_requests=strict,
            http_500=statuses.get(500, 0),
            backlog_when_published=published.backlog,
            lag_s_when_published=round(published.lag_s, 1),
            backlog_max=max(backlogs),
            enrich_lag_s_max=round(max(lags), 1),
            backlog_final=final.backlog,
            enriched=final.enriched,
            enrich_dropped=final.dropped,
            enriched_within_s=round(enriched_s, 1),
            calls=len(answers),
            cut_answers=sum(1 for a in answers if a.truncated),
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


def _figures(seconds: list[float]) -> list[object]:
    return [
        round(percentile(seconds, 50), 3),
        round(percentile(seconds, 95), 3),
        round(max(seconds, default=0.0), 3),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.llm")
    parser.add_argument("--max-minutes", type=float, default=30.0, help="stop enriching after this")
    args = parser.parse_args(argv)
    return run(args.max_minutes)


if __name__ == "__main__":
    sys.exit(main())
