"""The always-warm local endpoint: editor hooks, the CLI's everyday operations and the
bridge's ops over HTTP on loopback, one request per touch instead of a Python start-up.

``server`` is ``turngraph endpoint``, ``app`` its routes; ``files`` and ``client`` (the
CLI's fast path) import the standard library only. docs/endpoint.md is the reference.
"""
