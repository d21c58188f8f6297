"""The always-warm local endpoint: editor hooks, the CLI's everyday operations and the
bridge's ops over HTTP on loopback, one request per touch instead of a Python start-up.

``files`` (where it listens and its token, standard library only), ``client`` (the CLI's
fast path, standard library only), ``hooks`` (hook events over the warm clients), ``mcp``
(MCP over streamable HTTP at ``/mcp``), ``app`` (the routes), ``server`` (``turngraph
endpoint``). docs/endpoint.md is the reference.
"""
