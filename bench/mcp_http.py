"""An MCP ``recall`` as an editor makes it: a ``turngraph mcp`` process per window (stdio)
against the endpoint's ``/mcp`` (streamable HTTP), both through the MCP SDK's own client.

``python -m bench.mcp_http [--runs N]`` starts the embedded services, a recall worker (in
this process), a few stored memories and ``turngraph endpoint``, then times, N times a
row: ``python -c pass`` (the reference of this run); a whole session over stdio (spawn
the server, ``initialize``, one ``recall``, close); the same session over HTTP (connect,
``initialize``, one ``recall``, close); and one ``recall`` inside an open HTTP session
(what each further call costs). Ends with ``RESULT mcp_http ...`` (wall times in ms).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from bench.hooks_endpoint import start_endpoint, stop_endpoint
from bench.report import percentile, result_line, table
from bench.seeded import seeded_services
from turngraph.endpoint.files import read_live

MEMORIES = [
    "decision: the ingest queue uses drop_oldest when it is full",
    "preference: answers use British English spelling",
]
QUERY = "which drop policy does the ingest queue use?"


def _found(result: Any) -> bool:
    reply = result.structured_content or {}
    return any("drop_oldest" in r.get("text", "") for r in reply.get("results") or [])


async def _timed(one: Callable[[], Awaitable[bool]], runs: int) -> tuple[list[float], bool]:
    times, found = [], True
    for _ in range(runs):
        started = time.perf_counter()
        found = await one() and found
        times.append((time.perf_counter() - started) * 1000)
    return times, found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="an MCP recall over stdio and over HTTP")
    parser.add_argument("--runs", type=int, default=20, help="runs per row (default 20)")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="bench-mcp-http-") as tmp_name:
        tmp = Path(tmp_name)
        project = tmp / "project"
        project.mkdir()
        with seeded_services(tmp, project, MEMORIES) as seeded:
            env = seeded.env
            stdio = StdioServerParameters(
                command=str(Path(sys.executable).parent / "turngraph"),
                args=["mcp", "--workspace", str(project)],
                env=env,
                cwd=str(project),
            )
            endpoint = start_endpoint(env, seeded.settings.data_dir)
            live = read_live(seeded.settings.data_dir)
            assert live is not None
            headers = {
                "Authorization": f"Bearer {live.token}",
                "X-Turngraph-Project-Dir": str(project.resolve()),
            }

            def http() -> Client:
                return Client(
                    streamable_http_client(
                        f"{live.url}/mcp", http_client=create_mcp_http_client(headers=headers)
                    )
                )

            async def session(client: Client) -> bool:
                async with client:
                    return _found(await client.call_tool("recall", {"query": QUERY}))

            async def run() -> dict[str, tuple[list[float], bool]]:
                rows: dict[str, tuple[list[float], bool]] = {}
                times = []
                for _ in range(args.runs):
                    started = time.perf_counter()
                    subprocess.run([sys.executable, "-c", "pass"], check=True)
                    times.append((time.perf_counter() - started) * 1000)
                rows["python -c pass (reference)"] = (times, True)
                await session(Client(stdio))  # warm: the recall worker, the bytecode
                await session(http())
                rows["stdio: spawn, initialize, recall"] = await _timed(
                    lambda: session(Client(stdio)), args.runs
                )
                rows["http: connect, initialize, recall"] = await _timed(
                    lambda: session(http()), args.runs
                )
                async with http() as client:

                    async def call() -> bool:
                        return _found(await client.call_tool("recall", {"query": QUERY}))

                    rows["http: recall in an open session"] = await _timed(call, args.runs)
                return rows

            try:
                rows = anyio.run(run)
            finally:
                stop_endpoint(endpoint)

    print(f"load average (1 min): {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs, "
          f"{args.runs} runs per row\n")  # fmt: skip
    body = [
        [name, round(percentile(t, 50), 1), round(percentile(t, 99), 1), "yes" if ok else "no"]
        for name, (t, ok) in rows.items()
    ]
    print(table(["an MCP recall", "p50_ms", "p99_ms", "found"], body))
    p50 = {name: percentile(t, 50) for name, (t, _) in rows.items()}
    stdio_p50 = p50["stdio: spawn, initialize, recall"]
    http_p50 = p50["http: connect, initialize, recall"]
    print()
    print(result_line(
        "mcp_http",
        python_pass_p50_ms=round(p50["python -c pass (reference)"], 1),
        stdio_session_p50_ms=round(stdio_p50, 1),
        http_session_p50_ms=round(http_p50, 1),
        http_call_p50_ms=round(p50["http: recall in an open session"], 1),
        stdio_over_http_session=round(stdio_p50 / http_p50, 2),
        found="yes" if all(ok for _, ok in rows.values()) else "no",
        runs=args.runs,
    ))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
