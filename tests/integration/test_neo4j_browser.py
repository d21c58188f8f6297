"""Neo4j Browser, served by the project's own Neo4j (``--graph neo4j``), in headless
Chromium: connect with the generated credentials, apply ``ops/neo4j/turngraph.grass`` as
ops/neo4j/README.md says, run two saved queries (the session graph, drawn, and the
Neo4j-only word search, a table) and check what they show. The screenshot is kept in
docs/ when ``TURNGRAPH_SAVE_SCREENSHOT`` names a file."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.support.conversation import CONVERSATION, ingest
from tests.support.cypher_lint import REPO_ROOT, CypherText, saved_queries
from tests.support.headless_chromium import CHROMIUM, INSTALL_HINT, Browser
from tests.support.neo4j_tier import Neo4jEndpoint, neo4j_param
from turngraph.clients import Clients
from turngraph.embedded.neo4j_server import browser_login_url

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason=f"{CHROMIUM} is absent: no browser check ({INSTALL_HINT})"
    ),
]

QUERIES = {
    q.name: q
    for q in saved_queries((REPO_ROOT / "ops" / "neo4j" / "saved-queries.cypher").read_text())
}
GRASS = (REPO_ROOT / "ops" / "neo4j" / "turngraph.grass").read_text()

TYPE_PASSWORD = """(() => {
  const input = document.querySelector('[data-testid=password]');
  const set = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value').set;
  set.call(input, %s);
  input.dispatchEvent(new Event('input', {bubbles: true}));
  return true;
})()"""

EDITOR_CENTRE = """(() => {
  const r = document.querySelector('[data-testid=activeEditor]').getBoundingClientRect();
  return [r.x + r.width / 2, r.y + r.height / 2];
})()"""

LAYOUT_SETTLED = """(() => {
  const now = Array.from(document.querySelectorAll('svg.neod3viz g.node'))
    .map(n => n.getAttribute('transform')).join(';');
  const same = window.__tgLastLayout === now;
  window.__tgLastLayout = now;
  return same;
})()"""

FRAMES = "document.querySelectorAll('[data-testid=frame]').length"
LATEST_FRAME_TEXT = "document.querySelector('[data-testid=frame]').innerText"
FRAME_TEXTS = "Array.from(document.querySelectorAll('[data-testid=frame]'), f => f.innerText)"


def run_saved_query(browser: Browser, query: CypherText, values: dict[str, str]) -> None:
    """A saved block as a person runs it: its ``:param`` lines, edited to ``values``, then
    its query on its own (so Browser shows the result rather than a list of statements)."""
    params, body = [], []
    for line in query.text.splitlines():
        if line.startswith(":param "):
            name = line.removeprefix(":param ").split(" =>", 1)[0]
            params.append(f":param {name} => {json.dumps(values[name])}")
        elif not line.startswith("//"):
            body.append(line)
    for param in params:
        run_in_editor(browser, param)
    run_in_editor(browser, "\n".join(body).strip().rstrip(";"))


def run_in_editor(browser: Browser, text: str) -> None:
    """Type ``text`` into Browser's editor and press its run button; wait for the frame.
    On one line: typed into the one-line editor, a newline would run the text so far."""
    before = browser.evaluate(FRAMES)
    browser.click(*browser.evaluate(EDITOR_CENTRE))
    browser.call("Input.insertText", {"text": " ".join(text.split())})
    browser.evaluate("document.querySelector('[data-testid=editor-Run]').click()")
    browser.wait_for(f"{FRAMES} > {before}", 60)


@pytest.mark.parametrize("graph_engine", [neo4j_param()], indirect=True)
def test_browser_connects_styles_and_runs_saved_queries(
    clients: Clients, neo4j_endpoint: Neo4jEndpoint, graph_engine: str, tmp_path: Path
) -> None:
    ingest(clients, CONVERSATION)  # the worker's start creates the full-text indexes
    clients.graph.execute_query("CALL db.awaitIndexes(120)", database_=clients.graph_database)
    # the full-text indexes are eventually consistent (neo4j_only.py): wait for the refresh
    clients.graph.execute_query(
        "CALL db.index.fulltext.awaitEventuallyConsistentIndexRefresh()",
        database_=clients.graph_database,
    )
    # the address `turngraph up --graph neo4j` prints: URL, user and database filled in
    login = browser_login_url(
        neo4j_endpoint.browser_url, neo4j_endpoint.uri, neo4j_endpoint.user, "neo4j"
    )

    with Browser(1280, 900) as browser:
        browser.open(login)
        browser.wait_for("!!document.querySelector('[data-testid=password]')", 90)
        browser.evaluate(TYPE_PASSWORD % json.dumps(neo4j_endpoint.password))
        browser.evaluate("document.querySelector('[data-testid=connect]').click()")
        browser.wait_for("document.body.innerText.includes('You are connected')", 60)

        # The style, as a person would apply it by pasting after :style.
        run_in_editor(browser, f":style {GRASS}")
        # Its own frame, not merely the newest: under load Browser may add its `:use` of the
        # address's database after the line above (once saying there is none yet).
        browser.wait_for(
            f"{FRAME_TEXTS}.some(t => t.startsWith(':style') && t.includes('Episode'))", 60
        )

        words = QUERIES["Search turns by words (Neo4j only: full-text index episode_text)"]
        run_saved_query(browser, words, {"words": "retry AND backoff"})
        browser.wait_for("document.body.innerText.includes('exponential backoff')", 60)
        errors = browser.evaluate("document.querySelectorAll('[data-testid=errorBanner]').length")
        assert errors == 0

        timeline = QUERIES["Session graph"]
        run_saved_query(browser, timeline, {"session_id": "s1"})
        try:
            # Browser counts what it draws, then draws each node as an SVG group (late,
            # under load) and lets the layout settle.
            browser.wait_for(f"{LATEST_FRAME_TEXT}.includes('Displaying')", 120)
            browser.wait_for("document.querySelectorAll('svg.neod3viz g.node').length >= 3", 180)
            browser.wait_for(LAYOUT_SETTLED, 60)
        finally:
            png = browser.screenshot()
            (tmp_path / "neo4j-browser.png").write_bytes(png)
        overview = browser.evaluate(LATEST_FRAME_TEXT)
        assert "Episode" in overview and "Session" in overview and "MENTIONS" in overview
        captions = browser.evaluate(
            "Array.from(document.querySelectorAll('svg.neod3viz g.node text'))"
            ".map(t => t.textContent).join('|')"
        )
        assert "upload" in captions  # the style's caption: an entity shows its name
        assert "Done." in captions  # and a turn its first words, not "assistant #1"

    assert png.startswith(b"\x89PNG")
    target = os.environ.get("TURNGRAPH_SAVE_SCREENSHOT")
    if target:
        Path(target).write_bytes(png)
