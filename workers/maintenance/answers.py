"""Answering on-demand distill requests (run as a maintenance job; see ``asks``)."""

from __future__ import annotations

import structlog

from turngraph.producers.request_reply import invalid_request
from turngraph.schemas.distill import DistillOp, DistillRequest, DistillResponse
from turngraph.schemas.errors import ErrorCode, PermanentError
from turngraph.schemas.memories import PromotedMemory, render_memory
from turngraph.schemas.summaries import DecisionRecord, render_decision_record, render_summary
from turngraph.workers.maintenance import compaction, promotion, recaps, summaries
from turngraph.workers.maintenance.context import Distiller

__all__ = ["answer"]

log = structlog.get_logger(__name__)


def _invalid(request: DistillRequest, what: str) -> DistillResponse:
    return invalid_request(DistillResponse, request.request_id, request.op.value, [what])


def _not_found(request: DistillRequest, what: str) -> DistillResponse:
    return DistillResponse.failure(
        request.request_id,
        ErrorCode.NOT_FOUND,
        f"nothing found: {what}",
        "check the key (scope keys are the hashed ones the producers send)",
    )


def _full(distiller: Distiller, request: DistillRequest, memory_id: str) -> DistillResponse:
    """The seed's "show the full summary": a summary, a decision record or a memory."""
    ok = DistillResponse(request_id=request.request_id, success=True, op=request.op)
    summary = summaries.load_summary(distiller, memory_id)
    if summary is not None:
        return ok.model_copy(update={"summary": summary, "text": render_summary(summary)})
    stored = distiller.store.decision_record(memory_id)
    if stored is not None:
        record = DecisionRecord.model_validate_json(stored.json)
        return ok.model_copy(update={"record": record, "text": render_decision_record(record)})
    text = distiller.store.memory_text(memory_id)
    if text is not None:
        return ok.model_copy(update={"text": text})
    return _not_found(request, "no summary, record or memory with that id")


def answer(distiller: Distiller, request: DistillRequest) -> DistillResponse:
    """Do what the request asks; typed failures, never chat text in messages."""
    ok = DistillResponse(request_id=request.request_id, success=True, op=request.op)
    if request.op is DistillOp.SUMMARY:
        if not request.memory_id:
            return _invalid(request, "memory_id")
        return _full(distiller, request, request.memory_id)
    if request.op is DistillOp.SUMMARIZE:
        if not request.session_id:
            return _invalid(request, "session_id")
        made = summaries.summarize_last_turns(distiller, request.session_id, request.last_n)
        if made is None:
            return _not_found(request, "the session has no turns")
        return ok.model_copy(update={"summary": made, "text": render_summary(made)})
    if request.op is DistillOp.RECAP:
        session_id = request.session_id
        if not session_id and request.workspace:
            session_id = distiller.store.latest_session(
                request.workspace, request.current_session_id
            )
            if session_id is None:
                return _not_found(request, "the workspace has no earlier session")
        if not session_id:
            return _invalid(request, "session_id or workspace")
        recap = recaps.recap_session(distiller, session_id, request.budget_tokens)
        if recap is None:
            return _not_found(request, "the session has no turns")
        return ok.model_copy(update={"recap": recap, "text": recap.text})
    if request.op is DistillOp.COMPACT:
        if not request.workspace or not request.topic_id:
            return _invalid(request, "workspace and topic_id")
        record = compaction.compact_topic(distiller, request.workspace, request.topic_id)
        if record is None:
            return _not_found(request, "no open summaries of that topic with a decision to record")
        return ok.model_copy(update={"record": record, "text": render_decision_record(record)})
    return _promote(distiller, request, ok)


def _promote(distiller: Distiller, request: DistillRequest, ok: DistillResponse) -> DistillResponse:
    if request.kind is None or not request.text or not request.user:
        return _invalid(request, "kind, text and user")
    sources = request.source_event_ids
    if not sources and request.session_id:
        store = distiller.store
        last = store.last_turn_index(request.session_id)
        turns = [] if last is None else store.session_turns(request.session_id, last, last)
        sources = tuple(t.event_id for t in turns)
        if not sources:
            return _not_found(request, "the session has no turns to point back to")
    if not sources:
        return _invalid(request, "source_event_ids (or a session_id with turns)")
    try:
        memory: PromotedMemory = promotion.promote(
            distiller,
            kind=request.kind,
            text=request.text,
            scope=request.scope,
            user=request.user,
            workspace=request.workspace,
            session_id=request.session_id,
            source_event_ids=sources,
        )
    except promotion.SecretContentError:
        return DistillResponse.failure(
            request.request_id,
            ErrorCode.REFUSED,
            "refused: the text looks like a secret",
            "remove the credential and promote again",
        )
    except PermanentError as exc:
        return _invalid(request, str(exc))
    return ok.model_copy(update={"memory": memory, "text": render_memory(memory)})
