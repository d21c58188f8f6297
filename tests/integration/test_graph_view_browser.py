"""``turngraph graph show`` in a real browser: headless Chromium (Debian's ``chromium``)
opens the page from disk, the graph is drawn on a non-blank WebGL canvas (software
rendering: real waiting, not virtual time), the legend lists the types, and clicking a
turn shows its text in the details panel. The screenshot is kept in docs/ when
``TURNGRAPH_SAVE_SCREENSHOT`` names a file."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.support.conversation import CONVERSATION, ingest
from tests.support.headless_chromium import CHROMIUM, INSTALL_HINT, Browser, decode_png
from turngraph.clients import Clients
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
  const canvas = document.querySelector('#neo4j-viz-container canvas');
  return !!canvas && canvas.width > 0 && document.querySelectorAll('#tg-legend li').length;
})()"""


def _coloured(rows: list[bytes], x0: int, x1: int) -> dict[tuple[int, int, int], int]:
    """Pixels per colour in columns x0..x1, ignoring near-white and near-grey background."""
    counts: dict[tuple[int, int, int], int] = {}
    for row in rows[::2]:
        for x in range(x0, x1, 2):
            r, g, b = row[3 * x : 3 * x + 3]
            if max(r, g, b) - min(r, g, b) > 40:  # saturated: a node, not the background
                counts[(r, g, b)] = counts.get((r, g, b), 0) + 1
    return counts


def test_graph_view_draws_legend_and_details_in_chromium(clients: Clients, tmp_path: Path) -> None:
    ingest(clients, CONVERSATION)
    page = tmp_path / "views" / "w1.html"
    write_html_view(clients.graph, clients.graph_database, Scope.WORKSPACE, "w1", page, ONTOLOGY)

    with Browser(width=1280, height=800) as browser:
        browser.open(page.as_uri())
        browser.wait_for(GRAPH_READY)
        # Software WebGL: the force layout settles over real seconds.
        time.sleep(6)
        png = browser.screenshot()
        width, _, rows = decode_png(png)
        graph_width = width - 320  # the side panel is 320 px wide
        colours = _coloured(rows, 0, graph_width)
        legend = browser.evaluate(
            "[...document.querySelectorAll('#tg-legend li')].map(li => li.textContent)"
        )
        errors = browser.evaluate("document.body.innerText.includes('Missing visualization')")

        # Click the node drawn in the Episode colour, and read the details panel.
        episode_colour = browser.evaluate(
            "[...document.querySelectorAll('#tg-legend li')].find(li => "
            "li.textContent.startsWith('Episode')).firstElementChild.style.background"
        )
        target, shown = None, None
        for _ in range(8):  # the layout may still drift: look again, click again
            _, _, now = decode_png(browser.screenshot())
            target = _find_colour(now, graph_width, episode_colour)
            if target is not None:
                browser.click(*target)
                time.sleep(0.5)
                if browser.evaluate("window.turngraphShown"):
                    shown = browser.evaluate("document.getElementById('tg-details').innerText")
                    png = browser.screenshot()  # with the clicked turn in the panel
                    break
            time.sleep(1)

    if os.environ.get("TURNGRAPH_SAVE_SCREENSHOT"):
        Path(os.environ["TURNGRAPH_SAVE_SCREENSHOT"]).write_bytes(png)
    assert not errors
    assert sum(colours.values()) > 500, "the canvas is blank"
    assert len(colours) >= 3, "fewer than three node colours drawn"
    assert any(item.startswith("Episode") for item in legend)
    assert any(item.startswith("Decision") for item in legend)
    assert target is not None, "no turn drawn in the Episode colour"
    assert shown and any(event.content in shown for event in CONVERSATION[:5])


def _find_colour(
    rows: list[bytes], graph_width: int, css_colour: str
) -> tuple[float, float] | None:
    """The middle of the densest patch of ``css_colour`` (``rgb(r, g, b)``) in the graph
    area: a filled node, not a button border of a similar grey."""
    wanted = tuple(int(part) for part in css_colour.strip("rgb()").split(","))
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
