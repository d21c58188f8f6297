"""Validate raw extracted entities and facts against the ontology: repair or drop, counted.

Problems are reported by position and type names only (``facts[2]: MODIFIES does not
accept Person -> File``), never by entity names, so they can go into logs and errors
without carrying chat text. The LLM re-ask sends them back verbatim.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from turngraph.schemas.ontology import ONTOLOGY, Ontology
from turngraph.workers.extraction.models import (
    EntityRef,
    ExtractedEntity,
    ExtractedFact,
    Extraction,
)

__all__ = [
    "ATTRIBUTE_KEY", "MAX_ALIASES", "MAX_ATTRIBUTES", "MAX_NAME_CHARS", "MAX_SUMMARY_CHARS",
    "ValidationResult", "superseding", "union", "validate_raw", "with_entities",
]  # fmt: skip

MAX_NAME_CHARS = 500
MAX_SUMMARY_CHARS = 2_000
MAX_ALIASES = 10
MAX_ATTRIBUTES = 20
ATTRIBUTE_KEY = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
_SPACES = re.compile(r"\s+")


@dataclass
class ValidationResult:
    """The validated extraction plus what was wrong, for a re-ask or a log line."""

    extraction: Extraction
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.extraction.dropped == 0


def _clean(text: Any, limit: int) -> str:
    """Whitespace-collapsed text; anything but a string (a list, a number) counts as empty."""
    return _SPACES.sub(" ", text).strip()[:limit] if isinstance(text, str) else ""


def _attributes(raw: Any) -> dict[str, str]:
    """Attributes arrive as a mapping or as ``[{"key": k, "value": v}]`` (strict schemas)."""
    pairs: Iterable[tuple[Any, Any]]
    if isinstance(raw, Mapping):
        pairs = raw.items()
    elif isinstance(raw, list):
        pairs = [(p.get("key"), p.get("value")) for p in raw if isinstance(p, Mapping)]
    else:
        return {}
    out: dict[str, str] = {}
    for key, value in pairs:
        key_text = key.strip().lower() if isinstance(key, str) else ""
        if isinstance(value, bool | int | float):
            value = str(value)
        text = _clean(value, MAX_NAME_CHARS)
        if ATTRIBUTE_KEY.match(key_text) and text and len(out) < MAX_ATTRIBUTES:
            out[key_text] = text
    return out


class _Builder:
    def __init__(self, ontology: Ontology, event_id: str) -> None:
        self.ontology = ontology
        self.event_id = event_id
        self.entities: dict[tuple[str, str], ExtractedEntity] = {}
        self.facts: dict[tuple[str, str, str, str, str], ExtractedFact] = {}
        self.problems: list[str] = []
        self.dropped = 0
        self.repaired = 0

    def _drop(self, problem: str) -> None:
        self.dropped += 1
        self.problems.append(problem)

    def _key(self, type_name: str, name: str) -> tuple[str, str]:
        return type_name, self.ontology.normalize_name(type_name, name)

    def add_entity(self, raw: Any, where: str) -> None:
        if not isinstance(raw, Mapping):
            self._drop(f"{where}: not an object")
            return
        raw_type = _clean(raw.get("type"), 64)
        etype = self.ontology.entity_type(raw_type) if raw_type else None
        name = _clean(raw.get("name"), MAX_NAME_CHARS)
        if etype is None:
            self._drop(f"{where}: unknown entity type {raw_type[:64]!r}")
            return
        if not name:
            self._drop(f"{where}: empty name")
            return
        if etype.name != raw_type:
            self.repaired += 1
        aliases = raw.get("aliases") or ()
        entity = ExtractedEntity(
            type=etype.name,
            name=name,
            aliases=tuple(
                a for a in (_clean(x, MAX_NAME_CHARS) for x in list(aliases)[:MAX_ALIASES]) if a
            )
            if isinstance(aliases, list | tuple)
            else (),
            summary=_clean(raw.get("summary"), MAX_SUMMARY_CHARS),
            attributes=_attributes(raw.get("attributes")),
        )
        key = self._key(etype.name, name)
        previous = self.entities.get(key)
        if previous is not None:  # the same entity twice in one turn: merge, keep the first
            merged_attrs = {**entity.attributes, **previous.attributes}
            entity = previous.model_copy(
                update={
                    "aliases": tuple(dict.fromkeys((*previous.aliases, *entity.aliases))),
                    "summary": previous.summary or entity.summary,
                    "attributes": merged_attrs,
                }
            )
        self.entities[key] = entity

    def _ref(self, raw: Any) -> EntityRef | None:
        if not isinstance(raw, Mapping):
            return None
        raw_type = _clean(raw.get("type"), 64)
        etype = self.ontology.entity_type(raw_type) if raw_type else None
        name = _clean(raw.get("name"), MAX_NAME_CHARS)
        if etype is None or not name:
            return None
        known = self.entities.get(self._key(etype.name, name))
        return known.ref if known is not None else EntityRef(type=etype.name, name=name)

    def _ensure(self, ref: EntityRef) -> int:
        """Add an endpoint the answer forgot to list (rather than lose the fact): 1 if added."""
        key = self._key(ref.type, ref.name)
        if key in self.entities:
            return 0
        self.entities[key] = ExtractedEntity(type=ref.type, name=ref.name)
        return 1

    def add_fact(self, raw: Any, where: str) -> None:
        if not isinstance(raw, Mapping):
            self._drop(f"{where}: not an object")
            return
        raw_rel = _clean(raw.get("relation"), 64)
        rel = self.ontology.relation_type(raw_rel) if raw_rel else None
        if rel is None:
            self._drop(f"{where}: unknown relation {raw_rel[:64]!r}")
            return
        source, target = self._ref(raw.get("source")), self._ref(raw.get("target"))
        if source is None or target is None:
            self._drop(f"{where}: {rel.name} needs a source and a target of a known type")
            return
        repaired = rel.name != raw_rel
        if not rel.accepts(source.type, target.type):
            if rel.accepts(target.type, source.type):
                source, target = target, source  # stated backwards; the meaning is clear
                repaired = True
            else:
                self._drop(
                    f"{where}: {rel.name} does not accept {source.type} -> {target.type} "
                    f"(domain {sorted(rel.domain)}, range {sorted(rel.range)})"
                )
                return
        if source == target:
            self._drop(f"{where}: {rel.name} links an entity to itself")
            return
        if rel.symmetric and (source.type, source.name) > (target.type, target.name):
            source, target = target, source
        key = (rel.name, *self._key(source.type, source.name), *self._key(target.type, target.name))
        if key in self.facts:
            return
        self.repaired += repaired + self._ensure(source) + self._ensure(target)
        self.facts[key] = ExtractedFact(
            relation=rel.name,
            source=source,
            target=target,
            statement=_clean(raw.get("statement"), MAX_SUMMARY_CHARS),
        )

    def result(self) -> ValidationResult:
        return ValidationResult(
            Extraction(
                event_id=self.event_id,
                entities=list(self.entities.values()),
                facts=list(self.facts.values()),
                dropped=self.dropped,
                repaired=self.repaired,
            ),
            self.problems,
        )


def validate_raw(
    event_id: str, entities: Iterable[Any], facts: Iterable[Any], ontology: Ontology = ONTOLOGY
) -> ValidationResult:
    """Build a valid :class:`Extraction` from untrusted entity and fact dicts."""
    builder = _Builder(ontology, event_id)
    for i, raw in enumerate(entities):
        builder.add_entity(raw, f"entities[{i}]")
    for i, raw in enumerate(facts):
        builder.add_fact(raw, f"facts[{i}]")
    return builder.result()


def with_entities(
    extraction: Extraction, extra: Iterable[tuple[str, str]], ontology: Ontology = ONTOLOGY
) -> Extraction:
    """``extraction`` plus the (type, name) entities it does not have yet (e.g. references
    the producer attached to the turn); unknown types are ignored."""
    have = {(e.type, ontology.normalize_name(e.type, e.name)) for e in extraction.entities}
    added = []
    for type_name, name in extra:
        etype = ontology.entity_type(type_name)
        if etype is None or not name.strip():
            continue
        key = (etype.name, ontology.normalize_name(etype.name, name))
        if key in have:
            continue
        have.add(key)
        added.append(ExtractedEntity(type=etype.name, name=name.strip()[:MAX_NAME_CHARS]))
    if not added:
        return extraction
    return extraction.model_copy(update={"entities": [*extraction.entities, *added]})


def union(primary: Extraction, other: Extraction, ontology: Ontology = ONTOLOGY) -> Extraction:
    """``primary`` plus the entities and facts of ``other`` it does not have (the LLM's
    answer for a turn, with what the offline rules found in it: never less than either)."""
    have = {(e.type, ontology.normalize_name(e.type, e.name)) for e in primary.entities}
    entities = list(primary.entities)
    for entity in other.entities:
        key = (entity.type, ontology.normalize_name(entity.type, entity.name))
        if key not in have:
            have.add(key)
            entities.append(entity)

    def fact_key(f: ExtractedFact) -> tuple[str, str, str]:
        return (
            f.relation,
            ontology.normalize_name(f.source.type, f.source.name),
            ontology.normalize_name(f.target.type, f.target.name),
        )

    known = {fact_key(f) for f in primary.facts}
    facts = list(primary.facts)
    for fact in other.facts:
        if fact_key(fact) not in known:
            known.add(fact_key(fact))
            facts.append(fact)
    if len(entities) == len(primary.entities) and len(facts) == len(primary.facts):
        return primary
    return primary.model_copy(update={"entities": entities, "facts": facts})


def _same_name(name: str) -> str:
    return " ".join(name.casefold().split())


def superseding(llm: Extraction, offline: Extraction, ontology: Ontology = ONTOLOGY) -> Extraction:
    """The LLM's answer for a stored turn merged with what the offline rules stored for it:
    an offline entity the LLM names with another type is superseded (listed in
    ``superseded``, its facts left out); every other offline entity and fact is kept.
    The same inputs give the same result, so a repeated enrichment writes nothing new."""
    answered = {_same_name(e.name) for e in llm.entities}
    typed = {(e.type, _same_name(e.name)) for e in llm.entities}
    superseded = [
        e
        for e in offline.entities
        if _same_name(e.name) in answered and (e.type, _same_name(e.name)) not in typed
    ]
    if not superseded:
        return union(llm, offline, ontology)
    gone = {(e.type, _same_name(e.name)) for e in superseded}

    def kept_fact(fact: ExtractedFact) -> bool:
        ends = ((fact.source.type, fact.source.name), (fact.target.type, fact.target.name))
        return not any((kind, _same_name(name)) in gone for kind, name in ends)

    kept = offline.model_copy(
        update={
            "entities": [e for e in offline.entities if (e.type, _same_name(e.name)) not in gone],
            "facts": [f for f in offline.facts if kept_fact(f)],
        }
    )
    return union(llm, kept, ontology).model_copy(update={"superseded": superseded})
