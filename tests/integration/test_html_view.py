"""``turngraph graph show``: a self-contained HTML view of one scope."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from schemas.ontology import ONTOLOGY
from schemas.scopes import Scope
from tests.support import scope_graph
from turngraph.clients import Clients
from turngraph.inspection.html_view import caption, write_html_view

pytestmark = pytest.mark.integration

DATA = re.compile(r'<script type="application/json" id="neo4j-viz-data">(.*?)</script>', re.S)


def test_session_view_is_self_contained_and_complete(clients: Clients, tmp_path: Path) -> None:
    scope_graph.build(clients.graph, clients.graph_database)
    out = tmp_path / "view" / "s-1.html"

    view = write_html_view(
        clients.graph, clients.graph_database, Scope.SESSION, "s-1", out, ONTOLOGY
    )

    html = out.read_text()
    assert not re.search(r"<(script|link)[^>]+(src|href)=\"(https?:)?//", html)
    data = json.loads(DATA.search(html).group(1))  # type: ignore[union-attr]
    captions = sorted(n["caption"] for n in data["nodes"])
    # the session, its workspace, its two turns, and what they mention (no other session)
    assert captions == sorted(
        ["s-1", "ws-a", "user #0", "assistant #1", "retry with backoff", "src/app.py", "tenacity"]
    )
    types = sorted(r["caption"] for r in data["relationships"])
    assert types == sorted(
        [
            "IN_WORKSPACE",
            "IN_SESSION",
            "IN_SESSION",
            "NEXT",
            "MENTIONS",
            "MENTIONS",
            "MENTIONS",
            "MENTIONS",
            "APPLIES_TO",
            "USES_TOOL",
        ]
    )
    assert (view.nodes, view.relationships, view.truncated) == (7, 10, False)
    assert "<title>turngraph session s-1</title>" in html


def test_large_scopes_are_cut_to_the_newest_turns(clients: Clients, tmp_path: Path) -> None:
    scope_graph.build(clients.graph, clients.graph_database)

    view = write_html_view(
        clients.graph,
        clients.graph_database,
        Scope.WORKSPACE,
        "ws-a",
        tmp_path / "w.html",
        ONTOLOGY,
        max_nodes=8,
    )

    assert view.truncated and view.nodes == 8


def test_caption_falls_back_when_a_property_is_missing() -> None:
    assert caption("{role} #{turn_index}", {"role": "user", "turn_index": 3}, "Episode") == (
        "user #3"
    )
    assert caption("{topic}", {}, "Summary") == "Summary"
    assert caption("{name}", {"name": "x" * 100}, "File").endswith("…")
