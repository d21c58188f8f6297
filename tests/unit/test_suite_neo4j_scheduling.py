"""The suite's scheduling of the Neo4j tier's tests: one xdist work unit, told by test id."""

from __future__ import annotations

import pytest

from tests.support.neo4j_tier import on_the_neo4j_tier


@pytest.mark.parametrize(
    "nodeid",
    [
        "tests/integration/test_doctor.py::test_graph_down[neo4j]",
        "tests/integration/test_unicode_expansion_keys.py::test_x[neo4j-mixed]",
        "tests/integration/test_export.py::test_y[neo4j-session-s1]",
        "tests/integration/test_saved_queries.py::test_z[neo4j-Recent decisions]",
    ],
    ids=["alone", "first-of-two", "first-of-three", "with-a-space"],
)
def test_a_neo4j_parameter_puts_the_test_on_the_tier(nodeid: str) -> None:
    assert on_the_neo4j_tier(nodeid)


@pytest.mark.parametrize(
    "nodeid",
    [
        "tests/integration/test_doctor.py::test_graph_down[arcadedb]",
        "tests/integration/test_first_run_neo4j.py::test_up_on_neo4j_in_a_folder",
        "tests/unit/test_settings.py::test_engine[neo4jx]",
        "tests/unit/test_settings.py::test_uri[bolt-neo4j+s]",
    ],
    ids=["arcadedb", "no-parameter", "longer-word", "inside-a-word"],
)
def test_other_tests_stay_with_their_files(nodeid: str) -> None:
    assert not on_the_neo4j_tier(nodeid)
