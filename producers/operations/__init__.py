"""The editor operations, defined once: publish, recall, flush, status, and the distilled
ones (summarize, recap, summary, promote, context).

:class:`Operations` takes a request (``op`` and the fields of its model in
``schemas.bridge``) and answers with the bridge's reply contract; the bridge, the MCP
server, the local endpoint and the hooks are thin adapters over it, sharing its warm
clients (:class:`Backend`).
"""

from turngraph.producers.operations.backend import Backend
from turngraph.producers.operations.core import Operations, line_refusal
from turngraph.producers.operations.distill import DistillBackend, DistillOps, unavailable

__all__ = ["Backend", "DistillBackend", "DistillOps", "Operations", "line_refusal", "unavailable"]
