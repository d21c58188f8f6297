"""No two inboxes share an admission list: a tenant's name cannot make another's key."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from turngraph.schemas.defaults import INGEST_QUEUE, MAINTENANCE_QUEUE
from turngraph.schemas.keys import admission_lists
from turngraph.schemas.tenants import TENANT_PATTERN
from turngraph.workers.ingest.admission import operator_source, tenant_source
from turngraph.workers.maintenance.asks import ASKS_PENDING


def _lists_of(pending: str) -> set[str]:
    return set(admission_lists(pending))


def test_a_tenant_named_distill_keeps_its_turns_apart_from_the_asks() -> None:
    assert not _lists_of(tenant_source("distill").pending) & _lists_of(ASKS_PENDING)


@given(st.from_regex(TENANT_PATTERN, fullmatch=True))
def test_no_tenant_name_reaches_the_asks_or_the_operators_lists(tenant: str) -> None:
    theirs = _lists_of(tenant_source(tenant).pending)
    assert not theirs & _lists_of(ASKS_PENDING)
    for queue in (INGEST_QUEUE, MAINTENANCE_QUEUE):
        assert not theirs & _lists_of(operator_source(queue).pending)
