"""A real ``turngraph worker maintenance`` process (its RQ worker and ask admission)
for tests of the on-demand ops, and the environment that points a spawned process at the
test's services; plus long sessions to recap."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta

from turngraph.schemas.turn_event import ClientInfo, TurnEvent
from turngraph.settings import Settings

TOOLS = ("read_file", "edit", "bash", "ls", "status", "write", "grep")
UNFINISHED = (
    "Next: finish moving the token cache into src/cache/tokens.py, it is half done and "
    "the tests still fail."
)


def service_env(settings: Settings, **extra: str) -> dict[str, str]:
    """The environment of a spawned turngraph process on the test's services."""
    env = {
        **os.environ,
        "TURNGRAPH_REDIS_URL": settings.redis_url or "",
        "TURNGRAPH_GRAPH_URI": settings.graph_uri or "",
        "TURNGRAPH_GRAPH_USER": settings.graph_user,
        "TURNGRAPH_GRAPH_PASSWORD": settings.graph_password.get_secret_value(),
        "TURNGRAPH_DATA_DIR": str(settings.data_dir),
        "TURNGRAPH_LOG_LEVEL": "WARNING",
        **extra,
    }
    if settings.graph_database:
        env["TURNGRAPH_GRAPH_DATABASE"] = settings.graph_database
    return env


@contextmanager
def maintenance_worker(env: dict[str, str]) -> Iterator[subprocess.Popen[bytes]]:
    """``turngraph worker maintenance`` running until the block ends (stopped with SIGTERM,
    killed if it does not leave within 30 s)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "turngraph.cli", "worker", "maintenance"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        yield process
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate(timeout=10)


def long_session(
    session: str, workspace: str, user: str, start: datetime, turns: int = 220
) -> list[TurnEvent]:
    """``turns`` + 1 turns, half of them tool calls with 120-line raw outputs (``RAWOUT``),
    ending with the user's unfinished work (``UNFINISHED``)."""

    def event(index: int, role: str, content: str, speaker: str = "") -> TurnEvent:
        return TurnEvent(
            session_id=session,
            workspace=workspace,
            user=user,
            turn_index=index,
            role=role,  # type: ignore[arg-type]
            speaker=speaker,
            content=content,
            occurred_at=start + timedelta(minutes=index),
            client=ClientInfo(name="tests", version="1"),
        )

    events: list[TurnEvent] = []
    for index in range(turns):
        if index % 2 == 1:
            path = f"src/module_{index % 7}.py"
            output = "\n".join(f"RAWOUT-{index}-{n} lorem ipsum dolor" for n in range(120))
            events.append(event(index, "tool", f"{path}\n{output}", TOOLS[(index // 2) % 7]))
        elif index % 4 == 0:
            events.append(event(index, "user", f"Step {index}: check the parser again."))
        else:
            events.append(event(index, "assistant", f"Handler {index} retries without backoff."))
    events.append(event(turns, "user", UNFINISHED))
    return events
