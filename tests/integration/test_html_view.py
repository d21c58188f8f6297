"""``turngraph graph show``: one HTML page of a scope, rendered by neo4j-viz."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.support import scope_graph
from turngraph.clients import Clients
from turngraph.inspection.html_view import breakable, caption, shorten, write_html_view
from turngraph.schemas.ontology import ONTOLOGY
from turngraph.schemas.scopes import Scope

pytestmark = pytest.mark.integration

DATA = re.compile(r'<script type="application/json" id="neo4j-viz-data">(.*?)</script>', re.S)


def test_session_view_opens_offline_and_is_complete(clients: Clients, tmp_path: Path) -> None:
    scope_graph.build(clients.graph, clients.graph_database)
    out = tmp_path / "view" / "s-1.html"

    view = write_html_view(
        clients.graph,
        clients.graph_database,
        Scope.SESSION,
        "s-1",
        out,
        ONTOLOGY,
        folders={"ws-a": "my-project"},  # the folder hints kept on this machine
    )

    html = out.read_text()
    assert not re.search(r"<(script|link)[^>]+(src|href)=\"(https?:)?//", html)
    data = json.loads(DATA.search(html).group(1))  # type: ignore[union-attr]
    captions = sorted(n["caption"] for n in data["nodes"])
    # the session (by its first turn's words), its workspace (by its folder's name), its
    # two turns, and what they mention (no other session); cut at a word, never inside one
    assert captions == sorted(
        ["“decision: retry…”", "my-project", "decision: retry…", "Done: src/app.py…",
         "retry with backoff", "src/app.py", "tenacity"]
    )  # fmt: skip
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
    # the page names the session by its first words, not by its hashed key
    assert "<title>turngraph: session “decision: retry with exponential…”</title>" in html
    legend = {e["label"]: e["color"] for e in data["legend"]["nodes"]["entries"]}
    assert {"Episode", "Decision", "Session", "Workspace"} <= set(legend)
    # a clicked node's side panel lists its properties: a turn's whole text, a fact's turns
    props = [n["properties"] for n in data["nodes"]]
    turn = next(p for p in props if str(p.get("content", "")).startswith("decision: retry"))
    assert turn["content"] == "decision: retry with exponential backoff in src/app.py"
    decision = next(p for p in props if p.get("labels", "").startswith("Decision"))
    assert decision["first_episode_id"] == turn["event_id"]


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


def test_captions_are_cut_at_a_word_or_a_path_part() -> None:
    assert shorten("retry uploads with exponential backoff") == "retry uploads…"
    assert shorten("src/components/upload/retry.py") == "src/components/…"
    assert shorten("short one") == "short one"
    assert breakable("feat/upload-retry") == "feat/ upload- retry"
    assert breakable("see src/app.py") == "see src/app.py"  # short words stay whole
