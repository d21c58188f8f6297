"""``turngraph graph show`` in a real browser: headless Chromium (Debian's ``chromium``)
opens the page from disk, the graph is drawn on a non-blank canvas (software rendering:
real waiting, polled, not virtual time), neo4j-viz's legend lists the types, and clicking
a turn once the layout has settled shows its text in neo4j-viz's details panel. The
screenshot is kept in docs/ when ``TURNGRAPH_SAVE_SCREENSHOT`` names a file."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from tests.support.conversation import CONVERSATION, ingest
from tests.support.headless_chromium import CHROMIUM, INSTALL_HINT, Browser, decode_png
from turngraph.clients import Clients
from turngraph.inspection.browser_style import node_styles
from turngraph.inspection.html_view import write_html_view
from turngraph.schemas.ontology import ONTOLOGY
from turngraph.schemas.scopes import Scope

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason=f"{CHROMIUM} is absent: no browser check ({INSTALL_HINT})"
    ),
]

GRAPH_READY = """(() => {
  const canvas = document.querySelector('canvas');
  return !!canvas && canvas.width > 0 && document.body.innerText.includes('Decision');
})()"""
DETAILS = "[aria-label='Toggle graph details panel']"


def _coloured(rows: list[bytes], x0: int, x1: int) -> dict[tuple[int, int, int], int]:
    """Pixels per colour in columns x0..x1, ignoring near-white and near-grey background."""
    counts: dict[tuple[int, int, int], int] = {}
    for row in rows[::2]:
        for x in range(x0, x1, 2):
            r, g, b = row[3 * x : 3 * x + 3]
            if max(r, g, b) - min(r, g, b) > 40:  # saturated: a node, not the background
                counts[(r, g, b)] = counts.get((r, g, b), 0) + 1
    return counts


def _settled(browser: Browser, timeout_s: float = 60.0) -> bytes:
    """A screenshot once the force layout has stopped moving: two in a row alike."""
    deadline = time.monotonic() + timeout_s
    previous = browser.screenshot()
    while time.monotonic() < deadline:
        now = browser.screenshot()
        if now == previous:
            return now
        previous = now
    raise TimeoutError("the layout never settled")


def test_graph_view_draws_legend_and_details_in_chromium(clients: Clients, tmp_path: Path) -> None:
    ingest(clients, CONVERSATION)
    page = tmp_path / "w1.html"
    write_html_view(clients.graph, clients.graph_database, Scope.WORKSPACE, "w1", page, ONTOLOGY)
    episode = next(s.color for s in node_styles(ONTOLOGY) if s.label == "Episode")
    said = [event.content for event in CONVERSATION[:5]]

    with Browser(width=1280, height=800) as browser:
        browser.open(page.as_uri())
        browser.wait_for(GRAPH_READY)
        browser.evaluate(f"document.querySelector({DETAILS!r}).click()")  # neo4j-viz's panel
        width, _, rows = decode_png(_settled(browser))
        colours = _coloured(rows, 0, width)
        errors = browser.evaluate("document.body.innerText.includes('Missing visualization')")
        target = _find_colour(rows, width, episode)
        assert target is not None, "no turn drawn in the Episode colour"
        browser.click(*target)
        shown = browser.wait_for(
            f"(() => {{ const text = document.body.innerText;"
            f" return {json.dumps(said)}.some(s => text.includes(s)) && text; }})()",
            timeout_s=30,
        )
        png = browser.screenshot()  # with the clicked turn's properties in the panel

    if os.environ.get("TURNGRAPH_SAVE_SCREENSHOT"):
        Path(os.environ["TURNGRAPH_SAVE_SCREENSHOT"]).write_bytes(png)
    assert not errors
    assert sum(colours.values()) > 500, "the canvas is blank"
    assert len(colours) >= 3, "fewer than three node colours drawn"
    assert "Episode" in shown and "Decision" in shown  # the legend


def _find_colour(
    rows: list[bytes], graph_width: int, hex_colour: str
) -> tuple[float, float] | None:
    """The middle of the densest patch of ``hex_colour`` (``#rrggbb``) in the graph area: a
    filled node, not a button border of a similar grey."""
    wanted = tuple(int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))
    bins: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for y in range(0, len(rows), 2):
        for x in range(0, graph_width, 2):
            if all(abs(rows[y][3 * x + i] - wanted[i]) <= 6 for i in range(3)):
                bins.setdefault((x // 24, y // 24), []).append((x, y))
    if not bins:
        return None
    best = max(bins.values(), key=len)
    if len(best) < 100:  # a 24 px square sampled every 2 px holds 144
        return None
    return sum(x for x, _ in best) / len(best), sum(y for _, y in best) / len(best)
