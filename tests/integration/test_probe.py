"""The container readiness probe: ready against the real servers, not ready without them."""

from __future__ import annotations

import pytest
from pydantic import SecretStr

from turngraph.embedded.process import free_port
from turngraph.probe import check, main
from turngraph.settings import Settings

pytestmark = pytest.mark.integration


def test_ready_when_redis_and_the_graph_answer(settings: Settings) -> None:
    assert check(settings) == []


def test_not_ready_names_what_is_missing(settings: Settings) -> None:
    closed = free_port()
    broken = settings.model_copy(
        update={
            "redis_url": f"redis://127.0.0.1:{closed}/0",
            "graph_password": SecretStr("wrong"),
        }
    )

    problems = check(broken, timeout_s=2.0)

    assert [p.split(":")[0] for p in problems] == ["redis", "graph"]


def test_unconfigured_is_not_ready(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("TURNGRAPH_REDIS_URL", "TURNGRAPH_GRAPH_URI"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir("/")  # no .env file

    assert main([]) == 1
