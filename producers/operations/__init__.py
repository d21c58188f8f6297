"""The editor operations, defined once: publish, recall, flush, status, and the distilled
ones (summarize, recap, summary, promote, context).

:class:`Operations` takes a request (a JSON object: ``op`` and the fields of its model in
``schemas.bridge``) and answers with the bridge's reply contract. Every way in is a thin
adapter over it: ``turngraph bridge`` (stdio JSON lines, ``producers.bridge_io``),
``turngraph mcp`` (``turngraph.mcp_server``), the local endpoint (``turngraph.endpoint``)
and the editors' hooks, which share its warm clients (:class:`Backend`).
"""

from turngraph.producers.operations.backend import Backend
from turngraph.producers.operations.core import Operations, line_refusal
from turngraph.producers.operations.distill import DistillBackend, DistillOps, unavailable

__all__ = ["Backend", "DistillBackend", "DistillOps", "Operations", "line_refusal", "unavailable"]
