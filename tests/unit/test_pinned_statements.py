"""Neo4j's pinned forms of the statements that would choose between indexes: the portable
statement, each node's index named, the plan kept (workers/graph/statements.py)."""

from __future__ import annotations

import re

import pytest

from turngraph.workers.graph import statements as cypher


def test_a_pinned_statement_names_the_index_after_its_pattern_and_keeps_its_plan() -> None:
    statement = "UNWIND $rows AS r\nMATCH (d:Decision {uid: r.uid})\nRETURN d"

    got = cypher.pinned(statement, {"(d:Decision {uid: r.uid})": "d:Decision(uid)"})

    assert got == (
        cypher.KEEP_PLAN
        + "UNWIND $rows AS r\nMATCH (d:Decision {uid: r.uid}) USING INDEX d:Decision(uid)\nRETURN d"
    )


def test_a_pattern_the_statement_does_not_hold_is_an_error() -> None:
    with pytest.raises(ValueError, match="exactly once"):
        cypher.pinned("MATCH (d:Decision) RETURN d", {"(d:Decision {uid: r.uid})": "d:D(uid)"})


@pytest.mark.parametrize("portable", list(cypher.NEO4J_PINNED), ids=lambda s: s.split("\n")[3])
def test_each_pinned_form_is_its_portable_statement_with_hints(portable: str) -> None:
    pinned = cypher.NEO4J_PINNED[portable]
    assert pinned.startswith(cypher.KEEP_PLAN)
    hints = re.findall(r" USING INDEX \w+:\w+\(\w+\)", pinned)
    assert hints  # every node pattern that could be found another way names its index
    assert re.sub(r" USING INDEX \w+:\w+\(\w+\)", "", pinned[len(cypher.KEEP_PLAN) :]) == portable
