"""The offline extractor: rules for what a developer chat turn reveals reliably.

Every turn is extracted by it (the LLM, when configured, enriches afterwards); the
finders live in the modules beside it. What they find: docs/graph-model.md ("Where
entities come from").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from turngraph.schemas.ontology import DIRECTIVES, ONTOLOGY, Ontology
from turngraph.schemas.turn_event import TurnEvent
from turngraph.workers.extraction import code as code_refs
from turngraph.workers.extraction import paths, people, tool_names, usage
from turngraph.workers.extraction import references as refs
from turngraph.workers.extraction.directives import (
    Statement,
    decision_subject,
    find_decisions,
    find_directives,
)
from turngraph.workers.extraction.models import Extraction
from turngraph.workers.extraction.prose import find_prose_statements
from turngraph.workers.extraction.vocabulary import find_terms, is_term, lookup

__all__ = [
    "MAX_APPLIES_TO", "MAX_ENTITIES_PER_TURN", "MAX_ENTITIES_PER_TYPE", "MAX_SCAN_CHARS",
    "SPEAKER_AS_PERSON", "OfflineExtractor", "StoreFirst",
]  # fmt: skip

MAX_APPLIES_TO = 5
"""At most this many APPLIES_TO facts per decision or directive."""

MAX_SCAN_CHARS = 50_000
"""Only the head of a longer turn (a pasted log) is scanned: ~1 µs per character."""

MAX_ENTITIES_PER_TURN = 200
"""A pasted log can name thousands of paths; past this many, the rest are ignored."""

SPEAKER_AS_PERSON = True
"""The turn's speaker (a name, not a role) is a Person the episode mentions."""

MAX_ENTITIES_PER_TYPE = 50
"""So that one type (hundreds of PR numbers) cannot crowd out the others."""


def _overlaps(spans: list[tuple[int, int]], start: int, end: int) -> bool:
    return any(s < end and start < e for s, e in spans)


@dataclass
class _Turn:
    """What has been found in one turn so far, deduplicated by (type, normalised name).

    Entities are kept as plain (type, name, attributes) until the end (pydantic objects
    only for what is returned). ``mask`` marks the characters already claimed by a
    reference (a URL, a path), a byte per character: checking a span is a C-level slice."""

    ontology: Ontology
    mask: bytearray
    entities: dict[tuple[str, str], tuple[str, str, dict[str, str]]] = field(default_factory=dict)
    positions: list[tuple[int, int, tuple[str, str]]] = field(default_factory=list)
    per_type: dict[str, int] = field(default_factory=dict)
    facts: dict[tuple[str, tuple[str, str], tuple[str, str]], None] = field(default_factory=dict)

    def masked(self, start: int, end: int) -> bool:
        return 1 in self.mask[start:end]

    def add(
        self,
        start: int,
        end: int,
        type_name: str,
        name: str,
        attributes: dict[str, str] | None = None,
    ) -> tuple[str, str] | None:
        """Record an entity; returns its key, or None when refused."""
        name = name.strip()
        if not name or len(name) > 500:
            return None
        key = (type_name, self.ontology.normalize_name(type_name, name))
        known = self.entities.get(key)
        if known is None:
            if len(self.entities) >= MAX_ENTITIES_PER_TURN:
                return None
            count = self.per_type.get(type_name, 0)
            if count >= MAX_ENTITIES_PER_TYPE:
                return None
            self.per_type[type_name] = count + 1
            self.entities[key] = (type_name, name, dict(attributes or {}))
        elif attributes:
            for attr, value in attributes.items():
                known[2].setdefault(attr, value)
        self.positions.append((start, end, key))
        return key

    def add_hits(self, hits: list[refs.Hit], mask: bool = True, skip_masked: bool = True) -> None:
        claimed = []  # marked after the loop: hits of one finder may share a span (issue + repo)
        for hit in hits:
            if skip_masked and self.masked(hit.start, hit.end):
                continue
            if self.add(hit.start, hit.end, hit.type, hit.name) is not None and mask:
                claimed.append((hit.start, hit.end))
        for start, end in claimed:
            self.mask[start:end] = b"\x01" * (end - start)

    def link(self, relation: str, source: tuple[str, str], target: tuple[str, str]) -> None:
        rel = self.ontology.relation_type(relation)
        if rel is None or source == target or not rel.accepts(source[0], target[0]):
            return
        self.facts[(rel.name, source, target)] = None

    def targets_within(self, start: int, end: int) -> list[tuple[str, str]]:
        within = (key for s, e, key in self.positions if start <= s and e <= end)
        return list(dict.fromkeys(key for key in within if key[0] not in _STATEMENT_TYPES))

    def extraction(self, event_id: str) -> Extraction:
        # One validation of plain data in pydantic-core beats ~100 model_construct calls.
        return Extraction.model_validate(
            {
                "event_id": event_id,
                "entities": [
                    {"type": type_name, "name": name, "attributes": attributes}
                    for type_name, name, attributes in self.entities.values()
                ],
                "facts": [
                    {
                        "relation": relation,
                        "source": {"type": source[0], "name": self.entities[source][1]},
                        "target": {"type": target[0], "name": self.entities[target][1]},
                    }
                    for relation, source, target in self.facts
                ],
            }
        )


_STATEMENT_TYPES = DIRECTIVES | {"Task", "Incident"}
_CODE_SPAN_NOT_SYMBOL = re.compile(
    r"\s+(?:table|tables|index|indexes|database|db|schema|bucket|collection|namespace|"
    r"deployment|pod|container|cluster|topic|queue|service|command|package|extension|"
    r"plugin|crate|library|image|role|user|column|directory|folder|repo|repository)\b"
)
"""A code span followed by one of these names a database object or a resource, not code."""
_RESOURCE_BEFORE = re.compile(
    r"\b(?:table|database|bucket|namespace|deployment|service|container|pod|queue|topic|"
    r"called|named)\s+$"
)


def _canonical(hits: list[refs.Hit]) -> list[refs.Hit]:
    """Names the vocabulary knows, spelled and typed as it has them (``fastapi``)."""
    out = []
    for hit in hits:
        known = lookup(hit.name)
        out.append(hit._replace(name=known[0], type=known[1]) if known else hit)
    return out


class OfflineExtractor:
    """Rule-based :class:`~workers.extraction.models.Extractor`; no I/O, no state."""

    def __init__(self, ontology: Ontology = ONTOLOGY) -> None:
        self.ontology = ontology

    def extract(self, turns: Sequence[TurnEvent]) -> list[Extraction]:
        return [
            self.extract_text(
                turn.event_id,
                turn.content,
                [(r.kind, r.value) for r in turn.references],
                speaker=turn.speaker,
                tool_turn=turn.role == "tool",
            )
            for turn in turns
        ]

    def extract_text(
        self,
        event_id: str,
        text: str,
        attached: Sequence[tuple[str, str]] = (),
        speaker: str = "",
        tool_turn: bool = False,
    ) -> Extraction:
        """Entities and facts of one turn's text (its first :data:`MAX_SCAN_CHARS`), plus
        the references the producer attached to it (``TurnEvent.references``) and, when
        :data:`SPEAKER_AS_PERSON`, the speaker's name as a Person (a tool turn's speaker, or
        a speaker named like a tool, is the call's name: a Tool, ``tool_names.py``)."""
        text = text[:MAX_SCAN_CHARS]
        found = _Turn(self.ontology, bytearray(len(text)))
        outside = len(text) + 1  # attached references sit in no statement's span
        for kind, value in attached:
            entity = refs.attached(kind, value)
            if entity is not None:
                found.add(outside, outside, *entity)
        if tool_names.is_tool_speaker(speaker, tool_turn):
            found.add(outside, outside, "Tool", speaker.strip())
        elif SPEAKER_AS_PERSON and people.is_person_name(speaker):
            found.add(outside, outside, "Person", speaker.strip())
        fences = refs.fenced_spans(text)
        spans = refs.code_spans(text)
        found.add_hits(refs.find_urls(text), skip_masked=False)
        found.add_hits(refs.find_qualified_refs(text))
        found.add_hits(refs.find_numbered_refs(text))
        found.add_hits(refs.find_tracker_keys(text))
        found.add_hits(paths.find_files(text))
        found.add_hits(paths.find_branches(text))
        found.add_hits(refs.find_commits(text))
        found.add_hits(refs.find_plans(text))
        code = bytearray(len(text))
        for start, end in [(s, e) for s, e, _ in spans] + fences:
            code[start:end] = b"\x01" * (end - start)
        fence_tags = refs.fence_tags(text)
        terms = [
            refs.Hit(start, end, type_name, canonical)
            for start, end, canonical, type_name, code_only in find_terms(text)
            if (not code_only or 1 in code[start:end]) and not _overlaps(fence_tags, start, end)
        ]
        found.add_hits(self._used_tools(text, fences))  # "tokio-util" before the term "tokio"
        # inside a file name already claimed: "vite.config.ts" is a File and names Vite
        found.add_hits(_canonical(usage.find_config_tools(text)), mask=False, skip_masked=False)
        found.add_hits(terms)
        found.add_hits(usage.find_sql_extensions(text))
        for start, end, inner in spans:
            if _overlaps(fences, start, end) or is_term(inner):
                continue
            name = code_refs.symbol_name(inner)
            if name and (
                _CODE_SPAN_NOT_SYMBOL.match(text, end)
                or _RESOURCE_BEFORE.search(text, max(0, start - 24), start)
            ):
                continue
            if name and not found.masked(start + 1, end - 1):
                found.add(start, end, "Symbol", name)
        found.add_hits(code_refs.find_trace_symbols(text), mask=False)
        for start, end in fences:
            found.add_hits(code_refs.find_code_definitions(text[start:end], start), mask=False)
        for start, end, inner in spans:
            if not _overlaps(fences, start, end) and code_refs.symbol_name(inner) is None:
                found.add_hits(code_refs.find_calls(inner, start + 1), mask=False)
        found.add_hits(code_refs.find_trace_source_calls(text), mask=False)
        prose = [
            h
            for h in code_refs.find_prose_calls(text) + code_refs.find_snake_identifiers(text)
            if 1 not in code[h.start : h.end]
        ]
        found.add_hits(prose, mask=False)
        found.add_hits(code_refs.find_prose_symbols(text), mask=False, skip_masked=False)
        prose_mentions = [h for h in refs.find_mentions(text) if 1 not in code[h.start : h.end]]
        found.add_hits(tool_names.retyped(prose_mentions))
        found.add_hits(tool_names.retyped(people.find_everyday_entities(text, code)))
        statements = find_directives(text) + find_decisions(text) + find_prose_statements(text)
        self._statements(found, sorted(statements, key=lambda st: st.start), fences)
        return found.extraction(event_id)

    @staticmethod
    def _used_tools(text: str, fences: list[tuple[int, int]]) -> list[refs.Hit]:
        """Tools and services named by how they are used, spelled as the vocabulary
        spells them when it knows them (``fastapi`` is FastAPI)."""
        hits = usage.find_installs(text) + usage.find_usage(text)
        for start, end in fences:
            hits += usage.find_imports(text[start:end], start)
        return _canonical(hits)

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
                first = found.entities[targets[0]][1] if targets else None
                attributes["subject"] = decision_subject(st.text, first)
            ref = found.add(st.start, st.end, st.type, st.text, attributes)
            if ref is None:
                continue
            relation = "HAPPENED_ON" if st.type == "Incident" else "APPLIES_TO"
            for target in targets[:MAX_APPLIES_TO]:
                found.link(relation, ref, target)


class StoreFirst:
    """The ingest extractor when an LLM is configured: the offline rules, every turn
    marked ``reextract`` so that it is stored at once and joins the enrichment backlog;
    the LLM runs after (``workers/maintenance/reextract.py``), never before a turn is
    stored."""

    def __init__(self, offline: OfflineExtractor) -> None:
        self.offline = offline

    def extract(self, turns: Sequence[TurnEvent]) -> list[Extraction]:
        return [x.model_copy(update={"reextract": True}) for x in self.offline.extract(turns)]
