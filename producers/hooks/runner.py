"""One hook call carried out: capture, recall before the prompt, the start-up context,
the summary before compaction or at the end.

Everything it talks to is passed in (built lazily: a prompt hook never builds a
publisher). Nothing is done for a workspace without consent. Failures are counted in
the hooks' counters (``turngraph hooks status``) and never raised: the editor gets no
output and exit status 0.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from turngraph.producers.hooks.editors import EditorSpec, context_output
from turngraph.producers.hooks.payload import HookAction, HookCall
from turngraph.producers.hooks.state import HookState, ReadPosition, tail_sha256
from turngraph.producers.hooks.transcripts import (
    ParseCounts,
    TranscriptTurn,
    parse_lines,
    read_new_lines,
)
from turngraph.schemas.memory_block import Said, render_memory_block

if TYPE_CHECKING:
    from turngraph.producers.distill_client import DistillClient
    from turngraph.producers.publisher import Publisher
    from turngraph.producers.recall_client import RecallClient
    from turngraph.producers.scopes import ScopeHasher
    from turngraph.schemas.turn_event import TurnEvent

__all__ = [
    "CAPTURE_FLUSH_S", "CLIENT_NAME", "JOIN_GRACE_MS", "LAST", "MAX_INJECTED_IDS",
    "MAX_INJECTED_TEXTS", "MAX_PENDING", "MIN_RECALL_MS", "OUTPUT_MARGIN_MS", "STASHED_PROMPTS",
    "SUMMARY_DEADLINE_MS", "SUMMARY_LAST_N", "HookRunner", "HookServices", "ScopeKeys", "event_id",
]  # fmt: skip

CLIENT_NAME = "turngraph-hooks"

CAPTURE_FLUSH_S = 2.0
"""How long a capture waits for Redis to take its turns (they are published again next
time when it does not: same ids, no duplicates)."""

OUTPUT_MARGIN_MS = 30
"""Kept back from the prompt deadline for printing the answer and exiting."""

MIN_RECALL_MS = 50
"""Less time than this left: no recall at all."""

JOIN_GRACE_MS = 400
"""How long past its deadline the session-start hook waits for a lookup's answer (within
the half second kept back from the editor's timeout)."""

STASHED_PROMPTS = frozenset({"cursor", "codex"})
"""Editors whose answer hook lacks the prompt: the prompt hook keeps it for the answer."""

LAST = "last"
"""Where a prompt is kept when its payload names no turn (``generation_id``, ``turn_id``)."""

MAX_PENDING = 20
"""Prompts kept waiting for their answer, per session (the oldest go first)."""

MAX_INJECTED_TEXTS = 40
"""Blocks a session keeps as injected (the oldest go first)."""

MAX_INJECTED_IDS = 2_000
"""Sources a session keeps as injected, per kind."""

SUMMARY_LAST_N = 40
SUMMARY_DEADLINE_MS = 15_000


def event_id(session: str, source_id: str, role: str) -> str:
    """The idempotent id of a transcript turn: the same turn always gets the same id."""
    digest = hashlib.sha256(f"{session}\x1f{source_id}\x1f{role}".encode()).hexdigest()
    return f"h_{digest[:40]}"


@dataclass
class ScopeKeys:
    """The hashed keys of one hook call's session, workspace and user."""

    session: str
    workspace: str
    user: str


@dataclass
class HookServices:
    """Lazily built clients (None: memory is unavailable right now)."""

    publisher: Callable[[], Publisher | None]
    recaller: Callable[[], RecallClient | None]
    distiller: Callable[[], DistillClient | None]


@dataclass(kw_only=True, eq=False)
class HookRunner:
    spec: EditorSpec
    state: HookState
    hasher: ScopeHasher
    user: str
    consent: Callable[[str], bool]
    services: HookServices
    deadline_ms: int
    start_budget_tokens: int
    started_at: float
    clock: Callable[[], float] = time.monotonic

    def run(self, call: HookCall) -> dict[str, Any] | None:
        """Carry out ``call``; the JSON to print, or None for no output."""
        scope = ScopeKeys(
            session=self.hasher.session(call.session_id),
            workspace=self.hasher.workspace(str(call.workspace)),
            user=self.hasher.user(self.user),
        )
        if not self.consent(scope.workspace):
            self.state.count(not_consented=1)
            return None
        action = call.action
        if action is HookAction.PROMPT:
            if self.spec.shape in STASHED_PROMPTS and call.prompt:
                self._stash_prompt(call, scope)  # sent with its answer: no network for it
            return self._prompt(call, scope) if self.spec.prompt_context else None
        if action is HookAction.SESSION_START:
            return self._session_start(scope)
        self._capture(call, scope)
        if action is HookAction.SUMMARIZE:  # before compaction: what follows is new
            self._window_moved(scope, self._next_turn_index(call, scope))
        if action in (HookAction.SUMMARIZE, HookAction.SESSION_END):
            self._summarize(scope)
        return None

    # -- capture ---------------------------------------------------------------------------

    def _capture(self, call: HookCall, scope: ScopeKeys) -> None:
        if self.spec.transcript:
            if call.transcript_path is None:
                # Copilot CLI's sessionEnd names no transcript: agentStop captured it already.
                if call.action is HookAction.CAPTURE:
                    self.state.count(error_no_transcript=1)
                return
            self._capture_transcript(call.transcript_path, scope)
        elif call.response:
            self._capture_payload(call, scope)

    def _capture_transcript(self, path: Any, scope: ScopeKeys) -> None:
        key = str(path)
        with self.state.locked("transcript", key):
            position = self.state.position("transcript", key)
            try:
                stream = open(path, "rb")  # noqa: SIM115 (closed below, after the offset moves)
            except OSError:
                self.state.count(error_transcript_unreadable=1)
                return
            with stream:
                size = stream.seek(0, 2)
                if (
                    position.offset > size
                    or tail_sha256(stream, position.offset) != position.tail_sha256
                ):
                    self.state.count(transcript_rewritten=1)  # read again: ids drop repeats
                    position.offset, position.tail_sha256 = 0, ""
                read = read_new_lines(stream, position.offset)
                counts = ParseCounts()
                turns: list[TranscriptTurn] = []
                compacted_at: int | None = None  # the first turn after the last compaction
                for line in read.lines:
                    seen = counts.boundaries
                    turns += parse_lines([line], counts)
                    if counts.boundaries > seen:
                        compacted_at = position.next_turn_index + len(turns)
                self.state.count(
                    error_line_too_long=read.skipped_long,
                    error_line_malformed=counts.malformed,
                    skipped_sidechain=counts.sidechain,
                    skipped_compaction=counts.compaction,
                )
                events = [
                    self._event(scope, turn, position.next_turn_index + n)
                    for n, turn in enumerate(turns)
                ]
                if events and not self._publish(events):
                    return  # the offset stays: the next call publishes them again
                position.next_turn_index += len(events)
                position.offset = read.end_offset
                position.tail_sha256 = tail_sha256(stream, read.end_offset)
                self.state.save_position("transcript", key, position)
        if compacted_at is not None:
            self._window_moved(scope, compacted_at)

    def _stash_prompt(self, call: HookCall, scope: ScopeKeys) -> None:
        """Keep the prompt (locally, in the private data folder) until its answer comes."""
        with self.state.locked("session", scope.session):
            position = self.state.position("session", scope.session)
            position.pending[call.turn_id or LAST] = call.prompt or ""
            position.pending = dict(list(position.pending.items())[-MAX_PENDING:])
            self.state.save_position("session", scope.session, position)

    def _capture_payload(self, call: HookCall, scope: ScopeKeys) -> None:
        """The exchange the payload carries (Gemini: prompt and answer; Cursor and Codex:
        the answer, and the prompt kept by their prompt hook), ids from the editor's turn id
        or from the exchange itself."""
        with self.state.locked("session", scope.session):
            position: ReadPosition = self.state.position("session", scope.session)
            prompt = call.prompt if self.spec.shape == "gemini" else None
            if self.spec.shape in STASHED_PROMPTS:
                prompt = position.pending.pop(call.turn_id or LAST, None)
            turns = [("user", prompt)] if prompt and prompt.strip() else []
            turns.append(("assistant", call.response or ""))
            base = (
                call.turn_id
                or hashlib.sha256(
                    "\x1f".join([call.timestamp or "", *(text for _, text in turns)]).encode()
                ).hexdigest()
            )
            events = []
            for role, text in turns:
                source = f"{base}:{role}"
                index = position.seen.get(source)
                if index is None:
                    index = position.seen[source] = position.next_turn_index
                    position.next_turn_index += 1
                turn = TranscriptTurn(source, role, text)
                events.append(self._event(scope, turn, index))
            if len(position.seen) > 1000:  # only recent repeats matter
                position.seen = dict(list(position.seen.items())[-500:])
            if self._publish(events):
                self.state.save_position("session", scope.session, position)

    def _event(self, scope: ScopeKeys, turn: TranscriptTurn, index: int) -> TurnEvent:
        # Imported here: a call that publishes nothing never builds the turn model.
        from turngraph.schemas.turn_event import MAX_CONTENT_CHARS, ClientInfo, TurnEvent

        content = turn.content
        if len(content) > MAX_CONTENT_CHARS:
            content = content[: MAX_CONTENT_CHARS - 20] + "\n[cut by turngraph]"
        return TurnEvent(
            event_id=event_id(scope.session, turn.source_id, turn.role),
            session_id=scope.session,
            workspace=scope.workspace,
            user=scope.user,
            turn_index=index,
            role=turn.role,
            speaker=turn.speaker[:100],
            content=content,
            occurred_at=turn.occurred_at or datetime.now(UTC),
            client=ClientInfo(name=CLIENT_NAME, version="1"),
            tags=("hook",),
        )

    def _publish(self, events: list[TurnEvent]) -> bool:
        """True when Redis answered for every event (taken, a duplicate, or dropped by the
        queue's policy: counted there)."""
        publisher = self.services.publisher()
        if publisher is None:
            self.state.count(error_backend_unavailable=1)
            return False
        try:
            for event in events:
                publisher.publish(event)
            deadline = self.clock() + CAPTURE_FLUSH_S
            answered = False
            while self.clock() < deadline:
                if publisher.flush(0.05):
                    answered = True
                    break
                if not publisher.redis_available:
                    break
        finally:
            stats = publisher.close(timeout_s=0.05)
        self.state.count(
            published=stats.enqueued,
            duplicates=stats.duplicates,
            dropped_by_queue=stats.dropped_newest,
            error_backend_unavailable=0 if answered else 1,
        )
        return answered

    # -- the editor's window ----------------------------------------------------------------

    def _next_turn_index(self, call: HookCall, scope: ScopeKeys) -> int:
        """The index the session's next captured turn gets."""
        if self.spec.transcript and call.transcript_path is not None:
            return self.state.position("transcript", str(call.transcript_path)).next_turn_index
        return self.state.position("session", scope.session).next_turn_index

    def _window_moved(self, scope: ScopeKeys, first_turn: int) -> None:
        """The editor compacted its window: it holds the session's turns from
        ``first_turn`` on, and none of what the hooks injected before."""
        with self.state.locked("session", scope.session):
            position = self.state.position("session", scope.session)
            if first_turn <= position.window_from_turn:
                return  # already known (PreCompact, then the transcript's marker)
            position.window_from_turn = first_turn
            position.injected_texts, position.injected_turn_ids = [], []
            position.injected_digest_ids = []
            self.state.save_position("session", scope.session, position)

    def _held(self, scope: ScopeKeys) -> tuple[int, Said]:
        """The first turn the window holds and what the hooks injected into it."""
        position = self.state.position("session", scope.session)
        said = Said()
        for text in position.injected_texts:
            said.add(text)
        said.turn_ids.update(position.injected_turn_ids)
        said.digest_ids.update(position.injected_digest_ids)
        return position.window_from_turn, said

    def _injected(self, scope: ScopeKeys, text: str, said: Said) -> None:
        """Keep what was just injected (the block and its items' sources) for the next
        blocks of this session."""
        with self.state.locked("session", scope.session):
            position = self.state.position("session", scope.session)
            position.injected_texts = [*position.injected_texts, text][-MAX_INJECTED_TEXTS:]
            position.injected_turn_ids = sorted(said.turn_ids)[-MAX_INJECTED_IDS:]
            position.injected_digest_ids = sorted(said.digest_ids)[-MAX_INJECTED_IDS:]
            self.state.save_position("session", scope.session, position)

    # -- context ---------------------------------------------------------------------------

    def _remaining_ms(self) -> int:
        spent = (self.clock() - self.started_at) * 1000
        binding = self.spec.binding(HookAction.PROMPT)
        ceiling = binding.timeout_s * 1000 - 500 if binding else self.deadline_ms
        return int(min(self.deadline_ms, ceiling) - spent - OUTPUT_MARGIN_MS)

    def _editor_left_ms(self, action: HookAction) -> float:
        """What is left of the editor's timeout for ``action`` (it kills the hook then,
        start-up included) less half a second and the margin for answering."""
        binding = self.spec.binding(action)
        if binding is None:
            return float("inf")
        spent = (self.clock() - self.started_at) * 1000
        return binding.timeout_s * 1000 - 500 - spent - OUTPUT_MARGIN_MS

    def _prompt(self, call: HookCall, scope: ScopeKeys) -> dict[str, Any] | None:
        from turngraph.producers.hooks.context import recent_turns
        from turngraph.schemas.recall import query_of_prompt

        query = (call.prompt or call.transformed_prompt or "").strip()
        if not query:
            return None
        recaller = self.services.recaller()
        remaining = self._remaining_ms()
        if recaller is None or remaining < MIN_RECALL_MS:
            self.state.count(recall_skipped=1)
            return None
        window_from_turn, said = self._held(scope)
        response = recaller.recall(
            query_of_prompt(query),  # a prompt with a pasted log is longer than a query
            session_id=scope.session,
            workspace=scope.workspace,
            user=scope.user,
            conversation_context=recent_turns(call.transcript_path),
            window_from_turn=window_from_turn,
            max_results=5,
            max_tokens=800,
            deadline_ms=remaining,
        )
        if not response.success:
            self.state.count(recall_failed=1)
            return None
        # Rendered here, not taken from the worker: what this session's blocks already
        # said is left out (schemas.memory_block.Said).
        block = render_memory_block(response.results, said)
        if not block:
            self.state.count(recall_all_held=1 if response.results else 0)
            return None
        self._injected(scope, block, said)
        self.state.count(recall_injected=1)
        prompt = call.transformed_prompt if call.transformed_prompt is not None else call.prompt
        return context_output(self.spec, HookAction.PROMPT, block, prompt=prompt)

    def _session_start(self, scope: ScopeKeys) -> dict[str, Any] | None:
        from turngraph.producers.hooks.context import start_context

        found: dict[str, Any] = {}
        budget = self.start_budget_tokens
        # A recap may wait four hook deadlines, the standing memories one; both end before
        # the editor's timeout, however large the deadline set.
        left_ms = self._editor_left_ms(HookAction.SESSION_START)
        recap_ms = int(min(self.deadline_ms * 4, left_ms))
        standing_ms = int(min(self.deadline_ms, left_ms))
        if standing_ms < MIN_RECALL_MS:
            self.state.count(start_context_skipped=1)
            return None

        def recap() -> None:
            distiller = self.services.distiller()
            if distiller is not None:
                reply = distiller.recap(
                    None,
                    budget_tokens=max(100, budget * 2 // 3),
                    workspace=scope.workspace,
                    current_session_id=scope.session,
                    deadline_ms=recap_ms,
                )
                found["recap"] = reply.text if reply.success else None

        def standing() -> None:
            recaller = self.services.recaller()
            if recaller is not None:
                reply = recaller.recall(
                    "decisions preferences conventions we agreed on",
                    workspace=scope.workspace,
                    user=scope.user,
                    scopes=("workspace", "user"),
                    max_results=10,
                    max_tokens=max(100, budget // 3),
                    deadline_ms=standing_ms,
                )
                found["standing"] = reply.results if reply.success else []

        threads = [threading.Thread(target=f, daemon=True) for f in (recap, standing)]
        for thread in threads:
            thread.start()
        until = time.monotonic() + (recap_ms + JOIN_GRACE_MS) / 1000
        for thread in threads:  # each client returns by its deadline; this is a safety net
            thread.join(timeout=max(0.0, until - time.monotonic()))
        said = Said()
        text = start_context(found.get("recap"), found.get("standing") or [], budget, said)
        self.state.count(start_context_injected=1 if text else 0)
        if text:
            self._injected(scope, text, said)
        return context_output(self.spec, HookAction.SESSION_START, text)

    def _summarize(self, scope: ScopeKeys) -> None:
        distiller = self.services.distiller()
        if distiller is None:
            self.state.count(error_backend_unavailable=1)
            return
        reply = distiller.summarize(scope.session, SUMMARY_LAST_N, deadline_ms=SUMMARY_DEADLINE_MS)
        self.state.count(
            summarized=1 if reply.success else 0, summary_failed=0 if reply.success else 1
        )
