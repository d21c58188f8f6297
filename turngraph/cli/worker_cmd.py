"""``turngraph worker ingest|recall|maintenance`` and ``turngraph services``: Procfile entries."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable

import neo4j.exceptions
import redis
import structlog
from rq.exceptions import StopRequested

from turngraph.app import (
    build_admission,
    build_ask_admission,
    build_embedder,
    build_ingest_worker,
    build_maintenance_worker,
    build_pipeline,
    build_recall_worker,
)
from turngraph.cli.engine_option import add_graph_option, with_graph_option
from turngraph.clients import Clients, build_clients
from turngraph.embedded import EmbeddedServices, neo4j_fetch
from turngraph.embedded.redis_server import without_password
from turngraph.lifecycle import (
    STOP_SIGNALS,
    StopSignal,
    defer_stops,
    forks_die_with_this_process,
    pause,
    raise_if_stopping,
    stop_on_signals,
    stop_was_requested,
)
from turngraph.logs import configure_logging
from turngraph.metrics import (
    EmbeddingCollector,
    IngestHistograms,
    LLMCollector,
    QueueCollector,
    RecallCollector,
    RequestCollector,
    new_registry,
    recall_histogram,
    recall_queued_histogram,
    serve_metrics,
)
from turngraph.schemas.errors import PermanentError, TransientError
from turngraph.settings import Settings
from turngraph.supervisor import Backoff, Supervisor, follow_embedded_services
from turngraph.workers.graph.errors import convert
from turngraph.workers.ingest.admission import Admission
from turngraph.workers.ingest.pipeline import IngestPipeline
from turngraph.workers.maintenance.worker import MaintenanceWorker
from turngraph.workers.rq_adapter import StoppableWorker

__all__ = [
    "CLIENTS_LEAVE_TIMEOUT_S", "HELPER_JOIN_S", "fetch_graph", "register", "retire_scheduler",
    "run_services", "run_worker", "stop_command_listener", "supervise",
    "wait_for_clients_to_leave", "wait_for_graph", "wait_for_redis",
]  # fmt: skip

log = structlog.get_logger(__name__)


def supervise(build: Callable[[], StoppableWorker], clients: Clients, *, burst: bool) -> int:
    """Run RQ workers until asked to stop, replacing one that quit because Redis went away.

    RQ ends its work loop on any Redis error (it expects a process supervisor); a Redis
    restart would then stop ingestion for good under runners such as honcho. Once Redis
    answers again a new worker starts; the batch the old one held is retried by RQ once
    its short started-registry entry lapses (``workers/ingest/batching.py``), and writes
    are idempotent. A Redis lost while a worker starts is waited out the same way.
    """
    while True:
        worker: StoppableWorker | None = None
        try:
            worker = build()
            # A stop signal whose exception Python swallowed (it can land in a finaliser or
            # in logging's lock release) is still recorded: RQ is about to install its own
            # handlers, and would never hear of it. From here until RQ's handlers are in,
            # a stop is only recorded (raised inside RQ's start-up it could leave a
            # half-built object behind), and handed to RQ at the first turn of its loop
            # (StoppableWorker.pending_stop).
            raise_if_stopping()
            worker.pending_stop = stop_was_requested
            defer_stops()
            # The scheduler runs retries with back-off (Retry, set by admission).
            worker.work(burst=burst, with_scheduler=True, logging_level=None)  # ours: logs.py
        except redis.RedisError as exc:  # from start-up, or RQ's teardown, Redis away
            log.warning("rq_worker_lost_redis", error=type(exc).__name__)
        finally:
            if worker is not None:
                stop_command_listener(worker)
        if (worker is not None and worker.stop_requested) or stop_was_requested():
            return 0  # a stop was asked for (or recorded before RQ's handlers were in)
        if burst:
            return 0 if worker is not None else 1
        try:
            wait_for_redis(clients.redis)
        except StopRequested:  # the old worker's signal handlers still answer a stop
            return 0
        if worker is not None:
            retire_scheduler(worker)


def retire_scheduler(worker: StoppableWorker) -> None:
    """The scheduler of a worker whose loop ended on a lost Redis: stopped, and its locks
    released (RQ's ``RQScheduler.release_locks``, owner-checked). They outlive a Redis
    restart (append-only file) for a minute, and the next worker's scheduler could not
    take them meanwhile: retries and periodic jobs waited (seen: the maintenance worker's
    scheduler not back 30 s after Redis was killed under ``up``)."""
    worker.stop_scheduler()
    if worker.scheduler is not None:
        with contextlib.suppress(redis.RedisError):
            worker.scheduler.release_locks()


HELPER_JOIN_S = 5.0
"""How long a stopping worker waits for its helper thread (admission of turns or asks): each
notices a stop within its one-second pop, and must be out before the connections close."""


def stop_command_listener(worker: StoppableWorker) -> None:
    """RQ's command listener (a pubsub thread) outlives a work loop a signal interrupted
    before RQ's own teardown; stopped here, before the connection is closed under it."""
    thread = worker.pubsub_thread
    if thread is not None and thread.is_alive():
        with contextlib.suppress(redis.RedisError, ValueError, OSError):
            worker.unsubscribe()


def wait_for_graph(build: Callable[[], IngestPipeline]) -> IngestPipeline:
    """``build()``, again with back-off while the graph server is unreachable or starting
    (its schema is set up first): an ingest worker started beside a restarting graph
    server waits for it instead of dying."""
    for attempt, delay in enumerate(Backoff().delays(), start=1):
        try:
            return build()
        except (TransientError, neo4j.exceptions.DriverError, neo4j.exceptions.Neo4jError) as exc:
            if isinstance(convert(exc, "set up the schema"), PermanentError):
                raise
            log.warning("ingest_worker_waiting_for_graph", attempt=attempt, delay_s=delay)
            time.sleep(delay)
    raise AssertionError("unreachable")


def wait_for_redis(conn: redis.Redis) -> None:
    """Until Redis answers again, with the supervisor's back-off; logs once."""
    log.warning("rq_worker_waiting_for_redis")
    for delay in Backoff().delays():
        pause(delay)  # a stop only recorded (RQ's handlers never came in) ends the wait
        with contextlib.suppress(redis.RedisError):
            if conn.ping():
                log.info("rq_worker_redis_back")
                return


def run_worker(args: argparse.Namespace) -> int:
    """One worker process until SIGTERM: ingest and maintenance finish the batch or job
    they hold (a second signal hands an ingest batch back at once), recall finishes the
    request it is answering; then metrics, admission and clients are closed."""
    code = _serve(args)
    if args.burst:
        return code
    # Everything is released by now (worker_stopped logged after the clients closed; an
    # RQ scheduler fork dies with this process): the interpreter's own clean-up took
    # 1.4-1.6 s per worker at load 18-25, while a stopping `turngraph up` waited for it
    # before it could stop the graph server (its 10 s stop budget).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _serve(args: argparse.Namespace) -> int:
    settings = Settings()
    configure_logging(settings)
    stop_on_signals()  # while setting up; RQ's work() installs its own for SIGTERM/SIGINT
    forks_die_with_this_process()  # RQ's scheduler: a kill -9 of the worker ends it too
    try:
        clients = build_clients(settings)
    except StopSignal:
        return 0
    if not settings.redis_url:  # embedded, found through services.json: follow it
        assert clients.settings.redis_url and clients.settings.graph_uri
        follow_embedded_services(
            settings.data_dir, clients.settings.redis_url, clients.settings.graph_uri
        )
    registry = new_registry()
    queue_bound = settings.max_queue_length
    registry.register(QueueCollector(clients.redis, settings.ingest_queue, queue_bound))
    server = None
    cold = False
    try:
        if args.kind == "recall":
            embedder = build_embedder(settings)
            recall = build_recall_worker(
                clients,
                embedder=embedder,
                latency_observer=recall_histogram(registry).observe,
                queued_observer=recall_queued_histogram(registry).observe,
            )
            registry.register(RecallCollector(recall, embedder))
            registry.register(RequestCollector("recall", recall.counters))
            server = serve_metrics(registry, settings.metrics_port, settings.metrics_host)
            for stop_signal in STOP_SIGNALS:  # the loop ends within one pop timeout
                signal.signal(stop_signal, lambda *_: recall.stop())
            raise_if_stopping()  # a stop that arrived before these handlers, then was lost
            recall.run()  # serves at once; the graph is read in the background
            return 0
        admission: Admission
        if args.kind == "ingest":
            histograms = IngestHistograms(registry)
            # one per process, kept across restarts
            pipeline = wait_for_graph(lambda: build_pipeline(clients))
            embeddings = pipeline.embeddings
            registry.register(EmbeddingCollector(embeddings.embedder if embeddings else None))

            def build() -> StoppableWorker:
                return build_ingest_worker(clients, pipeline, batch_observer=histograms)

            admission = build_admission(clients)
        else:
            built: list[MaintenanceWorker] = []

            def build() -> StoppableWorker:
                built.append(build_maintenance_worker(clients))
                return built[-1]

            def summary_snapshot() -> dict[str, int] | None:
                """The LLM summarizer's counters (None: offline summaries only, or not built)."""
                summarizer = built[-1].distiller.summarizer if built else None
                return summarizer.stats.snapshot() if summarizer is not None else None

            def enrichment_snapshot() -> dict[str, int] | None:
                """The enrichment pass's counters (None: no LLM, or not built)."""
                reextractor = built[-1].distiller.reextractor if built else None
                return reextractor.extractor.stats.snapshot() if reextractor else None

            registry.register(
                LLMCollector(summary=summary_snapshot, enrichment=enrichment_snapshot)
            )
            asks = build_ask_admission(clients)
            registry.register(RequestCollector("distill", asks.served))
            admission = asks
        server = serve_metrics(registry, settings.metrics_port, settings.metrics_host)
        if args.burst:  # the inboxes' turns or asks first, then RQ's queue, until all empty
            codes = [0]
            admission.burst(lambda: codes.append(supervise(build, clients, burst=True)))
            return max(codes)
        # Inbox entries become RQ jobs beside the worker: every inbox's turns (ingest), the
        # clients' on-demand asks (maintenance; workers/ingest/admission.py).
        helper = threading.Thread(target=admission.run, name=f"{args.kind}-admission", daemon=True)
        helper.start()
        try:
            return supervise(build, clients, burst=False)
        except SystemExit:  # RQ's cold shutdown: the batch or job goes back to RQ
            cold = True
            return 0
        finally:
            admission.stop()
            if helper.is_alive():
                helper.join(timeout=HELPER_JOIN_S)
    except StopSignal:  # stopped before the work loop took over the signals
        return 0
    finally:
        if server is not None:
            server.shutdown()
        clients.close()
        log.info("worker_stopped", kind=args.kind, cold=cold)
        if cold:
            # LLM calls still running in pool threads would be awaited at exit: not now.
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(0)


CLIENTS_LEAVE_TIMEOUT_S = 15.0
"""How long the embedded services wait, when stopped, for their clients to disconnect."""


def wait_for_clients_to_leave(redis_url: str, timeout_s: float) -> None:
    """Until ours is the only connection to Redis (workers, their schedulers, pub/sub)."""
    conn = redis.Redis.from_url(redis_url, socket_timeout=1)
    deadline = time.monotonic() + timeout_s
    try:
        while len(conn.client_list()) > 1 and time.monotonic() < deadline:
            time.sleep(0.1)  # polling other processes' shutdown
    except redis.RedisError:
        pass
    finally:
        conn.close()


def run_services(args: argparse.Namespace) -> int:
    """Start the embedded Redis and graph servers and keep them up until signalled."""
    settings = with_graph_option(Settings(), args)
    configure_logging(settings)
    if args.fetch_only:
        return fetch_graph(settings)
    if not settings.embedded:
        log.info("embedded_services_not_needed", reason="urls configured")
        return 0
    stop_on_signals()  # SIGTERM and SIGINT alike, even when SIGINT came in ignored
    services = EmbeddedServices(settings.data_dir, settings.embedded_graph)
    try:
        with services as endpoints:
            log.info(
                "embedded_services_ready",
                redis=without_password(endpoints.redis_url),
                graph=endpoints.graph_uri,
                graph_engine=endpoints.graph_engine,
                studio=endpoints.studio_url,
                data_dir=str(settings.data_dir),
            )
            try:
                Supervisor(services.servers).run()  # a server that dies comes back on its port
            finally:
                # A runner (honcho) signals every process at once; the workers' warm
                # shutdown still talks to Redis, so the servers outlive their clients.
                wait_for_clients_to_leave(endpoints.redis_url, CLIENTS_LEAVE_TIMEOUT_S)
    except StopSignal as stopped:
        log.info("stopped", signal=str(stopped))
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    worker = subparsers.add_parser("worker", help="run an ingest, recall or maintenance worker")
    worker.add_argument(
        "kind",
        choices=["ingest", "recall", "maintenance"],
        help="which worker: ingest (RQ, turns into the graph), recall (the search loop), "
        "maintenance (RQ, scheduled work)",
    )
    worker.add_argument("--burst", action="store_true", help="exit when the queue is empty")
    worker.set_defaults(handler=run_worker)
    services = subparsers.add_parser("services", help="run the embedded Redis and graph servers")
    add_graph_option(services)
    services.add_argument(
        "--fetch-only",
        action="store_true",
        help="fetch what the graph server needs (Neo4j's jars) into the data folder, then exit",
    )
    services.set_defaults(handler=run_services)


def fetch_graph(settings: Settings) -> int:
    """``services --fetch-only``: Neo4j's jars into the data folder's cache (ArcadeDB comes
    with its wheel); one line with the fix and exit 1 when that cannot be done here."""
    if settings.embedded_graph != "neo4j":
        print("arcadedb comes with its wheel: nothing to fetch")
        return 0
    try:
        lib = neo4j_fetch.fetch(settings.data_dir)
    except neo4j_fetch.Neo4jUnavailableError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"Neo4j {neo4j_fetch.NEO4J_VERSION} ready in {lib}")
    return 0
