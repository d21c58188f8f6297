"""End to end on real Redis ACL users and the real graph: tenant A cannot publish into,
recall from or forget tenant B; a foreign reply key or a foreign tenant's scope is
refused and touches no key."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import redis

from tests.support.turns import turn
from turngraph.app import build_admission, build_ingest_worker, build_recall_worker
from turngraph.clients import Clients
from turngraph.credentials import issue
from turngraph.forgetting import forget
from turngraph.producers.publisher import Publisher
from turngraph.producers.recall_client import RecallClient
from turngraph.schemas.errors import ConfigurationError, ErrorCode
from turngraph.schemas.keys import RECALL_REPLICA_PREFIX
from turngraph.schemas.scopes import Scope
from turngraph.schemas.tenants import recall_reply_prefix, recall_requests_key
from turngraph.workers.recall.worker import RecallWorker

pytestmark = pytest.mark.integration

SCOPES = {"session": "s_shared", "workspace": "w_shared", "user": "u_shared"}
"""Both tenants use the same scope keys: only the server's tenancy keeps them apart."""


@dataclass
class Tenant:
    name: str
    conn: redis.Redis

    def publisher(self) -> Publisher:
        return Publisher(redis=self.conn, tenant=self.name, max_queue_length=100)

    def recaller(self) -> RecallClient:
        return RecallClient.for_tenant(self.conn, self.name, deadline_ms=5_000)

    def recall(self, query: str, **scopes: str) -> list[str]:
        response = self.recaller().recall(query, **(scopes or self.own_scopes()))
        assert response.success, response.user_message
        return [result.text for result in response.results]

    @staticmethod
    def own_scopes() -> dict[str, str]:
        return {
            "session_id": SCOPES["session"],
            "workspace": SCOPES["workspace"],
            "user": SCOPES["user"],
        }


def _tenant(clients: Clients, name: str) -> Tenant:
    assert clients.settings.redis_url
    url = issue(clients.redis, name).redis_url(clients.settings.redis_url)
    return Tenant(name, redis.Redis.from_url(url, socket_timeout=10))


def _publish(tenant: Tenant, *contents: str) -> None:
    publisher = tenant.publisher()
    for index, content in enumerate(contents):
        publisher.publish(
            turn(
                content,
                index,
                session=SCOPES["session"],
                workspace=SCOPES["workspace"],
                user=SCOPES["user"],
            )
        )
    assert publisher.flush(timeout_s=10)
    publisher.close()


@pytest.fixture
def world(clients: Clients) -> Iterator[tuple[Tenant, Tenant, RecallWorker]]:
    alpha, beta = _tenant(clients, "alpha"), _tenant(clients, "beta")
    _publish(alpha, "alpha decided to deploy the kestrel service on fridays")
    _publish(beta, "beta decided to deploy the kestrel service on mondays")
    admission = build_admission(clients)
    while admission.admit_all():
        pass
    build_ingest_worker(clients).work(burst=True, with_scheduler=False)
    recall = build_recall_worker(clients)
    recall.bootstrap()
    serving = threading.Thread(target=recall.run, daemon=True)
    serving.start()
    yield alpha, beta, recall
    recall.stop()
    serving.join(timeout=10)
    alpha.conn.close()
    beta.conn.close()


def test_each_tenant_recalls_only_its_own_turns(
    world: tuple[Tenant, Tenant, RecallWorker],
) -> None:
    alpha, beta, _ = world
    assert any("fridays" in text for text in alpha.recall("kestrel deploy"))
    assert not any("mondays" in text for text in alpha.recall("kestrel deploy"))
    assert any("mondays" in text for text in beta.recall("kestrel deploy"))
    assert not any("fridays" in text for text in beta.recall("kestrel deploy"))


def test_results_carry_event_ids_as_the_tenant_named_them(
    world: tuple[Tenant, Tenant, RecallWorker],
) -> None:
    alpha, _, _ = world
    response = alpha.recaller().recall("kestrel deploy", **Tenant.own_scopes())
    ids = {event_id for result in response.results for event_id in result.source_event_ids}
    expected = turn("x", 0, session=SCOPES["session"]).event_id
    assert expected in ids and not any(event_id.startswith("t-") for event_id in ids)


def _snapshot(conn: redis.Redis) -> dict[str, tuple[bytes, int]]:
    """Every key with its type (and length, for lists), but the replica's own heartbeat,
    which it rewrites every second whatever it is asked."""
    out = {}
    for key in conn.scan_iter(count=1_000):
        if key.decode().startswith(RECALL_REPLICA_PREFIX):
            continue
        kind = conn.type(key)
        out[key.decode()] = (kind, conn.llen(key) if kind == b"list" else 0)
    return out


def _settle(recall: RecallWorker, requests: str, conn: redis.Redis) -> None:
    deadline = time.monotonic() + 5
    while conn.llen(requests) and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.2)  # the worker has popped it; let it finish handling


@pytest.mark.parametrize(
    "reply_to",
    [
        recall_reply_prefix("beta") + "r1",  # another tenant's reply key
        "turngraph:recall:reply:r1",  # the operator's reply keys
        recall_requests_key("alpha"),  # its own request list
        "rq:queue:turngraph-ingest",
    ],
)
def test_a_foreign_reply_to_is_refused_and_touches_no_key(
    clients: Clients, world: tuple[Tenant, Tenant, RecallWorker], reply_to: str
) -> None:
    alpha, _, recall = world
    before = _snapshot(clients.redis)
    request = {"request_id": "r1", "reply_to": reply_to, "query": "kestrel deploy"}
    alpha.conn.rpush(recall_requests_key("alpha"), json.dumps(request))
    _settle(recall, recall_requests_key("alpha"), clients.redis)
    assert recall.counters.refused_reply_to == 1 and recall.counters.answered == 0
    assert _snapshot(clients.redis) == before


@pytest.mark.parametrize("field", ["workspace", "session_id", "user"])
def test_a_foreign_tenants_scope_is_refused_and_touches_no_key(
    clients: Clients, world: tuple[Tenant, Tenant, RecallWorker], field: str
) -> None:
    alpha, _, recall = world
    before = _snapshot(clients.redis)
    scopes = {**Tenant.own_scopes(), field: f"t-beta-{SCOPES[field.removesuffix('_id')]}"}
    response = alpha.recaller().recall("kestrel deploy", **scopes)
    assert not response.success and response.error_code is ErrorCode.INVALID_REQUEST
    assert response.user_message and field in response.user_message
    assert recall.counters.refused_scope == 1 and recall.counters.answered == 0
    after = _snapshot(clients.redis)
    after.pop(recall_reply_prefix("alpha") + response.request_id, None)  # its own answer
    assert after == before


def test_a_tenant_cannot_ask_in_another_tenants_request_list(
    world: tuple[Tenant, Tenant, RecallWorker],
) -> None:
    alpha, _, _ = world
    foreign = RecallClient(
        alpha.conn,
        requests_key=recall_requests_key("beta"),
        reply_prefix=recall_reply_prefix("beta"),
        deadline_ms=2_000,
    )
    response = foreign.recall("kestrel deploy", **Tenant.own_scopes())
    # refused by Redis (NOPERM), and said so: no worker or restart would change it
    assert not response.success and response.error_code is ErrorCode.NOT_AVAILABLE
    assert "its own tenant's" in str(response.model_dump())


def test_a_tenant_cannot_publish_into_another_tenants_inbox(
    clients: Clients, world: tuple[Tenant, Tenant, RecallWorker]
) -> None:
    alpha, beta, _ = world
    intruder = Publisher(redis=alpha.conn, tenant="beta", max_queue_length=100)
    intruder.publish(turn("alpha pretends to be beta: kestrel on sundays", 7))
    assert not intruder.flush(timeout_s=1)  # every send is refused by Redis
    stats = intruder.close(timeout_s=0.5)
    assert stats.send_errors >= 1 and stats.enqueued == 0 and stats.abandoned == 1
    assert clients.redis.llen("turngraph:t:beta:inbox") == 0
    assert not any("sundays" in text for text in beta.recall("kestrel deploy"))


def test_forget_is_an_operator_command_and_reaches_only_the_named_tenant(
    clients: Clients, world: tuple[Tenant, Tenant, RecallWorker]
) -> None:
    alpha, beta, _ = world
    as_tenant = clients.settings.model_copy(update={"tenant": "alpha"})
    with pytest.raises(ConfigurationError):
        forget(as_tenant, Scope.WORKSPACE, SCOPES["workspace"], hashed=True)
    report = forget(clients.settings, Scope.WORKSPACE, SCOPES["workspace"], tenant="beta")
    assert report["forgotten"]["key"] == "t-beta-w_shared"
    deadline = time.monotonic() + 10
    while beta.recall("kestrel deploy") and time.monotonic() < deadline:
        time.sleep(0.1)  # the recall index applies the forget from the change stream
    assert beta.recall("kestrel deploy") == []
    assert any("fridays" in text for text in alpha.recall("kestrel deploy"))
