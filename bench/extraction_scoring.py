"""Scoring an extractor against the labelled turns in ``tests/data/extraction_turns*.jsonl``.

Shared by ``tests/unit/test_offline_extractor.py`` and ``python -m bench.extraction``: an
evaluation, not part of the product, so it lives with the benches.
Identifier types (files, commits …) match on the ontology's normalised name; statement
types (decisions and directives) match when their normalised word sets overlap by at
least :data:`TEXT_MATCH_JACCARD` or one contains the other, since where a clause ends is
a judgement call. Matching is one-to-one per turn and type.

The turns are split once, deterministically, into a *tune* half (rules may be fitted to
it) and a *score* half (the figures to quote): a turn is in the score half when the first
byte of the SHA-256 of its id is odd (:func:`split_of`). Neither depends on the content.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from turngraph.schemas.ontology import DIRECTIVES, ONTOLOGY, Ontology
from turngraph.schemas.turn_event import ClientInfo, Role, TurnEvent
from turngraph.workers.extraction.models import Extractor

DATA_DIR = Path(__file__).resolve().parents[1] / "tests" / "data"
DATASET_PATH = DATA_DIR / "extraction_turns.jsonl"
"""The first labelled developer-chat turns (one JSON object per line)."""
UNFITTED_PATH = DATA_DIR / "extraction_turns_unfitted.jsonl"
"""Turns written to look like chat the rules were not fitted to (labelled before changes)."""
DATASET_PATHS: tuple[Path, ...] = (DATASET_PATH, UNFITTED_PATH)
"""Every labelled developer-chat file: the first set, and turns written before the rules
were fitted."""
EVERYDAY_PATH = DATA_DIR / "everyday_turns.jsonl"
"""Ordinary conversation labelled with people, places, organisations and events (written
and labelled before ``workers/extraction/people.py`` existed)."""
EVERYDAY_TYPES: tuple[str, ...] = ("Person", "Place", "Organization", "Event")

TUNE, SCORE = "tune", "score"

STATEMENT_TYPES = DIRECTIVES
TEXT_TYPES = STATEMENT_TYPES | {"Task", "Incident"}
"""Types named by a clause, matched on word overlap rather than on the exact name."""
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
    def directives(self) -> TypeScore:
        return self.total(sorted(DIRECTIVES))

    @property
    def everyday(self) -> TypeScore:
        return self.total(EVERYDAY_TYPES)

    @property
    def overall(self) -> TypeScore:
        return self.total(self.per_type)


def split_of(turn_id: str) -> str:
    """:data:`SCORE` when the first byte of SHA-256(id) is odd, else :data:`TUNE`."""
    return SCORE if hashlib.sha256(turn_id.encode()).digest()[0] % 2 else TUNE


def load_dataset(
    paths: Path | Sequence[Path] = DATASET_PATHS, split: str | None = None
) -> list[LabelledTurn]:
    """The labelled turns of ``paths``; only those of one half when ``split`` is given."""
    turns = []
    for path in [paths] if isinstance(paths, Path) else paths:
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            row = json.loads(line)
            if split is not None and split_of(row["id"]) != split:
                continue
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
    if type_name not in TEXT_TYPES:
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
