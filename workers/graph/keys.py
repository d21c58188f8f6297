"""Entity identity: normalised names and the scope-qualified unique key."""

from __future__ import annotations

import re

from turngraph.schemas.ontology import ONTOLOGY
from turngraph.schemas.ontology.model import MAX_NAME_KEY_CHARS

__all__ = [
    "MAX_NAME_KEY_CHARS", "checked_label", "checked_rel_type", "entity_uid", "normalise_name",
]  # fmt: skip

_LABEL = re.compile(r"^[A-Z][A-Za-z0-9]{0,63}$")
_REL_TYPE = re.compile(r"^[A-Z][A-Z0-9_]{0,63}$")


def normalise_name(entity_type: str, name: str) -> str:
    """The key an entity is resolved on within its scope: the ontology's own rule (NFKC,
    spaces folded, casefolded unless the type is case-sensitive, commits by prefix), at
    most ``MAX_NAME_KEY_CHARS`` long (a longer one ends in a hash of itself)."""
    return ONTOLOGY.normalize_name(entity_type, name)


def entity_uid(scope_key: str, entity_type: str, name_key: str) -> str:
    """Unique across the whole graph: scope, type and normalised name; bounded, as its parts
    are (a scope key at most 128 characters plus a tenant prefix, a label at most 64)."""
    return f"{scope_key}|{entity_type}|{name_key}"


def checked_label(label: str) -> str:
    """Labels are interpolated into Cypher (no parameter form on both engines): allow-list."""
    if not _LABEL.match(label):
        raise ValueError("invalid node label")
    return label


def checked_rel_type(rel_type: str) -> str:
    if not _REL_TYPE.match(rel_type):
        raise ValueError("invalid relationship type")
    return rel_type
