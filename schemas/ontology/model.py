"""The shape of an ontology: entity types, relation types, and the lookups built on them.

An :class:`Ontology` is immutable. Everything downstream (the extraction JSON Schema and
prompt, validation, Neo4j labels and relationship types, uniqueness constraints, the
Turtle export) is generated from one instance, normally :data:`schemas.ontology.ONTOLOGY`.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass, field
from functools import cached_property

__all__ = [
    "COMMIT_KEY_CHARS", "ENTITY_KEY_PROPERTIES", "HASHED_TAIL_CHARS", "MAX_NAME_KEY_CHARS",
    "RELATION_NAME_PATTERN", "TYPE_NAME_PATTERN", "EntityType", "Ontology", "RelationType",
    "bounded_key",
]  # fmt: skip

TYPE_NAME_PATTERN = re.compile(r"^[A-Z][A-Za-z0-9]{0,63}$")
"""Entity type names are PascalCase: they become Neo4j labels and OWL class names."""

RELATION_NAME_PATTERN = re.compile(r"^[A-Z][A-Z0-9_]{0,63}$")
"""Relation names are UPPER_SNAKE: they become Neo4j relationship types."""

ENTITY_KEY_PROPERTIES: tuple[str, ...] = ("uid",)
"""Node properties a uniqueness constraint covers, per label: ``uid`` is
``scope key|type|normalised name`` (``workers.graph.keys.entity_uid``), so one property
carries the scope, the type and :meth:`Ontology.normalize_name`."""

MAX_NAME_KEY_CHARS = 256
"""A resolution key is at most this long: longer ones keep their first characters and end
in ``~`` plus 16 hex digits of their SHA-256. Bounded by construction, whatever NFKC makes
of a name (U+FDFA becomes 18 characters: 60 of them made an entity uid of 1,080+ and a
valid turn was dead-lettered, issue 26); two long names that differ keep different keys."""

HASHED_TAIL_CHARS = 17
"""``~`` and 16 hex digits."""

COMMIT_KEY_CHARS = 12
"""Commits resolve on their first 12 hex digits (as ``workers.graph.keys`` does)."""

_TRAILING_CHARS = " .,;:!?"


def bounded_key(key: str) -> str:
    """``key`` itself up to :data:`MAX_NAME_KEY_CHARS`, else its head and a hash of it all."""
    if len(key) <= MAX_NAME_KEY_CHARS:
        return key
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{key[: MAX_NAME_KEY_CHARS - HASHED_TAIL_CHARS]}~{digest}"


def _lookup_key(name: str) -> str:
    return re.sub(r"[\s_\-]+", "", name).casefold()


@dataclass(frozen=True)
class EntityType:
    """A node label. ``aliases`` are other names an extractor may use for the type."""

    name: str
    description: str
    aliases: tuple[str, ...] = ()
    examples: tuple[str, ...] = ()
    case_sensitive: bool = False
    """Names of this type keep their case in the key (paths, branches, symbols)."""

    def __post_init__(self) -> None:
        if not TYPE_NAME_PATTERN.match(self.name):
            raise ValueError(f"entity type name {self.name!r} is not PascalCase")


@dataclass(frozen=True)
class RelationType:
    """A relationship type; ``domain`` and ``range`` are sets of entity type names."""

    name: str
    description: str
    domain: frozenset[str]
    range: frozenset[str]
    aliases: tuple[str, ...] = ()
    symmetric: bool = False

    def __post_init__(self) -> None:
        if not RELATION_NAME_PATTERN.match(self.name):
            raise ValueError(f"relation name {self.name!r} is not UPPER_SNAKE")

    def accepts(self, source_type: str, target_type: str) -> bool:
        return source_type in self.domain and target_type in self.range


@dataclass(frozen=True)
class Ontology:
    """A versioned set of entity and relation types with lookups by name and alias."""

    version: int
    entity_types: tuple[EntityType, ...]
    relation_types: tuple[RelationType, ...]
    namespace: str = "https://turngraph.dev/ontology#"
    extends: tuple[str, ...] = field(default=())
    """Sources this ontology was extended from (file names of loaded Turtle files)."""

    def __post_init__(self) -> None:
        names = [t.name for t in self.entity_types]
        if len(set(names)) != len(names):
            raise ValueError("duplicate entity type names")
        rel_names = [r.name for r in self.relation_types]
        if len(set(rel_names)) != len(rel_names):
            raise ValueError("duplicate relation names")
        known = set(names)
        for rel in self.relation_types:
            unknown = (rel.domain | rel.range) - known
            if unknown:
                raise ValueError(f"relation {rel.name} names unknown types {sorted(unknown)}")

    # -- lookups -------------------------------------------------------------------

    @cached_property
    def _entity_index(self) -> dict[str, EntityType]:
        index: dict[str, EntityType] = {}
        for etype in self.entity_types:
            for alias in etype.aliases:
                index.setdefault(_lookup_key(alias), etype)
        for etype in self.entity_types:  # a type's own name always wins over an alias
            index[_lookup_key(etype.name)] = etype
        return index

    @cached_property
    def _relation_index(self) -> dict[str, RelationType]:
        index: dict[str, RelationType] = {}
        for rel in self.relation_types:
            for alias in rel.aliases:
                index.setdefault(_lookup_key(alias), rel)
        for rel in self.relation_types:
            index[_lookup_key(rel.name)] = rel
        return index

    @cached_property
    def _entity_by_name(self) -> dict[str, EntityType]:
        return {t.name: t for t in self.entity_types}

    def entity_type(self, name: str) -> EntityType | None:
        """The entity type called ``name`` or one of its aliases (case-insensitive)."""
        return self._entity_by_name.get(name) or self._entity_index.get(_lookup_key(name))

    def relation_type(self, name: str) -> RelationType | None:
        """The relation called ``name`` or one of its aliases (case-insensitive)."""
        return self._relation_index.get(_lookup_key(name))

    def entity_type_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.entity_types)

    def relation_names(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.relation_types)

    # -- what the graph owner uses ----------------------------------------------------

    def labels(self) -> tuple[str, ...]:
        """Neo4j node labels, one per entity type (the type name itself)."""
        return self.entity_type_names()

    def relationship_types(self) -> tuple[str, ...]:
        """Neo4j relationship types, one per relation (the relation name itself)."""
        return self.relation_names()

    def uniqueness_keys(self) -> dict[str, tuple[str, ...]]:
        """Per label, the node properties a uniqueness constraint must cover."""
        return dict.fromkeys(self.labels(), ENTITY_KEY_PROPERTIES)

    def normalize_name(self, type_name: str, name: str) -> str:
        """The resolution key of an entity name: NFKC, whitespace collapsed, quotes and
        trailing punctuation stripped, casefolded unless the type is case-sensitive
        (paths, branches, symbols, URLs); commits by their first 12 hex digits."""
        etype = self.entity_type(type_name)
        if not name.isascii():
            name = unicodedata.normalize("NFKC", name)
        key = " ".join(name.split()).strip("`'\"").rstrip(_TRAILING_CHARS)
        if etype is not None and etype.name == "File":
            key = key.removeprefix("./")
        if etype is not None and etype.name == "Commit":
            return key.lower()[:COMMIT_KEY_CHARS]
        if etype is None or not etype.case_sensitive:
            key = key.casefold()
        return bounded_key(key)
