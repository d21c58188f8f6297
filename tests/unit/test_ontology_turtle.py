"""The Turtle (OWL) export, and loading a user's extension: each broken file a typed error."""

from __future__ import annotations

from pathlib import Path

import pytest
import rdflib
from rdflib.namespace import OWL, RDF

from ops.ontology_export import TURTLE_PATH, main, to_turtle
from turngraph.schemas.errors import ConfigurationError
from turngraph.schemas.ontology import (
    ONTOLOGY,
    OntologyConflictError,
    OntologyFileEmptyError,
    OntologyFileMissingError,
    OntologyFileUnreadableError,
    OntologyLoadError,
    OntologyNamespaceError,
    OntologyNoTriplesError,
    OntologyParseError,
    load_extension,
    ontology_from,
)

PREFIXES = """\
@prefix tg: <https://turngraph.dev/ontology#> .
@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix skos: <http://www.w3.org/2004/02/skos/core#> .
"""


def write(tmp_path: Path, text: str | bytes, name: str = "ext.ttl") -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def test_committed_turtle_is_current() -> None:
    assert TURTLE_PATH.read_text(encoding="utf-8") == to_turtle(ONTOLOGY), (
        "ontology.ttl is stale: run python ops/ontology_export.py"
    )
    assert main(["--check"]) == 0


def test_export_check_fails_on_a_stale_file(tmp_path: Path) -> None:
    stale = write(tmp_path, "# old\n")
    assert main(["--check", "--output", str(stale)]) == 1
    assert main(["--output", str(stale)]) == 0
    assert main(["--check", "--output", str(stale)]) == 0


def test_export_is_owl_with_every_class_and_property() -> None:
    graph = rdflib.Graph().parse(data=to_turtle(ONTOLOGY), format="turtle")
    ns = rdflib.Namespace(ONTOLOGY.namespace)
    classes = {str(c).removeprefix(ONTOLOGY.namespace) for c in graph.subjects(RDF.type, OWL.Class)
               if isinstance(c, rdflib.URIRef)}  # fmt: skip
    props = {str(p).removeprefix(ONTOLOGY.namespace)
             for p in graph.subjects(RDF.type, OWL.ObjectProperty)}  # fmt: skip
    assert classes == set(ONTOLOGY.labels())
    assert props == set(ONTOLOGY.relationship_types())
    assert (ns.RELATED_TO, RDF.type, OWL.SymmetricProperty) in graph


def test_exported_turtle_loads_back_as_the_same_ontology(tmp_path: Path) -> None:
    loaded = load_extension(write(tmp_path, to_turtle(ONTOLOGY)), ONTOLOGY)
    assert loaded.labels() == ONTOLOGY.labels()
    assert [(r.name, r.domain, r.range) for r in loaded.relation_types] == [
        (r.name, r.domain, r.range) for r in ONTOLOGY.relation_types
    ]


def test_an_extension_adds_classes_and_properties_and_widens_ours(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        PREFIXES
        + """
tg:Environment a owl:Class ; rdfs:comment "A deployment environment." ;
    skos:altLabel "Env" .
tg:DEPLOYED_TO a owl:ObjectProperty ; rdfs:comment "A service runs in an environment." ;
    rdfs:domain [ a owl:Class ; owl:unionOf ( tg:Service tg:Repository ) ] ;
    rdfs:range tg:Environment .
tg:APPLIES_TO a owl:ObjectProperty ; rdfs:range tg:Environment .
""",
    )
    extended = load_extension(path, ONTOLOGY)
    assert extended.labels()[-1] == "Environment"
    assert extended.entity_type("env").name == "Environment"  # type: ignore[union-attr]
    deployed = extended.relation_type("DEPLOYED_TO")
    assert deployed is not None
    assert deployed.domain == {"Service", "Repository"}
    assert deployed.range == {"Environment"}
    assert "Environment" in extended.relation_type("APPLIES_TO").range  # type: ignore[union-attr]
    assert extended.extends == ("ext.ttl",)
    assert ONTOLOGY.entity_type("Environment") is None  # ours is untouched


def expect(error: type[OntologyLoadError], path: Path, fragment: str) -> str:
    with pytest.raises(error) as info:
        load_extension(path, ONTOLOGY)
    message = str(info.value)
    assert isinstance(info.value, ConfigurationError)
    assert path.name in message and fragment in message
    return message


def test_missing_file(tmp_path: Path) -> None:
    expect(OntologyFileMissingError, tmp_path / "nope.ttl", "does not exist")


def test_unreadable_file_a_directory(tmp_path: Path) -> None:
    folder = tmp_path / "dir.ttl"
    folder.mkdir()
    expect(OntologyFileUnreadableError, folder, "not a regular file")


def test_unreadable_file_not_utf8(tmp_path: Path) -> None:
    expect(OntologyFileUnreadableError, write(tmp_path, b"\xff\xfe\x00tg:"), "not UTF-8")


def test_empty_file(tmp_path: Path) -> None:
    expect(OntologyFileEmptyError, write(tmp_path, "  \n# only a comment\n\n"), "empty")


def test_parse_error(tmp_path: Path) -> None:
    message = expect(
        OntologyParseError, write(tmp_path, PREFIXES + "tg:X a owl:Class ;; oops"), "not valid"
    )
    assert "oops" not in message.split(":", 1)[0]


def test_no_triples(tmp_path: Path) -> None:
    expect(OntologyNoTriplesError, write(tmp_path, PREFIXES), "no triples")


def test_unknown_namespace(tmp_path: Path) -> None:
    text = (
        "@prefix owl: <http://www.w3.org/2002/07/owl#> .\n"
        "<http://example.org/x#Robot> a owl:Class ."
    )
    expect(OntologyNamespaceError, write(tmp_path, text), "http://example.org/x")


def test_triples_without_owl_or_rdfs_vocabulary(tmp_path: Path) -> None:
    text = "<http://example.org/a> <http://example.org/likes> <http://example.org/b> ."
    expect(OntologyNamespaceError, write(tmp_path, text), "no owl:Class")


def test_conflict_our_class_redeclared_as_property(tmp_path: Path) -> None:
    text = PREFIXES + "tg:Decision a owl:ObjectProperty ."
    expect(OntologyConflictError, write(tmp_path, text), "'Decision' is one of our classes")


def test_conflict_our_relation_redeclared_as_class(tmp_path: Path) -> None:
    text = PREFIXES + "tg:APPLIES_TO a owl:Class ."
    expect(OntologyConflictError, write(tmp_path, text), "one of our relations")


def test_conflict_new_class_named_like_one_of_our_aliases(tmp_path: Path) -> None:
    text = PREFIXES + "tg:PR a owl:Class ."
    expect(OntologyConflictError, write(tmp_path, text), "alias of our type 'PullRequest'")


def test_conflict_term_both_class_and_property(tmp_path: Path) -> None:
    text = PREFIXES + "tg:Widget a owl:Class, owl:ObjectProperty ."
    expect(OntologyConflictError, write(tmp_path, text), "both class and property")


def test_property_naming_an_unknown_class(tmp_path: Path) -> None:
    text = PREFIXES + "tg:GUARDS a owl:ObjectProperty ; rdfs:range tg:Dragon ."
    expect(OntologyLoadError, write(tmp_path, text), "unknown classes ['Dragon']")


def test_ontology_from_an_optional_path(tmp_path: Path) -> None:
    assert ontology_from(None, ONTOLOGY) is ONTOLOGY
    path = write(tmp_path, PREFIXES + 'tg:Runbook2 a owl:Class ; rdfs:comment "x" .')
    assert ontology_from(path, ONTOLOGY).entity_type("Runbook2") is not None
    with pytest.raises(OntologyFileMissingError):
        ontology_from(tmp_path / "missing.ttl", ONTOLOGY)
