"""Leave orphaned embedded servers in a data folder, as a version without parent-death
signals did when it was killed: start them, print their pids, exit without stopping them.

    python -m tests.support.orphan_services DATA_DIR
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from turngraph import lifecycle
from turngraph.embedded import EmbeddedServices


def main() -> None:
    lifecycle._PRCTL = None  # what older versions did: no parent-death signal
    services = EmbeddedServices(Path(sys.argv[1]))
    services.start()
    print(json.dumps({"redis": services.redis.pid, "graph": services.graph.pid}), flush=True)
    os._exit(0)  # no clean-up at all: the servers, services.json and the lock file stay


if __name__ == "__main__":
    main()
