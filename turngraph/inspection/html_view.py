"""``turngraph graph show``: an HTML view of a scope's subgraph.

Rendered by ``neo4j-viz`` through its public API only (``VisualizationGraph``,
``set_legend``, ``render``): one page that opens offline, coloured as the Neo4j Browser
style (:mod:`turngraph.inspection.browser_style`), captions cut at a word. The page holds
the scope's turns verbatim: the user's own data, in a file they chose.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime
from html import escape
from pathlib import Path
from typing import Any

import neo4j

from turngraph.inspection.browser_style import OntologyLike, node_styles
from turngraph.schemas.errors import ConfigurationError
from turngraph.schemas.scopes import Scope
from turngraph.workers.graph.subgraph import Subgraph, read_scope
from turngraph.workers.graph.vectors import VECTOR_PROPERTIES

__all__ = [
    "CAPTION_CHARS", "LONG_WORD_CHARS", "MAX_NODES", "MIN_RADIUS_PX", "TITLE_CHARS", "VIZ_INSTALL",
    "HtmlView", "breakable", "caption", "episode_caption", "name_caption", "render_html",
    "require_viz", "scope_names", "shorten", "write_html_view",
]  # fmt: skip

MAX_NODES = 2_000
"""Larger scopes are cut (episodes first, newest kept): a browser tab stays responsive."""

CAPTION_CHARS = 18
"""Captions longer than this are cut at a word boundary (never inside a word): the graph
view wraps a caption inside its circle and hyphenates words that do not fit a line, so a
caption stays a few short words."""

MIN_RADIUS_PX = 32
"""Nodes are drawn at least this big, so a short word fits on one caption line."""

_PLACEHOLDER = re.compile(r"\{(\w+)\}")
VIZ_INSTALL = (
    "install the viz extra: `.venv/bin/python -m pip install -e '.[viz]'` in the turngraph "
    "clone (`pip install 'turngraph[viz]'` for an installed package)"
)
"""What to run when neo4j-viz is missing (the README installs the package without it)."""


def require_viz() -> None:
    """Raise :class:`ConfigurationError` naming the install command when the optional
    ``viz`` extra (neo4j-viz) is missing; commands call it before connecting anywhere."""
    try:
        import neo4j_viz  # noqa: F401
    except ImportError as exc:  # an optional extra
        raise ConfigurationError(f"the HTML view needs neo4j-viz; {VIZ_INSTALL}") from exc


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


def shorten(text: str, limit: int = CAPTION_CHARS) -> str:
    """``text`` on one line, cut at the last word boundary within ``limit`` (a single
    overlong word is kept whole rather than broken)."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    for separator in (" ", "/", "_", "-", "."):  # a word, else a path or identifier part
        if separator in cut[1:]:
            cut = cut[: cut.rindex(separator) + (separator != " ")]
            break
    return cut.rstrip(" ,;:.") + "…"


_BREAKABLE = re.compile(r"([/_\-])(?=\w)")
LONG_WORD_CHARS = 10
"""A caption word longer than this no longer fits a circle's line: the view would hyphenate it."""


def breakable(text: str) -> str:
    """Long paths and identifiers opened up after ``/ _ -`` (``feat/ upload``): the view
    wraps a caption at spaces only and hyphenates a word that does not fit its line."""
    return " ".join(
        _BREAKABLE.sub(lambda m: m.group(1) + " ", word)
        if len(word.rstrip("…")) > LONG_WORD_CHARS
        else word
        for word in text.split(" ")
    )


def caption(template: str, properties: dict[str, Any], fallback: str) -> str:
    """Fill a GraSS caption template (``{name}``) from properties, cut at a word."""
    if not all(p in properties for p in _PLACEHOLDER.findall(template)):
        return fallback
    return shorten(_PLACEHOLDER.sub(lambda m: str(properties[m.group(1)]), template))


def episode_caption(properties: dict[str, Any]) -> str:
    """A turn by the start of what was said (``how do we bound…``); its properties in the
    view's side panel have the role, the time and the whole text."""
    content = str(properties.get("content") or "")
    role = str(properties.get("role") or "turn")
    return shorten(content) if content else f"{role} #{properties.get('turn_index')}"


def scope_names(subgraph: Subgraph, folders: dict[str, str]) -> dict[str, str]:
    """Readable names of the scopes drawn, by their key: a workspace by its folder's name
    (``folders``: the data folder's hints, kept on this machine only), a session by the
    first words of its first turn."""
    names = {key: folder for key, folder in folders.items() if folder}
    first: dict[str, tuple[str, str]] = {}
    for node in subgraph.nodes:
        if "Episode" not in node.labels:
            continue
        props = node.properties
        session, when = str(props.get("session_id") or ""), str(props.get("occurred_at") or "")
        if session and (session not in first or when < first[session][0]):
            first[session] = (when, str(props.get("content") or ""))
    for session, (_, content) in first.items():
        if content:
            names[session] = f"“{shorten(content, TITLE_CHARS)}”"
    return names


def name_caption(name: str) -> str:
    """A scope's name as a caption: a quoted session start keeps its quotes when cut."""
    if name.startswith("“") and name.endswith("”"):
        return f"“{shorten(name[1:-1])}”"
    return shorten(name)


TITLE_CHARS = 40
"""A session is named by at most this much of its first turn."""


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


def render_html(
    subgraph: Subgraph, ontology: OntologyLike, title: str, *, names: dict[str, str] | None = None
) -> str:
    """The page as neo4j-viz renders it (its bundle inlined), titled ``title``. ``names``
    captions scope nodes (a session, a workspace) by a readable name instead of their
    hashed key."""
    names = names or {}
    try:
        from neo4j_viz import Node, Relationship, VisualizationGraph
    except ImportError as exc:  # an optional extra
        raise ConfigurationError(f"the HTML view needs neo4j-viz; {VIZ_INSTALL}") from exc

    styles = {s.label: s for s in node_styles(ontology)}
    nodes: list[Any] = []
    legend: dict[str, str] = {}
    for node in subgraph.nodes:
        style = next((styles[label] for label in node.labels if label in styles), None)
        label = node.labels[0] if node.labels else "node"
        properties = {
            k: _plain(v) for k, v in node.properties.items() if k not in VECTOR_PROPERTIES
        }
        properties["labels"] = ":".join(node.labels)
        color = style.color if style else "#A5ABB6"
        legend[style.label if style else label] = color
        if "Episode" in node.labels:
            text = episode_caption(node.properties)
        elif str(node.properties.get("key")) in names:
            text = name_caption(names[str(node.properties["key"])])
        else:
            text = caption(style.caption, node.properties, label) if style else label
        nodes.append(
            Node(
                id=node.element_id,
                caption=breakable(text),
                color=color,
                size=max(style.diameter_px / 2 if style else 25, MIN_RADIUS_PX),
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
    graph.set_legend(nodes=sorted(legend.items()))
    page: str = graph.render(height="100vh", theme="light").data
    # The template's title is its own name; a tab should say which scope it shows.
    return page.replace("<title>neo4j-viz</title>", f"<title>{escape(title)}</title>", 1)


def write_html_view(
    driver: neo4j.Driver,
    database: str | None,
    scope: Scope,
    key: str,
    path: Path,
    ontology: OntologyLike,
    max_nodes: int = MAX_NODES,
    *,
    folders: dict[str, str] | None = None,
) -> HtmlView:
    """Read the scope's subgraph and write it as one HTML page that opens offline.
    ``folders``: the workspace folders' names by workspace id, for the title and
    captions."""
    subgraph = read_scope(driver, database, scope, key, ontology.labels())
    subgraph, truncated = _truncate(subgraph, max_nodes)
    path.parent.mkdir(parents=True, exist_ok=True)
    names = scope_names(subgraph, folders or {})
    html = render_html(
        subgraph, ontology, f"turngraph: {scope.value} {names.get(key, key)}", names=names
    )
    path.write_text(html, encoding="utf-8")
    return HtmlView(path, len(subgraph.nodes), len(subgraph.relationships), truncated)
