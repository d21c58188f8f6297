"""``turngraph graph show``: a self-contained HTML view of a scope's subgraph.

Rendered with Neo4j's ``neo4j-viz`` (the NVL graph view Neo4j's own tools use). Its
wheel ships the page with the JavaScript and CSS inlined, so the file opens offline and
can be mailed around; nothing is fetched from a CDN. Colours and captions are the same as
the Neo4j Browser style (:mod:`turngraph.inspection.browser_style`), so the graph reads the same
in both places. The page holds the scope's turns verbatim: it is the user's own data,
written to a file they chose.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any

import neo4j

from schemas.scopes import Scope
from turngraph.inspection.browser_style import OntologyLike, node_styles
from workers.graph.subgraph import Subgraph, read_scope

MAX_NODES = 2_000
"""Larger scopes are cut (episodes first, newest kept): a browser tab stays responsive."""

CAPTION_CHARS = 40
_PLACEHOLDER = re.compile(r"\{(\w+)\}")
VIZ_INSTALL = "pip install 'turngraph[viz]'"
GRAPH_PASSWORD_FILE = Path("graph") / "graph.password"
"""Where the embedded graph server keeps its root password, under the data folder."""


@dataclass(frozen=True)
class HtmlView:
    path: Path
    nodes: int
    relationships: int
    truncated: bool


def _plain(value: Any) -> Any:
    """Property values as JSON the page can show (temporal values as ISO text)."""
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, datetime | date):
        return value.isoformat()
    if hasattr(value, "iso_format"):
        return value.iso_format()
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)


def caption(template: str, properties: dict[str, Any], fallback: str) -> str:
    """Fill a GraSS caption template (``{role} #{turn_index}``) from properties."""
    if not all(p in properties for p in _PLACEHOLDER.findall(template)):
        return fallback
    text = _PLACEHOLDER.sub(lambda m: str(properties[m.group(1)]), template)
    return text if len(text) <= CAPTION_CHARS else text[: CAPTION_CHARS - 1] + "…"


def _truncate(subgraph: Subgraph, max_nodes: int) -> tuple[Subgraph, bool]:
    """Keep what was learnt (entities, summaries) and the newest turns."""
    if len(subgraph.nodes) <= max_nodes:
        return subgraph, False
    episodes = sorted(
        (n for n in subgraph.nodes if "Episode" in n.labels),
        key=lambda n: str(n.properties.get("occurred_at", "")),
        reverse=True,
    )
    others = [n for n in subgraph.nodes if "Episode" not in n.labels]
    kept = (others + episodes)[:max_nodes]
    ids = {n.element_id for n in kept}
    relationships = [r for r in subgraph.relationships if r.start in ids and r.end in ids]
    return Subgraph(kept, relationships, subgraph.episode_ids), True


def render_html(subgraph: Subgraph, ontology: OntologyLike, title: str) -> str:
    """The page: every node coloured and captioned like in Neo4j Browser."""
    try:
        from neo4j_viz import Node, Relationship, VisualizationGraph
    except ImportError as exc:  # an optional extra
        raise RuntimeError(f"the HTML view needs neo4j-viz: {VIZ_INSTALL}") from exc

    styles = {s.label: s for s in node_styles(ontology)}
    nodes = []
    for node in subgraph.nodes:
        style = next((styles[label] for label in node.labels if label in styles), None)
        label = node.labels[0] if node.labels else "node"
        properties = {k: _plain(v) for k, v in node.properties.items()}
        properties["labels"] = ":".join(node.labels)
        nodes.append(
            Node(
                id=node.element_id,
                caption=caption(style.caption, node.properties, label) if style else label,
                color=style.color if style else "#A5ABB6",
                size=style.diameter_px / 2 if style else 25,
                properties=properties,
            )
        )
    relationships = [
        Relationship(
            id=rel.element_id,
            source=rel.start,
            target=rel.end,
            caption=rel.type,
            properties={k: _plain(v) for k, v in rel.properties.items()},
        )
        for rel in subgraph.relationships
    ]
    graph = VisualizationGraph(nodes=nodes, relationships=relationships)
    page: str = graph.render(height="100vh", theme="light").data
    heading = json.dumps(title)[1:-1].replace("<", "\\u003c")
    return page.replace("<head>", f"<head>\n<title>{heading}</title>", 1)


def write_html_view(
    driver: neo4j.Driver,
    database: str | None,
    scope: Scope,
    key: str,
    path: Path,
    ontology: OntologyLike,
    max_nodes: int = MAX_NODES,
) -> HtmlView:
    """Read the scope's subgraph and write it as one self-contained HTML file."""
    subgraph = read_scope(driver, database, scope, key, ontology.labels())
    subgraph, truncated = _truncate(subgraph, max_nodes)
    html = render_html(subgraph, ontology, f"turngraph {scope.value} {key}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(html, encoding="utf-8")
    return HtmlView(path, len(subgraph.nodes), len(subgraph.relationships), truncated)
