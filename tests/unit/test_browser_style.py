"""The Browser style covers every label with its own colour and is regenerated with
the ontology."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from turngraph.inspection.browser_style import (
    STRUCTURAL_NODES,
    grass_for,
    main,
    node_styles,
    text_color_for,
)
from turngraph.schemas.ontology import ONTOLOGY, EntityType

REPO_ROOT = Path(__file__).resolve().parents[2]
COMMITTED = REPO_ROOT / "ops" / "neo4j" / "turngraph.grass"
RULE = re.compile(r"^(node|relationship)\.(\w+) \{\n(.*?)^\}", re.MULTILINE | re.DOTALL)


def rules(text: str) -> dict[str, dict[str, str]]:
    parsed = {}
    for kind, name, body in RULE.findall(text):
        declarations = dict(line.strip().rstrip(";").split(": ", 1) for line in body.splitlines())
        parsed[f"{kind}.{name}"] = declarations
    return parsed


def test_committed_style_is_generated_from_the_current_ontology() -> None:
    assert COMMITTED.read_text() == grass_for(ONTOLOGY), (
        "ops/neo4j/turngraph.grass is stale: run python -m turngraph.inspection.browser_style"
    )
    assert main(["--check", "--out", str(COMMITTED)]) == 0


def test_every_label_has_its_own_colour_and_a_caption() -> None:
    parsed = rules(grass_for(ONTOLOGY))
    labels = [*ONTOLOGY.labels(), *(s.label for s in STRUCTURAL_NODES)]

    colours = [parsed[f"node.{label}"]["color"] for label in labels]
    assert len(set(colours)) == len(labels)
    for label in labels:
        assert parsed[f"node.{label}"]["caption"].startswith('"{')
    for rel in ONTOLOGY.relationship_types():
        assert parsed[f"relationship.{rel}"]["caption"] == '"<type>"'


def test_extension_types_beyond_the_palette_get_stable_colours() -> None:
    extra = [EntityType(f"Extra{i}", "an extension type") for i in range(12)]
    extended = replace(ONTOLOGY, entity_types=(*ONTOLOGY.entity_types, *extra))

    first = {s.label: s.color for s in node_styles(extended)}
    again = {s.label: s.color for s in node_styles(extended)}
    assert first == again
    assert all(re.fullmatch(r"#[0-9A-F]{6}", first[t.name]) for t in extra)


def test_stale_file_is_reported(tmp_path: Path) -> None:
    out = tmp_path / "style.grass"
    assert main(["--check", "--out", str(out)]) == 1
    assert main(["--out", str(out)]) == 0
    assert main(["--check", "--out", str(out)]) == 0


def test_caption_text_contrasts_with_its_background() -> None:
    assert text_color_for("#FFFFFF") == "#000000"
    assert text_color_for("#24292F") == "#FFFFFF"


def test_cli_checks_the_committed_style() -> None:
    from turngraph.cli import main as cli

    assert cli(["graph", "style", "--check", "-o", str(COMMITTED)]) == 0


def test_a_turn_shows_its_first_words_and_an_entity_its_name() -> None:
    # Issue 35: turns were captioned `{role} #{turn_index}` ("user #0"), saying less than
    # Browser's own default.
    parsed = rules(grass_for(ONTOLOGY))
    assert parsed["node.Episode"]["caption"] == '"{content}"'
    for label in ONTOLOGY.labels():
        if label not in {s.label for s in STRUCTURAL_NODES}:
            assert parsed[f"node.{label}"]["caption"] == '"{name}"', label


def test_up_says_how_to_open_browser_ready_to_connect(tmp_path: Path) -> None:
    # Issue 35: `up --graph neo4j` printed only Browser's address; the user and the
    # password file were in ops/neo4j/README.md alone.
    from urllib.parse import parse_qs, urlsplit

    from turngraph.cli.run_cmd import browser_lines
    from turngraph.embedded import ServiceEndpoints

    endpoints = ServiceEndpoints(
        redis_url="redis://:r@127.0.0.1:6390/0",
        graph_uri="bolt://127.0.0.1:7690",
        graph_user="neo4j",
        graph_password="not-in-any-line",
        graph_database="neo4j",
        studio_url="http://127.0.0.1:7480/browser/",
        owner_pid=1,
        graph_engine="neo4j",
    )
    lines = browser_lines(endpoints, tmp_path)
    url = lines[0].split()[-1]
    assert url.startswith("http://127.0.0.1:7480/browser/?")
    assert parse_qs(urlsplit(url).query) == {
        "dbms": ["bolt://neo4j@127.0.0.1:7690"],  # Browser fills URL and user from it
        "db": ["neo4j"],
    }
    text = "\n".join(lines)
    assert str(tmp_path / "neo4j" / "graph.password") in text and "user neo4j" in text
    assert "turngraph.grass" in text
    assert "not-in-any-line" not in text
