"""The Neo4j Browser style (GraSS) for turngraph's graph, generated from the ontology.

One colour and one caption per label: every ontology entity type plus the structural
labels (episodes, sessions, summaries …). ``ops/neo4j/turngraph.grass`` is this module's
output; regenerate it with ``python -m turngraph.inspection.browser_style`` after the ontology
changes (a test fails while the committed file is stale).
"""

from __future__ import annotations

import argparse
import colorsys
import hashlib
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

__all__ = [
    "DEFAULT_OUTPUT", "ENTITY_CAPTION", "ENTITY_DIAMETER_PX", "ENTITY_PALETTE", "EPISODE_CAPTION",
    "STRUCTURAL_NODES", "STRUCTURAL_RELATIONSHIPS", "NodeStyle", "OntologyLike",
    "RelationshipStyle", "grass_for", "main", "node_styles", "relationship_styles", "render_grass",
    "text_color_for",
]  # fmt: skip

DEFAULT_OUTPUT = Path("ops/neo4j/turngraph.grass")
"""Where the style file lives in the repository."""

ENTITY_CAPTION = "{name}"
"""Entities are shown by their name."""

ENTITY_DIAMETER_PX = 50

EPISODE_CAPTION = "{content}"
"""A turn is shown by its text: Browser fits a caption's first words into the circle and
cuts the rest (``{role} #{turn_index}``, "user #0", said less than Browser's default)."""


class OntologyLike(Protocol):
    def labels(self) -> tuple[str, ...]: ...

    def relationship_types(self) -> tuple[str, ...]: ...


@dataclass(frozen=True)
class NodeStyle:
    label: str
    color: str
    caption: str
    diameter_px: int = ENTITY_DIAMETER_PX


@dataclass(frozen=True)
class RelationshipStyle:
    type: str
    color: str
    shaft_width_px: int = 2


STRUCTURAL_NODES: tuple[NodeStyle, ...] = (
    NodeStyle("Episode", "#C9D1D9", EPISODE_CAPTION, 50),
    NodeStyle("Session", "#57606A", "{key}", 65),
    NodeStyle("Workspace", "#24292F", "{key}", 80),
    NodeStyle("User", "#8250DF", "{key}", 70),
    NodeStyle("Summary", "#54AEFF", "{topic}", 55),
    NodeStyle("DecisionRecord", "#CF222E", "{topic}", 60),
    NodeStyle("Memory", "#BF8700", "{kind}", 55),
)
"""Labels that are not ontology types: the conversation, its scopes, what is made of it."""

STRUCTURAL_RELATIONSHIPS: tuple[RelationshipStyle, ...] = (
    RelationshipStyle("IN_SESSION", "#D0D7DE", 1),
    RelationshipStyle("IN_WORKSPACE", "#D0D7DE", 1),
    RelationshipStyle("NEXT", "#8C959F", 2),
    RelationshipStyle("MENTIONS", "#D0D7DE", 1),
    RelationshipStyle("SUPERSEDES", "#CF222E", 3),
    RelationshipStyle("SUMMARIZES", "#54AEFF", 1),
    RelationshipStyle("DERIVED_FROM", "#BF8700", 1),
)

ENTITY_PALETTE: tuple[str, ...] = (
    "#4C8EDA", "#F79767", "#57C7E3", "#F16667", "#D9C8AE", "#8DCC93", "#ECB5C9",
    "#4C9A2A", "#FFC454", "#DA7194", "#569480", "#C990C0", "#A5ABB6", "#F4A261",
    "#2A9D8F", "#E9C46A", "#6A4C93", "#1982C4", "#8AC926", "#FF595E", "#B5838D",
    "#6D6875", "#00B4D8", "#E76F51", "#90BE6D", "#577590", "#F94144", "#43AA8B",
)  # fmt: skip
"""Distinct colours handed to ontology types in declaration order."""


def _hashed_color(name: str) -> str:
    """A stable colour for types beyond the palette (user extensions)."""
    digest = hashlib.sha256(name.encode()).digest()
    red, green, blue = colorsys.hls_to_rgb(digest[0] / 255, 0.55, 0.6)
    return f"#{round(red * 255):02X}{round(green * 255):02X}{round(blue * 255):02X}"


def text_color_for(background: str) -> str:
    """Black or white caption text, whichever reads better on ``background``."""
    red, green, blue = (int(background[i : i + 2], 16) for i in (1, 3, 5))
    luminance = 0.2126 * red + 0.7152 * green + 0.0722 * blue
    return "#000000" if luminance > 150 else "#FFFFFF"


def _border_color(color: str) -> str:
    channels = (int(color[i : i + 2], 16) for i in (1, 3, 5))
    return "#" + "".join(f"{round(c * 0.85):02X}" for c in channels)


def node_styles(ontology: OntologyLike) -> list[NodeStyle]:
    """Structural labels first, then one style per ontology type."""
    structural = {s.label for s in STRUCTURAL_NODES}
    styles = list(STRUCTURAL_NODES)
    entity_labels = [label for label in ontology.labels() if label not in structural]
    for index, label in enumerate(entity_labels):
        color = ENTITY_PALETTE[index] if index < len(ENTITY_PALETTE) else _hashed_color(label)
        styles.append(NodeStyle(label, color, ENTITY_CAPTION))
    return styles


def relationship_styles(ontology: OntologyLike) -> list[RelationshipStyle]:
    structural = {s.type for s in STRUCTURAL_RELATIONSHIPS}
    facts = [
        RelationshipStyle(name, "#A5ABB6", 2)
        for name in ontology.relationship_types()
        if name not in structural
    ]
    return [*STRUCTURAL_RELATIONSHIPS, *facts]


def _rule(selector: str, declarations: Sequence[tuple[str, str]]) -> str:
    body = "".join(f"  {key}: {value};\n" for key, value in declarations)
    return f"{selector} {{\n{body}}}\n"


def render_grass(nodes: Iterable[NodeStyle], relationships: Iterable[RelationshipStyle]) -> str:
    """GraSS text: defaults, then one rule per label and relationship type.

    Selectors are ``node.Label``: ontology names are PascalCase / UPPER_SNAKE (validated
    by the ontology), so they need no escaping."""
    # No comment line: Browser's GraSS parser is not a full CSS parser.
    rules = [
        _rule(
            "node",
            [
                ("diameter", f"{ENTITY_DIAMETER_PX}px"),
                ("color", "#A5ABB6"),
                ("border-color", "#9AA1AC"),
                ("border-width", "2px"),
                ("text-color-internal", "#FFFFFF"),
                ("font-size", "10px"),
            ],
        ),
        _rule(
            "relationship",
            [
                ("color", "#A5ABB6"),
                ("shaft-width", "2px"),
                ("font-size", "8px"),
                ("padding", "3px"),
                ("text-color-external", "#000000"),
                ("text-color-internal", "#FFFFFF"),
                ("caption", '"<type>"'),
            ],
        ),
    ]
    for node in nodes:
        rules.append(
            _rule(
                f"node.{node.label}",
                [
                    ("color", node.color),
                    ("border-color", _border_color(node.color)),
                    ("text-color-internal", text_color_for(node.color)),
                    ("diameter", f"{node.diameter_px}px"),
                    ("caption", f'"{node.caption}"'),
                ],
            )
        )
    for rel in relationships:
        rules.append(
            _rule(
                f"relationship.{rel.type}",
                [
                    ("color", rel.color),
                    ("shaft-width", f"{rel.shaft_width_px}px"),
                    ("caption", '"<type>"'),
                ],
            )
        )
    return "\n".join(rules)


def grass_for(ontology: OntologyLike) -> str:
    """The complete style for ``ontology``."""
    return render_grass(node_styles(ontology), relationship_styles(ontology))


def _default_ontology() -> OntologyLike:
    from turngraph.schemas.ontology import ONTOLOGY

    return ONTOLOGY


def main(argv: Sequence[str] | None = None) -> int:
    """Write the style file, or with ``--check`` fail if the committed one is stale."""
    parser = argparse.ArgumentParser(prog="python -m turngraph.inspection.browser_style")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUTPUT)
    parser.add_argument("--check", action="store_true", help="exit 1 if the file is stale")
    args = parser.parse_args(argv)
    text = grass_for(_default_ontology())
    if args.check:
        current = args.out.read_text() if args.out.exists() else ""
        if current != text:
            print(f"{args.out} is stale: run {parser.prog}", file=sys.stderr)
            return 1
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
