"""``turngraph hook EVENT --editor NAME``: the one entry point editors' hooks run.

Reads the editor's payload from stdin, prints the context to inject (or nothing) and
always exits 0: a broken payload, an unreachable memory or a bug is counted in the hooks'
counters (``turngraph hooks status``), logged to stderr without chat text, and never
shown as a traceback. It imports only what the event needs: the prompt hook never loads
the publisher, redaction or the graph driver (``python -X importtime`` in docs/hooks.md).
"""

from __future__ import annotations

import getpass
import json
import logging
import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from turngraph.producers.hooks.call import hook_target, read_call
from turngraph.producers.hooks.editors import EDITORS, PROJECT_DIR_VARIABLES
from turngraph.producers.hooks.payload import MAX_PAYLOAD_BYTES, HookAction
from turngraph.producers.hooks.state import HookState

__all__ = [
    "CONNECT_TIMEOUT_S", "RECALL_SOCKET_SLACK_S", "SERVICES_FILE", "embedded_redis_url",
    "process_age_s", "run_hook",
]  # fmt: skip

SERVICES_FILE = "services.json"
"""Where ``turngraph up`` names the running embedded services (``embedded.services``)."""

RECALL_SOCKET_SLACK_S = 0.25
"""The recall connection's socket timeout: the deadline plus this."""

CONNECT_TIMEOUT_S = 0.25
"""A Redis that does not accept a connection this fast is taken as away."""


def _arguments(argv: Sequence[str]) -> tuple[HookAction, str] | None:
    if len(argv) != 3 or argv[1] != "--editor":
        return None
    return hook_target(argv[0], argv[2])


def embedded_redis_url(data_dir: Path) -> str | None:
    """The running embedded Redis's URL, as ``embedded.services.read_endpoints`` finds it,
    without importing the embedded servers' modules (they load the graph driver: ~0.1 s
    on every prompt)."""
    try:
        running = json.loads((data_dir / SERVICES_FILE).read_text())
        url, owner = running["redis_url"], int(running["owner_pid"])
        os.kill(owner, 0)
    except PermissionError:
        return str(url)  # alive, someone else's
    except (OSError, ValueError, TypeError, KeyError):
        return None
    return url if isinstance(url, str) else None


def process_age_s() -> float:
    """How long this process has run (Linux: from ``/proc``, 10 ms steps; elsewhere 0), so
    the prompt's deadline counts the interpreter's own start-up too."""
    try:
        fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        started_s = int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22: starttime
        return max(0.0, time.clock_gettime(time.CLOCK_BOOTTIME) - started_s)
    except (OSError, ValueError, IndexError, AttributeError):
        return 0.0


def _block_rich() -> None:
    """structlog imports ``rich`` for pretty tracebacks when it is installed (~60 ms with
    pygments); the hook renders JSON lines and never needs it."""
    sys.modules.setdefault("rich", None)  # type: ignore[arg-type]


def _configure_logging() -> None:
    """Warnings and errors only, as JSON lines on stderr (stdout carries the answer).

    Called before anything that logs is imported (the clients, the error path): a call that
    ends early (no consent, a bad payload) never loads structlog (nor asyncio with it)."""
    import structlog

    from turngraph.current_stderr import CurrentStderr

    if structlog.is_configured():
        return

    structlog.configure(
        processors=[structlog.processors.add_log_level, structlog.processors.JSONRenderer()],
        wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING),
        logger_factory=structlog.PrintLoggerFactory(file=CurrentStderr()),  # type: ignore[arg-type]
        cache_logger_on_first_use=True,
    )


def run_hook(
    argv: Sequence[str],
    *,
    stdin: IO[bytes] | None = None,
    stdout: IO[str] | None = None,
    environ: Mapping[str, str] | None = None,
    started_at: float | None = None,
) -> int:
    """Carry out one hook call; always 0 (see the module docstring)."""
    started = time.monotonic() - process_age_s() if started_at is None else started_at
    environ = os.environ if environ is None else environ
    state: HookState | None = None
    try:
        _block_rich()
        from turngraph.settings import Settings

        settings = Settings()
        state = HookState(settings.data_dir)
        parsed = _arguments(argv)
        if parsed is None:
            state.count(error_bad_arguments=1)
            return 0
        action, editor = parsed
        raw = (stdin or sys.stdin.buffer).read(MAX_PAYLOAD_BYTES + 1)
        project_dir = next((environ[v] for v in PROJECT_DIR_VARIABLES if environ.get(v)), None)
        call = read_call(state, action, raw, project_dir=project_dir)
        if call is None:
            return 0
        answer = _runner(settings, state, editor, started).run(call)
        if answer is not None:
            out = stdout or sys.stdout
            out.write(json.dumps(answer, ensure_ascii=False))
            out.flush()
    except Exception as exc:  # the editor must never see a traceback
        try:
            import structlog

            _configure_logging()
            structlog.get_logger(__name__).error("hook_failed", error=type(exc).__name__)
            if state is not None:
                state.count(error_internal=1)
        except Exception:
            pass  # counting failed too (a read-only data folder): still exit 0
    return 0


def _runner(settings: Any, state: HookState, editor: str, started: float) -> Any:
    from turngraph.producers.consent import ConsentStore, consent_endpoint
    from turngraph.producers.hooks.runner import HookRunner, HookServices
    from turngraph.producers.scopes import ScopeHasher

    url = settings.redis_url or embedded_redis_url(settings.data_dir)

    def publisher() -> Any:
        if url is None:
            return None
        _configure_logging()
        from turngraph.producers.publisher import Publisher

        return Publisher(
            redis_url=url,
            queue_name=settings.ingest_queue,
            max_queue_length=settings.max_queue_length,
            drop_policy=settings.drop_policy,
            buffer_size=settings.publish_buffer_size,
            connect_timeout_s=CONNECT_TIMEOUT_S,
            tenant=settings.tenant,
        )

    def connection(timeout_s: float) -> Any:
        import redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        # No retries of the client's own (redis-py retries a refused connection with
        # back-off by default): a Redis that is away means no memory for this prompt, now.
        return redis.Redis.from_url(
            str(url),
            socket_timeout=timeout_s,
            socket_connect_timeout=CONNECT_TIMEOUT_S,
            retry=Retry(NoBackoff(), 0),
        )

    def recaller() -> Any:
        if url is None:
            return None
        _configure_logging()
        from turngraph.producers.recall_client import RecallClient

        conn = connection(settings.hook_deadline_ms * 4 / 1000 + RECALL_SOCKET_SLACK_S)
        if settings.tenant:
            return RecallClient.for_tenant(conn, settings.tenant, shards=settings.recall_shards)
        return RecallClient(
            conn, requests_key=settings.recall_requests_key, shards=settings.recall_shards
        )

    def distiller() -> Any:
        if url is None:
            return None
        _configure_logging()
        from turngraph.producers.distill_client import DistillClient
        from turngraph.producers.hooks.runner import SUMMARY_DEADLINE_MS

        return DistillClient(connection(SUMMARY_DEADLINE_MS / 1000 + 1.0))

    consent = ConsentStore(settings.data_dir)
    return HookRunner(
        spec=EDITORS[editor],
        state=state,
        hasher=ScopeHasher.for_data_dir(settings.data_dir),
        user=getpass.getuser(),
        consent=consent.checker(consent_endpoint(settings.redis_url, settings.data_dir)),
        services=HookServices(publisher=publisher, recaller=recaller, distiller=distiller),
        deadline_ms=settings.hook_deadline_ms,
        start_budget_tokens=settings.hook_start_budget_tokens,
        started_at=started,
    )
