"""Do the ingested markers in Redis and the turns in the graph agree? A sample of markers
is looked up in the graph, and the graph's identity compared with the one the markers
were recorded against (``workers/ingest/markers.py``)."""

from __future__ import annotations

import functools

import neo4j

from turngraph.doctor.checks import Check, fail, ok, warn
from turngraph.doctor.redis_checks import connect
from turngraph.schemas.errors import TurngraphError
from turngraph.settings import Settings
from turngraph.workers.graph.identity import read_graph_identity, stored_event_ids
from turngraph.workers.ingest.markers import DOCTOR_SAMPLE, check_markers, recorded_identity

__all__ = ["MARKERS_FIX", "check_markers_agree"]

TIMEOUT_S = 5.0

MARKERS_FIX = (
    "restart the ingest workers (`turngraph up`, or `turngraph worker ingest`): they drop "
    "the markers of turns this graph lacks, and those turns are stored again when published "
    "again; if you switched graph engines, the memory is in the other one "
    "(docs/operations.md, 'Changing the graph')"
)


def check_markers_agree(settings: Settings) -> Check:
    """``graph.markers``: up to :data:`DOCTOR_SAMPLE` markers looked up in the graph."""
    assert settings.redis_url and settings.graph_uri
    conn = connect(settings.redis_url)
    driver = neo4j.GraphDatabase.driver(
        str(settings.graph_uri),
        auth=(settings.graph_user, settings.graph_password.get_secret_value()),
        connection_timeout=TIMEOUT_S,
        connection_acquisition_timeout=TIMEOUT_S,
        max_transaction_retry_time=0,
        notifications_min_severity="OFF",
    )
    try:
        lookup = functools.partial(stored_event_ids, driver, settings.graph_database)
        sample = check_markers(conn, lookup, limit=DOCTOR_SAMPLE)
        recorded = recorded_identity(conn)
        current = read_graph_identity(driver, settings.graph_database)
    except TurngraphError as exc:
        return warn("graph.markers", f"not checked: {exc}", "run `turngraph doctor` again")
    finally:
        driver.close()
        conn.close()
    if sample.missing:
        was = recorded.describe() if recorded else "a graph"
        now = current.describe() if current else "a graph without identity (new or wiped)"
        return fail(
            "graph.markers",
            f"{sample.missing} of {sample.checked} turns the ingested markers call stored are "
            f"not in the graph (markers of {was}, graph now {now})",
            MARKERS_FIX,
        )
    if recorded is not None and (current is None or current.graph_id != recorded.graph_id):
        now = current.describe() if current else "a graph without identity (new or wiped)"
        return warn(
            "graph.markers",
            f"markers recorded against {recorded.describe()}, graph now {now}",
            MARKERS_FIX,
        )
    if not sample.checked:
        return ok("graph.markers", "no ingested markers yet")
    return ok("graph.markers", f"{sample.checked} ingested markers checked: all in the graph")
