"""``turngraph mcp``: the memory as an MCP server, a thin adapter over the editor
operations (``producers.operations``).

``server`` builds the SDK server and its tools, ``distill`` adds the distilled-memory
tools, ``tools`` holds what they share, ``stdio`` is the screened stdio transport.
"""
