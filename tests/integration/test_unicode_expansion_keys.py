"""Issue 26, item 5: a turn we accept is stored. Keys derived from user text (entity uids,
names, topics) are bounded by construction, so Unicode that NFKC expands (U+FDFA becomes
18 characters, ligatures several, stacked combining marks stay) still fits, through the
real writer, on the embedded ArcadeDB and on a real Neo4j."""

from __future__ import annotations

import pytest

from tests.support.turns import turn
from turngraph.app import build_pipeline
from turngraph.clients import Clients
from turngraph.schemas.changes import MemoryRecord
from turngraph.workers.graph.keys import MAX_NAME_KEY_CHARS, entity_uid, normalise_name

pytestmark = pytest.mark.integration

MAX_ID_CHARS = next(
    m.max_length for m in MemoryRecord.model_fields["id"].metadata if hasattr(m, "max_length")
)
"""The change stream's bound on a memory id (issue 26: an entity uid of 1,080+ characters
failed it and the turn was dead-lettered)."""

EXPANDING = {
    "arabic_ligature_60": "\ufdfa" * 60,  # 1,080 characters after NFKC
    "arabic_ligature_200": "\ufdfa" * 200,
    "latin_ligatures": "\ufb03" * 300,  # "ffi" each
    "combining_marks": "a" + "\u0301" * 400,
    "mixed": ("\ufdfa\ufb03e\u0301") * 40,
}


@pytest.mark.both_engines  # the Neo4j tier's server: a real Neo4j 5.26, as `--graph neo4j` runs it
@pytest.mark.parametrize("name", sorted(EXPANDING))
def test_a_decision_on_expanding_unicode_is_stored(clients: Clients, name: str) -> None:
    text = EXPANDING[name]
    event = turn(f"decision: use {text} for src/b.py", 0, session=f"s-{name}")
    result = build_pipeline(clients).ingest([event])
    assert result.turns == 1
    records, _, _ = clients.graph.execute_query(
        "MATCH (e:Episode {event_id: $id})-[:MENTIONS]->(n) RETURN n.uid AS uid",
        id=event.event_id,
        database_=clients.graph_database,
    )
    uids = [r["uid"] for r in records]
    assert uids, "the turn's entities were written"
    assert all(len(uid) <= MAX_ID_CHARS for uid in uids)


@pytest.mark.parametrize("name", sorted(EXPANDING))
def test_name_keys_and_uids_are_bounded_and_distinct(name: str) -> None:
    text = EXPANDING[name]
    key = normalise_name("Decision", f"use {text}")
    assert len(key) <= MAX_NAME_KEY_CHARS
    other = normalise_name("Decision", f"use {text}x")
    assert key != other  # cut names that differ keep different keys
    assert normalise_name("Decision", f"use {text}") == key  # and the same name the same key
    uid = entity_uid("w-" + "x" * 64, "Decision", key)
    assert len(uid) <= MAX_ID_CHARS
