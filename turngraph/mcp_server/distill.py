"""The MCP server's distilled-memory tools: ``recap``, ``summarize_recent``, ``promote``.

Registered by :func:`turngraph.mcp_server.server.build_server`; each answers through the bridge
core's ops (``producers.operations.distill``), so consent, scope hashing, the secret check and
the fail-open deadline are the bridge's. A maintenance worker answers them.

No ``from __future__ import annotations`` here: the SDK evaluates the tools' annotations.
"""

from collections.abc import Callable
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from turngraph.mcp_server.tools import MemoryTools, publish_and_flush, server_version, tool_result
from turngraph.schemas.scopes import PromotionScope

__all__ = ["ToolDecorator", "keep_note", "register_distill_tools"]

ToolDecorator = Callable[..., Callable[[Callable[..., Any]], Callable[..., Any]]]
"""``server.tool(**options)``: registers the decorated function as a tool."""


async def keep_note(tools: MemoryTools, text: str, kind: str) -> dict[str, Any]:
    """Publish ``text`` as a note turn of this server's session and wait until Redis
    has it: the reply (with ``event_id``) or the failure."""
    event = {
        "session_id": tools.session_id,
        "workspace": tools.workspace,
        "user": tools.user,
        "turn_index": tools.next_turn(tools.session_id),
        "role": "user",
        "content": text,
        "client": {"name": "turngraph-mcp", "version": server_version()},
        "tags": ["note", kind],
    }
    return await publish_and_flush(tools, event)


def register_distill_tools(tool: ToolDecorator, tools: MemoryTools) -> None:
    """Add ``recap``, ``summarize_recent`` and ``promote`` to the server ``tool`` registers on."""

    @tool(annotations=ToolAnnotations(destructive_hint=False, open_world_hint=False))
    async def recap(
        session_id: Annotated[
            str | None, Field(description="Session to recap (default: the previous session here).")
        ] = None,
        budget_tokens: Annotated[
            int, Field(ge=100, le=20_000, description="Token budget (default 1000).")
        ] = 1_000,
        ctx: Context | None = None,
    ) -> CallToolResult:
        """A recap of the previous session of this workspace (or of `session_id`) within a
        token budget: what was asked, decided and done, ending with where work stopped.
        Stored as the session's recap memory."""
        here = tools.at(ctx.headers if ctx is not None else None)
        request: dict[str, Any] = {
            "op": "recap",
            "workspace": here.workspace,
            "current_session_id": here.session_id,
            "budget_tokens": budget_tokens,
        }
        if session_id is not None:
            request["session_id"] = session_id
        reply = await tools.call(request)
        return tool_result(reply, reply.get("text") if reply.get("success") else None)

    @tool(annotations=ToolAnnotations(destructive_hint=False, open_world_hint=False))
    async def summarize_recent(
        turns: Annotated[int, Field(ge=1, le=500, description="How many recent turns.")] = 20,
        session_id: Annotated[
            str | None, Field(description="The chat's session id (default: this server's).")
        ] = None,
        ctx: Context | None = None,
    ) -> CallToolResult:
        """Summarize the last N turns of this session and store the summary (Topic,
        Context, Decisions, Rationale, OpenQuestions, NextSteps, References)."""
        here = tools.at(ctx.headers if ctx is not None else None)
        reply = await tools.call(
            {"op": "summarize", "session_id": session_id or here.session_id, "last_n": turns}
        )
        return tool_result(reply, reply.get("text") if reply.get("success") else None)

    @tool(annotations=ToolAnnotations(destructive_hint=False, open_world_hint=False))
    async def promote(
        text: Annotated[str, Field(description="The memory to promote.")],
        kind: Annotated[
            Literal[
                "decision",
                "lesson_learned",
                "preference",
                "procedure",
                "task_update",
                "terminology",
            ],
            Field(description="What kind of memory it is."),
        ],
        scope: Annotated[PromotionScope, Field(description="Where it applies.")] = "workspace",
        session_id: Annotated[
            str | None,
            Field(
                description="The chat it comes from (its latest turn is the provenance); "
                "default: the text is first kept as a note of this server's session."
            ),
        ] = None,
        ctx: Context | None = None,
    ) -> CallToolResult:
        """Promote a curated memory (decision, lesson learned, preference, procedure, task
        update, terminology) into this workspace or the user's scope, where recall finds it
        in every later chat. Refused when the text looks like a secret. Needs consent."""
        here = tools.at(ctx.headers if ctx is not None else None)
        request: dict[str, Any] = {
            "op": "promote",
            "kind": kind,
            "text": text,
            "scope": scope,
            "workspace": here.workspace,
            "user": here.user,
            "session_id": session_id or here.session_id,
        }
        if session_id is None:
            # the redaction rules load on the first promote, not at the server's start
            from turngraph.producers.operations.distill import secret_refusal
            from turngraph.producers.redaction import looks_secret

            if looks_secret(text):  # refused before the note is published
                return tool_result(secret_refusal().model_dump(mode="json", exclude_none=True))
            noted = await keep_note(here, text, kind)
            if not noted.get("success"):
                return tool_result(noted)
            request["source_event_ids"] = [noted["event_id"]]
        reply = await tools.call(request)
        return tool_result(reply, reply.get("text") if reply.get("success") else None)
