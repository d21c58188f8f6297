"""The offline extractor: rules for what a developer chat turn reveals reliably.

Used when no LLM is configured. It finds URLs (credentials stripped), pull requests,
issues and repositories, files, branches, commits, plan ids, tools and services from
:mod:`workers.extraction.vocabulary`, symbols in `code spans`, ``@`` mentions, memory
directives and explicit decisions. A Decision carries a normalised ``subject``
attribute; decisions and directives get an APPLIES_TO fact to each entity their text
names. Every regex is compiled once at import; a typical turn takes well under 0.1 ms.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from schemas.ontology import ONTOLOGY, Ontology
from schemas.turn_event import TurnEvent
from workers.extraction import references as refs
from workers.extraction.directives import (
    Statement,
    decision_subject,
    find_decisions,
    find_directives,
)
from workers.extraction.models import EntityRef, ExtractedEntity, ExtractedFact, Extraction
from workers.extraction.vocabulary import find_terms, is_term

MAX_APPLIES_TO = 5
"""At most this many APPLIES_TO facts per decision or directive."""

MAX_ENTITIES_PER_TURN = 200
"""A pasted log can name thousands of paths; past this many, the rest are ignored."""


def _overlaps(spans: list[tuple[int, int]], start: int, end: int) -> bool:
    return any(s < end and start < e for s, e in spans)


@dataclass
class _Turn:
    """What has been found in one turn so far, deduplicated by (type, normalised name)."""

    ontology: Ontology
    entities: dict[tuple[str, str], ExtractedEntity] = field(default_factory=dict)
    positions: list[tuple[int, int, EntityRef]] = field(default_factory=list)
    masked: list[tuple[int, int]] = field(default_factory=list)
    facts: dict[tuple[str, str, str, str, str], ExtractedFact] = field(default_factory=dict)

    def add(
        self,
        start: int,
        end: int,
        type_name: str,
        name: str,
        attributes: dict[str, str] | None = None,
    ) -> EntityRef | None:
        name = name.strip()
        if not name or len(name) > 500:
            return None
        key = (type_name, self.ontology.normalize_name(type_name, name))
        entity = self.entities.get(key)
        if entity is None:
            if len(self.entities) >= MAX_ENTITIES_PER_TURN:
                return None
            # model_construct: names and types come from our own rules, already valid
            entity = ExtractedEntity.model_construct(
                type=type_name, name=name, aliases=(), summary="", attributes=attributes or {}
            )
            self.entities[key] = entity
        elif attributes:
            merged = {**attributes, **entity.attributes}
            if merged != entity.attributes:
                entity = entity.model_copy(update={"attributes": merged})
                self.entities[key] = entity
        ref = entity.ref
        self.positions.append((start, end, ref))
        return ref

    def add_hits(self, hits: list[refs.Hit], mask: bool = True, skip_masked: bool = True) -> None:
        earlier = list(self.masked)  # hits of one finder may share a span (issue + repo)
        for hit in hits:
            if skip_masked and _overlaps(earlier, hit.start, hit.end):
                continue
            if self.add(hit.start, hit.end, hit.type, hit.name) is not None and mask:
                self.masked.append((hit.start, hit.end))

    def link(self, relation: str, source: EntityRef, target: EntityRef) -> None:
        rel = self.ontology.relation_type(relation)
        if rel is None or source == target or not rel.accepts(source.type, target.type):
            return
        key = (
            rel.name,
            source.type,
            self.ontology.normalize_name(source.type, source.name),
            target.type,
            self.ontology.normalize_name(target.type, target.name),
        )
        self.facts.setdefault(key, ExtractedFact(relation=rel.name, source=source, target=target))

    def targets_within(self, start: int, end: int) -> list[EntityRef]:
        seen: dict[EntityRef, None] = {}
        for s, e, ref in self.positions:
            if start <= s and e <= end and ref.type not in _STATEMENT_TYPES:
                seen.setdefault(ref, None)
        return list(seen)


_STATEMENT_TYPES = frozenset(
    {"Decision", "Preference", "Terminology", "LessonLearned", "Procedure"}
)


class OfflineExtractor:
    """Rule-based :class:`~workers.extraction.models.Extractor`; no I/O, no state."""

    def __init__(self, ontology: Ontology = ONTOLOGY) -> None:
        self.ontology = ontology

    def extract(self, turns: Sequence[TurnEvent]) -> list[Extraction]:
        return [self.extract_text(turn.event_id, turn.content) for turn in turns]

    def extract_text(self, event_id: str, text: str) -> Extraction:
        """Entities and facts of one turn's text."""
        found = _Turn(self.ontology)
        fences = refs.fenced_spans(text)
        spans = refs.code_spans(text)
        found.add_hits(refs.find_urls(text), skip_masked=False)
        found.add_hits(refs.find_qualified_refs(text))
        found.add_hits(refs.find_numbered_refs(text))
        found.add_hits(refs.find_files(text))
        found.add_hits(refs.find_branches(text))
        found.add_hits(refs.find_commits(text))
        found.add_hits(refs.find_plans(text))
        code = [(s, e) for s, e, _ in spans] + fences
        terms = [
            refs.Hit(start, end, type_name, canonical)
            for start, end, canonical, type_name, code_only in find_terms(text)
            if not code_only or _overlaps(code, start, end)
        ]
        found.add_hits(terms)
        for start, end, inner in spans:
            if _overlaps(fences, start, end) or is_term(inner):
                continue
            name = refs.symbol_name(inner)
            if name and not _overlaps(found.masked, start + 1, end - 1):
                found.add(start, end, "Symbol", name)
        prose_symbols = [h for h in refs.find_prose_symbols(text) if not _overlaps(code, *h[:2])]
        found.add_hits(prose_symbols, mask=False, skip_masked=False)
        prose_mentions = [
            h for h in refs.find_mentions(text) if not _overlaps(code, h.start, h.end)
        ]
        found.add_hits(prose_mentions)
        self._statements(found, find_directives(text) + find_decisions(text), fences)
        return Extraction(
            event_id=event_id,
            entities=list(found.entities.values()),
            facts=list(found.facts.values()),
        )

    def _statements(
        self, found: _Turn, statements: list[Statement], fences: list[tuple[int, int]]
    ) -> None:
        taken: list[tuple[int, int]] = []
        for st in statements:
            if _overlaps(fences, st.start, st.end) or _overlaps(taken, st.start, st.end):
                continue  # code, or a "we decided" inside a "decision:" line already taken
            taken.append((st.start, st.end))
            targets = found.targets_within(st.start, st.end)
            attributes = dict(st.attributes)
            if st.type == "Decision":
                first = targets[0].name if targets else None
                attributes["subject"] = decision_subject(st.text, first)
            ref = found.add(st.start, st.end, st.type, st.text, attributes)
            if ref is None:
                continue
            for target in targets[:MAX_APPLIES_TO]:
                found.link("APPLIES_TO", ref, target)
