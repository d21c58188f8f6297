"""Scoring an extractor against the labelled turns in ``tests/data/extraction_turns.jsonl``.

Shared by ``tests/unit/test_offline_extractor.py`` and ``python -m bench.extraction``.
Identifier types (files, commits …) match on the ontology's normalised name; statement
types (decisions and directives) match when their normalised word sets overlap by at
least :data:`TEXT_MATCH_JACCARD` or one contains the other, since where a clause ends is
a judgement call. Matching is one-to-one per turn and type.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from schemas.ontology import DIRECTIVES, ONTOLOGY, Ontology
from schemas.turn_event import ClientInfo, Role, TurnEvent
from workers.extraction.models import Extractor

DATASET_PATH = Path(__file__).resolve().parents[2] / "tests" / "data" / "extraction_turns.jsonl"
"""The labelled developer-chat turns (one JSON object per line)."""

STATEMENT_TYPES = DIRECTIVES
REFERENCE_TYPES: tuple[str, ...] = (
    "File", "Branch", "Commit", "PullRequest", "Issue", "Plan",
    "Decision", "Preference", "Terminology", "LessonLearned", "Procedure",
)  # fmt: skip
"""The types the acceptance thresholds apply to (what text reveals reliably)."""

TEXT_MATCH_JACCARD = 0.6
_WORD = re.compile(r"[\w./#+-]+")


@dataclass(frozen=True)
class LabelledTurn:
    id: str
    role: str
    content: str
    expected: tuple[tuple[str, str], ...]


@dataclass
class TypeScore:
    tp: int = 0
    fp: int = 0
    fn: int = 0

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0

    def add(self, other: TypeScore) -> None:
        self.tp += other.tp
        self.fp += other.fp
        self.fn += other.fn


@dataclass
class Report:
    per_type: dict[str, TypeScore] = field(default_factory=dict)
    misses: list[tuple[str, str, str]] = field(default_factory=list)
    """(turn id, type, name) expected but not found."""
    extras: list[tuple[str, str, str]] = field(default_factory=list)
    """(turn id, type, name) found but not expected."""

    def total(self, types: Iterable[str]) -> TypeScore:
        out = TypeScore()
        for type_name in types:
            out.add(self.per_type.get(type_name, TypeScore()))
        return out

    @property
    def reference(self) -> TypeScore:
        return self.total(REFERENCE_TYPES)

    @property
    def overall(self) -> TypeScore:
        return self.total(self.per_type)


def load_dataset(path: Path = DATASET_PATH) -> list[LabelledTurn]:
    turns = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        expected = tuple((e["type"], e["name"]) for e in row["expected"])
        turns.append(LabelledTurn(row["id"], row["role"], row["content"], expected))
    return turns


def as_events(turns: Sequence[LabelledTurn]) -> list[TurnEvent]:
    """The labelled turns as one session's TurnEvents (event_id = the turn's id)."""
    return [
        TurnEvent(
            event_id=t.id,
            session_id="scoring",
            workspace="w",
            user="u",
            turn_index=i,
            role=Role(t.role),
            content=t.content,
            occurred_at=datetime(2026, 11, 21, tzinfo=UTC),
            client=ClientInfo(name="scoring"),
        )
        for i, t in enumerate(turns)
    ]


def _words(text: str) -> frozenset[str]:
    return frozenset(_WORD.findall(text.casefold()))


def _same(type_name: str, a: str, b: str, ontology: Ontology) -> bool:
    if ontology.normalize_name(type_name, a) == ontology.normalize_name(type_name, b):
        return True
    if type_name not in STATEMENT_TYPES:
        return False
    wa, wb = _words(a), _words(b)
    if not wa or not wb:
        return False
    return len(wa & wb) / len(wa | wb) >= TEXT_MATCH_JACCARD or wa <= wb or wb <= wa


def score(
    extractor: Extractor, turns: Sequence[LabelledTurn], ontology: Ontology = ONTOLOGY
) -> Report:
    """Per-type true and false positives and negatives of ``extractor`` on ``turns``."""
    report = Report()
    extractions = extractor.extract(as_events(turns))
    for turn, extraction in zip(turns, extractions, strict=True):
        found = [(e.type, e.name) for e in extraction.entities]
        types = {t for t, _ in found} | {t for t, _ in turn.expected}
        for type_name in types:
            predicted = [n for t, n in found if t == type_name]
            remaining = [n for t, n in turn.expected if t == type_name]
            type_score = report.per_type.setdefault(type_name, TypeScore())
            for name in predicted:
                match = next((r for r in remaining if _same(type_name, name, r, ontology)), None)
                if match is None:
                    type_score.fp += 1
                    report.extras.append((turn.id, type_name, name))
                else:
                    type_score.tp += 1
                    remaining.remove(match)
            type_score.fn += len(remaining)
            report.misses.extend((turn.id, type_name, name) for name in remaining)
    return report
