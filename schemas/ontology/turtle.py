"""Loading a user's ontology extension, written in Turtle (OWL).

Loading parses with rdflib and turns every way a file can be broken into a typed
:class:`OntologyLoadError` whose message names the file, never a crash. The committed
``ontology.ttl`` is written by ``ops/ontology_export.py``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import rdflib
from rdflib.collection import Collection
from rdflib.namespace import OWL, RDF, RDFS, SKOS

from turngraph.schemas.ontology.errors import (
    OntologyConflictError,
    OntologyFileEmptyError,
    OntologyFileMissingError,
    OntologyFileUnreadableError,
    OntologyLoadError,
    OntologyNamespaceError,
    OntologyNoTriplesError,
    OntologyParseError,
)
from turngraph.schemas.ontology.model import (
    RELATION_NAME_PATTERN,
    TYPE_NAME_PATTERN,
    EntityType,
    Ontology,
    RelationType,
)

__all__ = ["MAX_EXTENSION_BYTES", "load_extension", "ontology_from"]

MAX_EXTENSION_BYTES = 5_000_000
"""Larger extension files are refused (an ontology is small; this is a typo guard)."""


def _read(path: Path) -> str:
    name = path.name
    if not path.exists():
        raise OntologyFileMissingError(f"ontology file {name!r} does not exist")
    if not path.is_file():
        raise OntologyFileUnreadableError(f"ontology file {name!r} is not a regular file")
    try:
        if path.stat().st_size > MAX_EXTENSION_BYTES:
            raise OntologyFileUnreadableError(
                f"ontology file {name!r} is larger than {MAX_EXTENSION_BYTES} bytes"
            )
        return path.read_text(encoding="utf-8")
    except PermissionError as err:
        raise OntologyFileUnreadableError(f"ontology file {name!r} is not readable") from err
    except UnicodeDecodeError as err:
        raise OntologyFileUnreadableError(f"ontology file {name!r} is not UTF-8 text") from err
    except OSError as err:
        raise OntologyFileUnreadableError(
            f"ontology file {name!r} could not be read ({type(err).__name__})"
        ) from err


def _has_content(text: str) -> bool:
    return any(line.strip() and not line.lstrip().startswith("#") for line in text.splitlines())


def _parse(text: str, name: str) -> rdflib.Graph:
    graph = rdflib.Graph()
    try:
        graph.parse(data=text, format="turtle")
    except Exception as err:  # rdflib raises many unrelated types for bad syntax
        reason = str(err).splitlines()[0][:200] if str(err) else type(err).__name__
        raise OntologyParseError(f"ontology file {name!r} is not valid Turtle: {reason}") from err
    return graph


def _local_name(node: rdflib.term.Node, namespace: str) -> str | None:
    text = str(node)
    return text[len(namespace) :] if text.startswith(namespace) else None


def _namespace_of(iri: str) -> str:
    cut = iri.rfind("#") if "#" in iri else iri.rfind("/")
    return iri[: cut + 1] if cut >= 0 else iri


def _class_names(
    graph: rdflib.Graph, node: rdflib.term.Node, namespace: str, name: str
) -> set[str]:
    """The class names of a domain/range node: one class, or an owl:unionOf list."""
    if isinstance(node, rdflib.BNode):
        union = graph.value(node, OWL.unionOf)
        if union is None:
            raise OntologyLoadError(
                f"ontology file {name!r}: a domain or range is neither a class nor a union"
            )
        members: set[str] = set()
        for member in Collection(graph, union):
            members |= _class_names(graph, member, namespace, name)
        return members
    local = _local_name(node, namespace)
    if local is None:
        raise OntologyNamespaceError(
            f"ontology file {name!r}: domain or range {str(node)!r} is outside {namespace!r}"
        )
    return {local}


def _declared(graph: rdflib.Graph, kinds: tuple[rdflib.URIRef, ...]) -> set[rdflib.term.Node]:
    return {s for kind in kinds for s in graph.subjects(RDF.type, kind)}


def _texts(graph: rdflib.Graph, subject: rdflib.term.Node, predicate: rdflib.URIRef) -> list[str]:
    return sorted(str(o) for o in graph.objects(subject, predicate))


def load_extension(path: str | Path, base: Ontology) -> Ontology:
    """``base`` extended with the classes and properties declared in a Turtle file.

    New classes and properties must live in ``base.namespace``. Redeclaring one of our
    properties may widen its domain and range; redefining a class as a property (or the
    reverse), or reusing one of our aliases as a new name, is a conflict.
    """
    path = Path(path)
    name = path.name
    text = _read(path)
    if not _has_content(text):
        raise OntologyFileEmptyError(f"ontology file {name!r} is empty")
    graph = _parse(text, name)
    if len(graph) == 0:
        raise OntologyNoTriplesError(f"ontology file {name!r} declares no triples")

    namespace = base.namespace
    classes = _declared(graph, (OWL.Class, RDFS.Class))
    properties = _declared(graph, (OWL.ObjectProperty, RDF.Property, OWL.SymmetricProperty))
    classes = {c for c in classes if not isinstance(c, rdflib.BNode)}
    if not classes and not properties:
        raise OntologyNamespaceError(
            f"ontology file {name!r} declares no owl:Class or owl:ObjectProperty "
            f"(expected the OWL/RDFS namespaces and {namespace!r})"
        )
    foreign = sorted(
        {_namespace_of(str(n)) for n in classes | properties if _local_name(n, namespace) is None}
    )
    if foreign:
        raise OntologyNamespaceError(
            f"ontology file {name!r} declares terms in unknown namespace(s) {foreign}; "
            f"extensions must use {namespace!r}"
        )

    both = classes & properties
    if both:
        names = sorted(_local_name(n, namespace) or "" for n in both)
        raise OntologyConflictError(f"ontology file {name!r}: {names} are both class and property")

    new_types: list[EntityType] = []
    for node in sorted(classes, key=str):
        local = _local_name(node, namespace) or ""
        if base.relation_type(local) is not None and local.upper() == local:
            raise OntologyConflictError(
                f"ontology file {name!r}: class {local!r} is one of our relations"
            )
        existing = base.entity_type(local)
        if existing is not None:
            if existing.name != local:
                raise OntologyConflictError(
                    f"ontology file {name!r}: class {local!r} is an alias of our "
                    f"type {existing.name!r}"
                )
            continue  # redeclaring one of our classes (labels, comments) changes nothing
        if not TYPE_NAME_PATTERN.match(local):
            raise OntologyLoadError(f"ontology file {name!r}: class {local!r} is not PascalCase")
        comments = _texts(graph, node, RDFS.comment)
        new_types.append(
            EntityType(
                name=local,
                description=comments[0] if comments else local,
                aliases=tuple(_texts(graph, node, SKOS.altLabel)),
            )
        )

    known_types = set(base.entity_type_names()) | {t.name for t in new_types}
    new_relations: list[RelationType] = []
    widened: dict[str, RelationType] = {}
    for node in sorted(properties, key=str):
        local = _local_name(node, namespace) or ""
        same_class = base.entity_type(local)
        if same_class is not None and same_class.name == local:
            raise OntologyConflictError(
                f"ontology file {name!r}: property {local!r} is one of our classes"
            )
        domain: set[str] = set()
        for d in graph.objects(node, RDFS.domain):
            domain |= _class_names(graph, d, namespace, name)
        range_: set[str] = set()
        for r in graph.objects(node, RDFS.range):
            range_ |= _class_names(graph, r, namespace, name)
        unknown = (domain | range_) - known_types
        if unknown:
            raise OntologyLoadError(
                f"ontology file {name!r}: property {local!r} names unknown classes "
                f"{sorted(unknown)}"
            )
        existing_rel = base.relation_type(local)
        if existing_rel is not None:
            if existing_rel.name != local:
                raise OntologyConflictError(
                    f"ontology file {name!r}: property {local!r} is an alias of our "
                    f"relation {existing_rel.name!r}"
                )
            widened[local] = dataclasses.replace(
                existing_rel, domain=existing_rel.domain | domain, range=existing_rel.range | range_
            )
            continue
        if not RELATION_NAME_PATTERN.match(local):
            raise OntologyLoadError(
                f"ontology file {name!r}: property {local!r} is not UPPER_SNAKE"
            )
        comments = _texts(graph, node, RDFS.comment)
        new_relations.append(
            RelationType(
                name=local,
                description=comments[0] if comments else local,
                domain=frozenset(domain or known_types),
                range=frozenset(range_ or known_types),
                aliases=tuple(_texts(graph, node, SKOS.altLabel)),
                symmetric=(node, RDF.type, OWL.SymmetricProperty) in graph,
            )
        )

    relations = tuple(widened.get(r.name, r) for r in base.relation_types)
    try:
        return Ontology(
            version=base.version,
            entity_types=(*base.entity_types, *new_types),
            relation_types=(*relations, *new_relations),
            namespace=namespace,
            extends=(*base.extends, name),
        )
    except ValueError as err:
        raise OntologyConflictError(f"ontology file {name!r}: {err}") from err


def ontology_from(path: str | Path | None, base: Ontology) -> Ontology:
    """``base`` extended by the Turtle file at ``path``, or ``base`` itself when no file is
    configured (e.g. ``Settings.ontology_path`` unset)."""
    return base if path is None or str(path) == "" else load_extension(path, base)
