"""What an extractor returns for one turn; the graph writer consumes exactly this."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field

from turngraph.schemas.turn_event import TurnEvent

__all__ = ["EntityRef", "ExtractedEntity", "ExtractedFact", "Extraction", "Extractor"]


class EntityRef(BaseModel):
    """Names an entity by ontology type and name (resolution normalises the name)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: str = Field(min_length=1, max_length=64)
    name: str = Field(min_length=1, max_length=500)


class ExtractedEntity(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    type: str = Field(min_length=1, max_length=64)
    name: str = Field(min_length=1, max_length=500)
    aliases: tuple[str, ...] = ()
    summary: str = Field(default="", max_length=2_000)
    # Free string attributes, e.g. a Decision's ``subject`` or a directive's ``scope``.
    attributes: dict[str, str] = Field(default_factory=dict)

    @property
    def ref(self) -> EntityRef:
        return EntityRef(type=self.type, name=self.name)


class ExtractedFact(BaseModel):
    """A typed relation between two entities, stated by the turn."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    relation: str = Field(min_length=1, max_length=64)
    source: EntityRef
    target: EntityRef
    statement: str = Field(default="", max_length=2_000)


class Extraction(BaseModel):
    """Everything extracted from one turn.

    ``dropped`` counts entities and facts that failed validation against the ontology and
    were left out; ``repaired`` counts those kept after a fix (a type alias mapped to its
    type, a fact turned round to fit its relation's domain and range, a missing endpoint
    entity added).
    """

    model_config = ConfigDict(extra="forbid")

    event_id: str
    entities: list[ExtractedEntity] = Field(default_factory=list)
    facts: list[ExtractedFact] = Field(default_factory=list)
    dropped: int = 0
    repaired: int = 0
    reextract: bool = False
    """Extracted by the offline rules where the LLM did not answer (or, with an LLM
    configured, at ingest): the pipeline puts the turn on the enrichment backlog (the
    episode and these entities are stored meanwhile)."""
    superseded: list[ExtractedEntity] = Field(default_factory=list)
    """Entities stored for this turn earlier (the offline rules') that this extraction
    replaces: the writer removes the turn's mentions of them (enrichment, where the LLM
    names the same thing with another type)."""


class Extractor(Protocol):
    """Offline rules or an LLM; one Extraction per turn, in order."""

    def extract(self, turns: Sequence[TurnEvent]) -> list[Extraction]: ...
