"""``turngraph mcp``: the memory as an MCP server, a thin adapter over the editor
operations (``producers.operations``).

``server`` builds the SDK server and its tools (recall, remember, status, forget),
``distill`` adds recap, summarize_recent and promote, ``tools`` holds what they share,
``stdio`` is the screened stdio transport; ``turngraph.endpoint.mcp`` serves the same
server over the endpoint's streamable HTTP transport.
"""
