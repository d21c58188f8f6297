"""MCP over the endpoint's streamable HTTP transport (``/mcp``), driven by the MCP Python
SDK's own client against ``turngraph endpoint`` as a real process with real workers: the
stdio server's tools, ``remember`` then ``recall`` end to end with the headers
``turngraph endpoint --mcp-headers`` prints (an editor's headers helper), the workspace
named per request, a missing or wrong token refused before the MCP transport sees the
request, and the real Claude Code (from npm, when installed) connecting with the
configuration docs/endpoint.md gives."""

from __future__ import annotations

import http.client
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.integration.test_endpoint import Endpoint, start_endpoint, stop_endpoint
from tests.support.hook_services import hook_services
from tests.support.worker_processes import wait_for
from turngraph.embedded import ServiceEndpoints
from turngraph.producers.consent import ConsentStore, consent_endpoint
from turngraph.producers.scopes import ScopeHasher

pytestmark = pytest.mark.integration

CLAUDE = Path(__file__).parents[1] / "clients" / "node_modules" / ".bin" / "claude"
TOOLS = {"recall", "remember", "recap", "summarize_recent", "promote", "forget", "status"}
INITIALIZE = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "tests", "version": "1"}},
}  # fmt: skip


@pytest.fixture(scope="module")
def live(
    embedded: ServiceEndpoints, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Endpoint, Path]]:
    root = tmp_path_factory.mktemp("endpoint-mcp")
    project = root / "project"
    project.mkdir()
    with hook_services(embedded, root, home=root / "home", maintenance=False) as services:
        settings = services.settings
        hasher = ScopeHasher.for_data_dir(settings.data_dir)
        ConsentStore(settings.data_dir).enable(
            hasher.workspace(str(project.resolve())),
            consent_endpoint(settings.redis_url, settings.data_dir),
        )
        endpoint = start_endpoint(services.env, settings.data_dir)
        try:
            yield endpoint, project
        finally:
            assert stop_endpoint(endpoint) == 0


def _client(endpoint: Endpoint, headers: dict[str, str]) -> Client:
    http = create_mcp_http_client(headers=headers)
    return Client(streamable_http_client(f"{endpoint.url}/mcp", http_client=http))


def _headers(endpoint: Endpoint, project: Path | None) -> dict[str, str]:
    headers = {"Authorization": f"Bearer {endpoint.token}"}
    if project is not None:
        headers["X-Turngraph-Project-Dir"] = str(project)
    return headers


def _helper_headers(endpoint: Endpoint, project: Path) -> dict[str, str]:
    """What Claude Code's ``headersHelper`` gets: the command run in the project folder."""
    env = {k: v for k, v in endpoint.env.items() if k != "CLAUDE_PROJECT_DIR"}
    done = subprocess.run(
        [sys.executable, "-m", "turngraph", "endpoint", "--mcp-headers"],
        env=env, cwd=project, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    headers = json.loads(done.stdout)
    assert headers == _headers(endpoint, project.resolve())
    return dict(headers)


def test_remember_then_recall_through_mcp_over_http(live: tuple[Endpoint, Path]) -> None:
    endpoint, project = live
    headers = _helper_headers(endpoint, project)
    served = endpoint.served().get("mcp", 0)

    async def session() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with _client(endpoint, headers) as client:
            out["tools"] = {tool.name for tool in (await client.list_tools()).tools}
            out["remember"] = await client.call_tool(
                "remember", {"content": "Decision: nightly builds run on the osprey scheduler."}
            )
            out["status"] = await client.call_tool("status", {})
        return out

    out = anyio.run(session)
    assert out["tools"] == TOOLS
    remember = out["remember"]
    assert not remember.is_error, remember.content
    assert remember.structured_content["success"] is True
    assert remember.structured_content["event_id"]
    status = out["status"].structured_content
    assert status["success"] is True and status["redis_available"] is True
    assert endpoint.served()["mcp"] > served  # counted in /v1/health

    async def recall() -> Any:
        async with _client(endpoint, headers) as client:
            return await client.call_tool("recall", {"query": "which scheduler runs nightly?"})

    found: list[Any] = []

    def recalled() -> bool:
        result = anyio.run(recall)
        found[:] = [result]
        reply = result.structured_content
        return bool(reply["success"]) and any("osprey" in r["text"] for r in reply["results"])

    assert wait_for(recalled, 90), found[0].structured_content if found else "no answer"
    assert not found[0].is_error


def test_a_request_that_names_no_workspace_gets_a_typed_refusal(
    live: tuple[Endpoint, Path],
) -> None:
    endpoint, _ = live

    async def session() -> Any:
        async with _client(endpoint, _headers(endpoint, None)) as client:
            return await client.call_tool("recall", {"query": "anything"})

    refused = anyio.run(session)
    assert refused.is_error
    assert refused.structured_content["error_code"] == "INVALID_REQUEST"
    assert "X-Turngraph-Project-Dir" in refused.structured_content["remediation"]


def test_a_missing_or_wrong_token_is_refused_before_mcp(live: tuple[Endpoint, Path]) -> None:
    endpoint, _ = live
    served = endpoint.served().get("mcp", 0)
    parts = urlsplit(endpoint.url)
    for token in (None, "not-the-token", f"{endpoint.token}x"):
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
        headers = {"Content-Type": "application/json",
                   "Accept": "application/json, text/event-stream"}  # fmt: skip
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        try:
            conn.request("POST", "/mcp", body=json.dumps(INITIALIZE).encode(), headers=headers)
            response = conn.getresponse()
            body = json.loads(response.read())
        finally:
            conn.close()
        assert response.status == 401
        assert body["error_code"] == "UNAUTHORIZED"
        assert response.getheader("mcp-session-id") is None  # no session was opened
        assert endpoint.token not in json.dumps(body)

    async def wrong_token() -> None:
        async with _client(endpoint, {"Authorization": "Bearer nope"}) as client:
            await client.list_tools()

    with pytest.raises(ExceptionGroup) as refused:  # the client's task group raises it
        anyio.run(wrong_token)
    assert refused.group_contains(MCPError, match="error response")  # the 401 to initialize
    assert endpoint.served().get("mcp", 0) == served  # nothing reached the transport


def test_claude_code_connects_with_the_documented_configuration(
    live: tuple[Endpoint, Path], tmp_path: Path
) -> None:
    if shutil.which("npm") is None or not CLAUDE.exists():
        pytest.skip("claude not installed (npm ci --prefix tests/clients, or make install-dev)")
    endpoint, project = live
    home = tmp_path / "home"
    home.mkdir()
    environ = {k: v for k, v in endpoint.env.items() if not k.startswith(("ANTHROPIC_", "CLAUDE"))}
    environ.update(
        HOME=str(home), DISABLE_AUTOUPDATER="1", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{environ.get('PATH', '')}",
    )  # fmt: skip
    config = {"type": "http", "url": f"{endpoint.url}/mcp",
              "headersHelper": "turngraph endpoint --mcp-headers"}  # fmt: skip

    def claude(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(CLAUDE), *argv], cwd=project, env=environ, stdin=subprocess.DEVNULL,
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip

    added = claude("mcp", "add-json", "--scope", "user", "turngraph", json.dumps(config))
    assert added.returncode == 0, added.stderr
    served = endpoint.served().get("mcp", 0)
    listed = claude("mcp", "list")  # connects to each server: initialize with the helper's headers
    assert listed.returncode == 0, listed.stderr
    line = next(line for line in listed.stdout.splitlines() if line.startswith("turngraph:"))
    assert "Connected" in line, listed.stdout
    assert endpoint.served()["mcp"] > served
    assert endpoint.token not in (home / ".claude.json").read_text()
