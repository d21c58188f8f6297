"""``turngraph graph show|export|import`` and ``turngraph forget`` from the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.conversation import CONVERSATION, ingest
from turngraph.cli import main
from turngraph.clients import Clients

pytestmark = [pytest.mark.integration, pytest.mark.both_engines]


@pytest.fixture
def env(clients: Clients, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Clients:
    settings = clients.settings
    monkeypatch.chdir(tmp_path)  # no .env; outputs land here
    for name, value in {
        "TURNGRAPH_REDIS_URL": settings.redis_url,
        "TURNGRAPH_GRAPH_URI": settings.graph_uri,
        "TURNGRAPH_GRAPH_USER": settings.graph_user,
        "TURNGRAPH_GRAPH_PASSWORD": settings.graph_password.get_secret_value(),
        "TURNGRAPH_GRAPH_DATABASE": settings.graph_database,
    }.items():
        monkeypatch.setenv(name, str(value))
    return clients


def count_nodes(clients: Clients) -> int:
    records, _, _ = clients.graph.execute_query(
        "MATCH (n) RETURN count(n) AS c", database_=clients.graph_database
    )
    return int(records[0]["c"])


def test_export_forget_import_round_trip(
    env: Clients, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ingest(env, CONVERSATION)
    before = count_nodes(env)

    assert (
        main(["graph", "export", "--scope", "workspace", "w1", "--hashed", "-o", "w1.jsonl"]) == 0
    )
    assert main(["forget", "--scope", "workspace", "w1", "--hashed", "--yes"]) == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert report["forgotten"] == {"scope": "workspace", "key": "w1"}
    assert report["nodes_deleted"] > 0 and count_nodes(env) < before

    assert main(["graph", "import", "w1.jsonl"]) == 0
    assert count_nodes(env) == before


def test_show_writes_the_page_and_graphml_export_works(
    env: Clients, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ingest(env, CONVERSATION)

    assert main(["graph", "show", "--scope", "session", "s1", "--hashed", "-o", "s1.html"]) == 0
    assert main(["graph", "export", "--scope", "user", "u1", "--hashed", "--format", "graphml",
                 "-o", "u1.graphml"]) == 0  # fmt: skip

    out = capsys.readouterr().out
    assert "wrote s1.html" in out and "Neo4j Browser" in out
    page = (tmp_path / "s1.html").read_text()
    assert "<title>turngraph: session" in page and 'id="neo4j-viz-data"' in page
    assert not list(tmp_path.glob("*.js")) and not list(tmp_path.glob("*.css"))  # one file
    assert (tmp_path / "u1.graphml").read_text().startswith("<?xml")


def test_forget_needs_confirmation_without_a_terminal(env: Clients) -> None:
    ingest(env, CONVERSATION[:1])
    before = count_nodes(env)

    assert main(["forget", "--scope", "session", "s1", "--hashed"]) == 2
    assert count_nodes(env) == before


def test_a_broken_import_file_is_one_clear_line(
    env: Clients, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "bad.jsonl").write_text("not json\n")

    assert main(["graph", "import", "bad.jsonl"]) == 1
    assert "error: not a turngraph export" in capsys.readouterr().err


def test_indexes_are_created_on_neo4j_only(
    env: Clients, graph_engine: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["graph", "indexes"]) == 0
    out = capsys.readouterr().out
    if graph_engine == "neo4j":
        assert out.splitlines() == [
            f"ensured {name}"
            for name in ("episode_text", "memory_text", "entity_names", "fact_statements")
        ]
    else:
        assert "not Neo4j" in out
