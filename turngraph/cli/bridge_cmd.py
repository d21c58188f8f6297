"""``turngraph bridge`` (stdio JSON lines) and one-shot ``turngraph publish`` / ``recall``.

The one-shots print the seed bridge's JSON contract and exit 0 on success, 1 on failure.
"""

from __future__ import annotations

import argparse
import getpass
import json
import sys
from pathlib import Path
from typing import Any

import redis
import structlog

from turngraph.cli.endpoints import producer_consent_endpoint, producer_redis_url
from turngraph.clients import build_publisher
from turngraph.lifecycle import StopSignal, stop_on_signals
from turngraph.logs import configure_logging
from turngraph.producers.bounded_queue import read_stats
from turngraph.producers.bridge import Backend, Bridge, Reachability
from turngraph.producers.consent import ConsentStore
from turngraph.producers.distill_client import DistillClient
from turngraph.producers.git_info import git_metadata
from turngraph.producers.recall_client import RecallClient
from turngraph.producers.scope_hints import ScopeHints
from turngraph.producers.scopes import ScopeHasher
from turngraph.producers.tenant_inbox import read_inbox_stats
from turngraph.schemas.bridge_distill import MAX_DISTILL_DEADLINE_MS
from turngraph.schemas.keys import DISTILL_REQUESTS, RECALL_REPLICA_PREFIX
from turngraph.schemas.recall import DEFAULT_DEADLINE_MS
from turngraph.settings import Settings

log = structlog.get_logger(__name__)

BRIDGE_PROTOCOL = """\
Spawn once per editor window; write one JSON request per line on stdin (UTF-8), read one
reply per line on stdout, in order. Logs go to stderr.

  {"id": 1, "op": "publish", "event": {"session_id": "<chat id>", "workspace": "<folder>",
   "user": "<name>", "turn_index": 0, "role": "user", "content": "...",
   "client": {"name": "my-ext", "version": "1.0"}}}
  {"id": 2, "op": "recall", "query": "...", "workspace": "<folder>", "max_results": 5}
  {"id": 3, "op": "flush", "timeout_s": 2}
  {"id": 4, "op": "status"}

Distilled memory (answered by a maintenance worker within deadline_ms, default 30000):
  {"id": 5, "op": "summarize", "session_id": "<chat id>", "last_n": 10}
  {"id": 6, "op": "recap", "workspace": "<folder>", "budget_tokens": 1000}
     (default: the previous session; or "session_id"; "current_session_id" is skipped)
  {"id": 7, "op": "summary", "memory_id": "<a recall result's memory_id>"}
  {"id": 8, "op": "promote", "kind": "preference", "text": "...", "scope": "user",
   "workspace": "<folder>", "user": "<name>", "session_id": "<chat id>"}
  {"id": 9, "op": "context", "session_id": "<chat id>"}  (rolling context: send its
     "conversation_context" with recall)

Raw session_id / workspace / user are hashed here with this installation's salt before
anything leaves; occurred_at (ISO 8601 with timezone) defaults to now; "id" is echoed.
publish and promote need consent (turngraph consent enable); publish is fire-and-forget;
promote refuses text that looks like a secret (REFUSED); recall answers within deadline_ms
(default 750) or fails open. Requests are strict (unknown fields and
wrong JSON types are refused); out-of-range recall options are clamped and named in the
reply's "clamped". Every reply has "success"; a failure has "error_code"
(INVALID_JSON, INVALID_ENCODING, INVALID_REQUEST, UNKNOWN_OP, CONSENT_REQUIRED,
BACKEND_UNAVAILABLE, DEADLINE_EXCEEDED, NOT_FOUND, REFUSED, INTERNAL_ERROR), "user_message"
and "remediation". JSON Schemas: schemas/json/bridge_*.schema.json; TypeScript types:
producers/typescript/types/.
"""

ONE_SHOT_FLUSH_S = 3.0
"""How long ``turngraph publish`` waits for Redis to take the event."""

RECALL_SOCKET_SLACK_S = 0.5
"""The recall connection's socket timeout is the deadline plus this."""

DISTILL_SOCKET_TIMEOUT_S = MAX_DISTILL_DEADLINE_MS / 1000 + 1.0
"""The distill connection waits at most the longest deadline a request may ask for."""


STATUS_DEADLINE_S = 0.5
"""How long ``status`` waits for Redis to answer before it says memory is unreachable."""


def reachability(conn: redis.Redis) -> Reachability:
    """One PING (within the connection's timeouts) and the recall replicas' heartbeats."""
    try:
        conn.ping()
    except redis.RedisError:
        return Reachability(redis=False)
    try:
        replicas = sum(1 for _ in conn.scan_iter(match=RECALL_REPLICA_PREFIX + "*", count=100))
    except redis.RedisError:  # a tenant's credential may not read them
        return Reachability(redis=True)
    return Reachability(redis=True, recall_replicas=replicas)


def build_bridge(
    settings: Settings, *, deadline_ms: int | None = None, note_hints: bool = True
) -> Bridge:
    """A bridge on the configured (or running embedded) Redis. Without one yet, publish and
    recall answer BACKEND_UNAVAILABLE, and the bridge looks again every few seconds.
    ``note_hints=False``: the folder hints of ``turngraph scopes`` are left alone."""
    consent = ConsentStore(settings.data_dir)
    endpoint = producer_consent_endpoint(settings)

    def connect() -> Backend | None:
        url = producer_redis_url(settings)
        if url is None:
            return None
        try:
            redis.connection.parse_url(url)
        except ValueError:
            log.warning("bridge_redis_url_invalid")  # a bad URL: no backend, not a crash
            return None
        publisher = build_publisher(
            settings.model_copy(update={"redis_url": url}), consent=consent.checker(endpoint)
        )
        recall_conn = redis.Redis.from_url(
            url,
            socket_timeout=(deadline_ms or 750) / 1000 + RECALL_SOCKET_SLACK_S,
            socket_connect_timeout=0.25,
        )
        recaller = (
            RecallClient.for_tenant(
                recall_conn,
                tenant,
                deadline_ms=deadline_ms or DEFAULT_DEADLINE_MS,
                shards=settings.recall_shards,
            )
            if (tenant := settings.tenant)
            else RecallClient(
                recall_conn,
                requests_key=settings.recall_requests_key,
                deadline_ms=deadline_ms or DEFAULT_DEADLINE_MS,
                shards=settings.recall_shards,
            )
        )
        queue_conn = publisher.queue.conn

        def queue_status() -> dict[str, int]:
            if settings.tenant:
                return read_inbox_stats(queue_conn, settings.tenant).as_dict()
            return read_stats(queue_conn, settings.ingest_queue).as_dict()

        probe_conn = redis.Redis.from_url(
            url, socket_timeout=STATUS_DEADLINE_S, socket_connect_timeout=STATUS_DEADLINE_S
        )

        def probe() -> Reachability:
            return reachability(probe_conn)

        distiller = DistillClient(
            redis.Redis.from_url(
                url, socket_timeout=DISTILL_SOCKET_TIMEOUT_S, socket_connect_timeout=0.25
            ),
            requests_key=DISTILL_REQUESTS,
        )
        return Backend(
            publisher=publisher,
            recaller=recaller,
            queue_status=queue_status,
            distiller=distiller,
            probe=probe,
        )

    return Bridge(
        hasher=ScopeHasher.for_data_dir(settings.data_dir),
        hints=ScopeHints(settings.data_dir) if note_hints else None,
        consent=consent,
        endpoint=endpoint,
        publisher=None,
        recaller=None,
        connect=connect,
    )


def run_bridge(args: argparse.Namespace) -> int:
    settings = Settings()
    configure_logging(settings)  # logs go to stderr; stdout carries only replies
    stop_on_signals()  # SIGTERM or SIGINT: deliver what is buffered, then exit 0
    try:
        return build_bridge(settings).serve(sys.stdin.buffer, sys.stdout.buffer)
    except StopSignal as stopped:
        log.info("stopped", signal=str(stopped))
        return 0


def _print(reply: dict[str, Any]) -> int:
    print(json.dumps(reply))
    return 0 if reply.get("success") else 1


def run_publish(args: argparse.Namespace) -> int:
    settings = Settings()
    configure_logging(settings)
    content = sys.stdin.read() if args.content == "-" else args.content
    workspace = str(Path(args.workspace).resolve())
    event: dict[str, Any] = {
        "session_id": args.session,
        "workspace": workspace,
        "user": args.user,
        "turn_index": args.turn_index,
        "role": args.role,
        "content": content,
        "client": {"name": args.client_name, "version": args.client_version},
        "importance": args.importance,
    }
    if args.git:
        info = git_metadata(Path(workspace))
        if info is not None:
            event["git"] = info.model_dump(exclude_none=True)
    bridge = build_bridge(settings)
    try:
        reply = bridge.handle_line(json.dumps({"op": "publish", "event": event}))
        if reply.get("success"):
            flushed = bridge.handle_line(json.dumps({"op": "flush", "timeout_s": ONE_SHOT_FLUSH_S}))
            if not flushed.get("success"):
                reply = {**flushed, "event_id": reply.get("event_id")}
        return _print(reply)
    finally:
        bridge.close()


def run_recall(args: argparse.Namespace) -> int:
    settings = Settings()
    configure_logging(settings)
    request: dict[str, Any] = {
        "op": "recall",
        "query": args.query,
        "workspace": str(Path(args.workspace).resolve()),
        "max_results": args.max_results,
        "max_tokens": args.max_tokens,
    }
    if args.session:
        request["session_id"] = args.session
    if args.user:
        request["user"] = args.user
    bridge = build_bridge(settings, deadline_ms=args.deadline_ms)
    try:
        return _print(bridge.handle_line(json.dumps(request)))
    finally:
        bridge.close()


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    bridge = subparsers.add_parser(
        "bridge",
        help="stdio JSON-lines bridge for editor extensions",
        description=BRIDGE_PROTOCOL,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    bridge.set_defaults(handler=run_bridge)

    publish = subparsers.add_parser("publish", help="publish one turn (prints JSON, exit 0/1)")
    publish.add_argument("content", help="the turn's text, or - to read it from stdin")
    publish.add_argument("--session", required=True, help="session key (hashed before sending)")
    publish.add_argument(
        "--turn-index", type=int, required=True, help="the turn's index in its session (0, 1, ...)"
    )
    publish.add_argument(
        "--role",
        default="user",
        choices=["user", "assistant", "system", "tool"],
        help="who said it (default user)",
    )
    publish.add_argument("--workspace", default=".", help="workspace folder (default: here)")
    publish.add_argument("--user", default=getpass.getuser(), help="user key (hashed)")
    publish.add_argument(
        "--client-name", default="turngraph-cli", help="the publishing client's name"
    )
    publish.add_argument("--client-version", default="0", help="the client's version")
    publish.add_argument(
        "--importance", type=float, default=0.5, help="0..1, how much it matters (default 0.5)"
    )
    publish.add_argument("--git", action="store_true", help="add branch, commit and dirty flag")
    publish.set_defaults(handler=run_publish)

    recall = subparsers.add_parser("recall", help="search the memory (prints JSON, exit 0/1)")
    recall.add_argument("query", help="what to look for, in plain words")
    recall.add_argument("--workspace", default=".", help="workspace folder (default: here)")
    recall.add_argument("--session", help="session key (hashed)")
    recall.add_argument("--user", help="user key (hashed)")
    recall.add_argument(
        "--max-results", type=int, default=5, help="results wanted (clamped to 1..50)"
    )
    recall.add_argument(
        "--max-tokens", type=int, default=1000, help="token budget (clamped to >= 100)"
    )
    recall.add_argument(
        "--deadline-ms",
        type=int,
        default=None,
        help="how long to wait before failing open (default 750)",
    )
    recall.set_defaults(handler=run_recall)
