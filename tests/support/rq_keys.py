"""RQ's Redis key names, for tests that forge what a hostile writer could put in Redis.

Production code never names RQ's keys (``tests/unit/test_rq_private_names.py``);
``tests/integration/test_rq_internals.py`` pins these against RQ itself.
"""

from __future__ import annotations

RQ_QUEUE_PREFIX = "rq:queue:"
"""RQ's key prefix of a queue's list (``Queue(name).key``)."""

RQ_QUEUES_KEY = "rq:queues"
"""RQ's set of known queues (``Queue.redis_queues_keys``)."""

RQ_JOB_PREFIX = "rq:job:"
"""RQ's key prefix of a job hash (``Job.key_for(id)``)."""

RQ_FAILED_PREFIX = "rq:failed:"
"""RQ's key prefix of a queue's failed-job registry (``FailedJobRegistry(name).key``)."""
