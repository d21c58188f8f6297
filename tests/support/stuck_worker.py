"""An ingest worker whose graph write never returns: run as a process, it admits the
operator's inbox once (one batch job) and is SIGKILLed by tests mid-batch
(tests/integration/test_worker_recovery.py)."""

from __future__ import annotations

import time

from turngraph.app import build_admission, build_ingest_worker
from turngraph.clients import build_clients
from turngraph.settings import Settings


def main() -> None:
    clients = build_clients(Settings())
    worker = build_ingest_worker(clients)

    def hang(*_: object) -> None:
        time.sleep(3600)

    worker.pipeline._store.write = hang  # type: ignore[method-assign]
    build_admission(clients, clients.redis).admit_all()
    worker.work(burst=False, with_scheduler=False)


if __name__ == "__main__":
    main()
