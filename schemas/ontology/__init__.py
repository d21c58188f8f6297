"""Our ontology, declared once in code (:mod:`schemas.ontology.catalog`).

Generated from it: the extraction JSON Schema (:func:`response_format`), the prompt's
type list, validation (``workers.extraction.validation``), Neo4j labels, relationship
types and uniqueness keys (:func:`labels`, :func:`relationship_types`,
:func:`uniqueness_keys`), and the Turtle export (``ops/ontology_export.py``).
"""

from __future__ import annotations

from turngraph.schemas.ontology.catalog import DIRECTIVES, ONTOLOGY, ONTOLOGY_VERSION
from turngraph.schemas.ontology.errors import (
    OntologyConflictError,
    OntologyError,
    OntologyFileEmptyError,
    OntologyFileMissingError,
    OntologyFileUnreadableError,
    OntologyLoadError,
    OntologyNamespaceError,
    OntologyNoTriplesError,
    OntologyParseError,
)
from turngraph.schemas.ontology.json_schema import extraction_json_schema, response_format
from turngraph.schemas.ontology.model import (
    ENTITY_KEY_PROPERTIES,
    EntityType,
    Ontology,
    RelationType,
)
from turngraph.schemas.ontology.turtle import load_extension, ontology_from


def labels() -> tuple[str, ...]:
    """Neo4j node labels of our ontology, one per entity type."""
    return ONTOLOGY.labels()


def relationship_types() -> tuple[str, ...]:
    """Neo4j relationship types of our ontology, one per relation."""
    return ONTOLOGY.relationship_types()


def uniqueness_keys() -> dict[str, tuple[str, ...]]:
    """Per label, the properties a uniqueness constraint covers (scope, normalised name)."""
    return ONTOLOGY.uniqueness_keys()


__all__ = [
    "DIRECTIVES", "ENTITY_KEY_PROPERTIES", "ONTOLOGY", "ONTOLOGY_VERSION", "EntityType", "Ontology",
    "OntologyConflictError", "OntologyError", "OntologyFileEmptyError", "OntologyFileMissingError",
    "OntologyFileUnreadableError", "OntologyLoadError", "OntologyNamespaceError",
    "OntologyNoTriplesError", "OntologyParseError", "RelationType", "extraction_json_schema",
    "labels", "load_extension", "ontology_from", "relationship_types", "response_format",
    "uniqueness_keys",
]  # fmt: skip
