"""People, places, organisations and events of ordinary conversation (offline rules)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

import turngraph.schemas.ontology as ontology
from bench.extraction_scoring import (
    EVERYDAY_PATH,
    EVERYDAY_TYPES,
    SCORE,
    load_dataset,
    score,
)
from tests.support.memory_graph import InMemoryGraphStore
from turngraph.schemas.turn_event import ClientInfo, Role, TurnEvent
from turngraph.workers.extraction.offline import OfflineExtractor
from turngraph.workers.extraction.people import is_person_name

EXTRACTOR = OfflineExtractor()


def found(text: str) -> set[tuple[str, str]]:
    return {
        (e.type, e.name)
        for e in EXTRACTOR.extract_text("e1", text).entities
        if e.type in EVERYDAY_TYPES
    }


def test_score_half_of_the_everyday_set() -> None:
    report = score(EXTRACTOR, load_dataset(EVERYDAY_PATH, split=SCORE))
    assert report.everyday.precision >= 0.85, report.extras
    assert report.everyday.recall >= 0.65, report.misses


def test_developer_chat_yields_no_people_or_places() -> None:
    report = score(EXTRACTOR, load_dataset())
    wrong = [extra for extra in report.extras if extra[1] in EVERYDAY_TYPES]
    assert len(wrong) <= 2, wrong  # acronyms, sentence-start words: "Rollout is at 50%"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("my sister Hannah is visiting", {("Person", "Hannah")}),
        ("I saw Dr. Lindqvist this morning", {("Person", "Lindqvist")}),
        ("Mateo said the hike was long", {("Person", "Mateo")}),
        ("we moved to Valparaíso last year", {("Place", "Valparaíso")}),
        ("she got a job at Initech in March", {("Organization", "Initech")}),
        ("dinner for Thanksgiving at Lake Placid", {("Event", "Thanksgiving"),
                                                   ("Place", "Lake Placid")}),
        ("watching the Stanley Cup with Priyanka and Tom",
         {("Event", "Stanley Cup"), ("Person", "Priyanka"), ("Person", "Tom")}),
        ("a little bakery called Crumble", {("Place", "Crumble")}),
        ("see you in April, on Monday", set()),
        ("Rollout is at 50% and UTC is fine", set()),
        ("The Spanish class starts at noon", set()),
        ("Congrats on the new job, Ines!", {("Person", "Ines")}),
    ],
)  # fmt: skip
def test_rules(text: str, expected: set[tuple[str, str]]) -> None:
    assert found(text) == expected


def turn(speaker: str, content: str) -> TurnEvent:
    return TurnEvent(
        event_id="e1",
        session_id="s1",
        workspace="w1",
        user="u1",
        turn_index=0,
        role=Role.USER,
        speaker=speaker,
        content=content,
        occurred_at=datetime(2026, 11, 24, tzinfo=UTC),
        client=ClientInfo(name="test"),
    )


def test_speaker_is_a_person_and_a_role_is_not() -> None:
    assert ("Person", "Emma") in {
        (e.type, e.name) for e in EXTRACTOR.extract([turn("Emma", "hi there")])[0].entities
    }
    assert EXTRACTOR.extract([turn("assistant", "hi there")])[0].entities == []
    assert is_person_name("jun park") and not is_person_name("user")
    assert not is_person_name("") and not is_person_name("r2d2-bot 7")


def test_people_stay_in_the_graph_but_out_of_recalls_entity_signal() -> None:
    store = InMemoryGraphStore(
        entity_labels=ontology.labels(), relation_types=ontology.relationship_types()
    )
    event = turn("Emma", "we moved to Lisbon with Marco")
    store.write([(event, EXTRACTOR.extract([event])[0])])
    [memory] = [m for m in store.recallable_memories() if m.id == "e1"]
    assert memory.entities == ("Lisbon",)
    people = {n.props.get("name") for n in store.nodes.values() if n.props.get("type") == "Person"}
    assert people == {"Emma", "Marco"}
