"""RealMem (development half) as a retrieval dataset: recall in the editor's flow.

Five long user <-> assistant histories (one persona each) read from
``../shared/data/realmem-dev`` (or ``$TURNGRAPH_REALMEM_DIR``) at bench time, never copied
here. Replayed online as the dataset's README describes: each persona is one workspace,
each session one chat session, each turn one event; a query turn (``is_query``) is asked
inside its session with the turns of that session before it (up to 6) as
``conversation_context``, after everything published before it, and only then published
itself with its answer.

Evidence: each ``memory_used`` entry of the answer -> the ``extracted_memory`` entry of
that session with the same ``content`` -> its ``source_turn`` (1-based, 0 also means the
first turn; checked against ``source_content_snapshot``, else the session's turn with that
text) -> the turn's event. Evidence not published before the query and queries left
without evidence are dropped and counted.

Time: ``current_time`` is a day; turns of a session are one minute apart from noon, and a
session whose day lies before the previous session's last turn starts one minute after it
(time never runs backwards; counted as ``sessions_clamped``). The whole history is moved
so that its last turn happened an hour before ``now``.

Split: three personas to tune on (``dev``), two scored only when a change is done
(``test``), chosen once by name before any figure was seen.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from turngraph.schemas.turn_event import TurnEvent

SHARED_PATH = Path("shared") / "data" / "realmem-dev"

USER = "u_realmem"
CONTEXT_TURNS = 6
"""Turns of the current session sent as ``conversation_context`` (the README's up to 6)."""

CONTEXT_TURN_CHARS = 20_000
"""A context turn is cut to the wire contract's maximum (one turn of the set is longer)."""

DEV_PERSONAS = ("Lin_Wanyu", "Oliver_Smith", "Pak_Budi")
"""Tuned on; the other two (Sarah_Miller, Sophie_Dubois) are the score part."""

_DAY = re.compile(r"(\d{4}-\d{2}-\d{2})")
_ROLES = {"user": "user", "assistant": "assistant"}


@dataclass
class RealMem:
    """The turns of every persona in timeline order, and the queries with their position."""

    turns: list[TurnEvent]
    questions: list[dict[str, Any]]
    evidence_total: int = 0
    evidence_resolved: int = 0
    evidence_unpublished: int = 0
    questions_dropped: int = 0
    sessions_clamped: int = 0
    session_of: dict[str, str] = field(default_factory=dict)  # event id -> session id


def data_dir() -> Path:
    """Where RealMem is read from; a clear error when it is not there."""
    configured = os.environ.get("TURNGRAPH_REALMEM_DIR")
    candidates = (
        [Path(configured)]
        if configured
        else [parent / SHARED_PATH for parent in Path(__file__).resolve().parents[1:]]
    )
    folder = next((c for c in candidates if sorted(c.glob("*_dialogues_*.json"))), candidates[0])
    if not sorted(folder.glob("*_dialogues_*.json")):
        raise SystemExit(
            f"RealMem not found in {folder}: put the shared data folder beside the "
            "repository (../shared/data/realmem-dev) or set TURNGRAPH_REALMEM_DIR"
        )
    return folder


def persona_of(path: Path) -> str:
    return path.name.split("_dialogues_")[0]


def _key(content: object) -> str:
    return content if isinstance(content, str) else json.dumps(content, sort_keys=True)


def _day(value: str) -> datetime:
    match = _DAY.search(value)
    if match is None:
        raise SystemExit("a RealMem session has no date in current_time")
    return datetime.fromisoformat(match.group(1)).replace(hour=12, tzinfo=UTC)


def _source_index(turns: list[dict[str, Any]], memory: dict[str, Any]) -> int | None:
    """The 0-based turn an extracted memory came from, checked against its snapshot."""
    number = int(memory.get("source_turn", -1))
    if number < 0:
        return None
    snapshot = str(memory.get("source_content_snapshot") or "")
    for guess in (max(number - 1, 0), number):
        if guess < len(turns) and turns[guess].get("content") == snapshot:
            return guess
    matches = [i for i, turn in enumerate(turns) if turn.get("content") == snapshot]
    return matches[0] if matches else None


def load_persona(path: Path, now: datetime, out: RealMem) -> None:
    """Append one persona's turns and queries to ``out``."""
    persona = persona_of(path)
    workspace = f"rm_{persona.lower()}"
    split = "dev" if persona in DEV_PERSONAS else "test"
    sessions = json.loads(path.read_text())["dialogues"]
    extracted: dict[tuple[str, str], dict[str, Any]] = {}
    turns_of: dict[str, list[dict[str, Any]]] = {}
    for session in sessions:
        turns_of[session["session_uuid"]] = session["dialogue_turns"]
        for memory in session.get("extracted_memory") or []:
            extracted.setdefault((memory["session_uuid"], _key(memory["content"])), memory)
    events: list[TurnEvent] = []
    published_at: dict[tuple[str, int], int] = {}  # (session uuid, turn) -> position
    questions: list[dict[str, Any]] = []
    clock = datetime.min.replace(tzinfo=UTC)
    for session in sessions:
        uuid = session["session_uuid"]
        session_id = f"{workspace}_{uuid}"
        start = _day(str(session.get("current_time", "")))
        if start <= clock:
            start = clock + timedelta(minutes=1)
            out.sessions_clamped += 1
        turns = session["dialogue_turns"]
        for index, turn in enumerate(turns):
            occurred = start + timedelta(minutes=index)
            clock = occurred
            role = _ROLES.get(str(turn.get("speaker", "")).lower(), "user")
            if turn.get("is_query"):
                questions.append(
                    _question(turn, turns, index, len(events), session_id, workspace, split)
                    | {"_answer": turns[index + 1] if index + 1 < len(turns) else {}}
                )
            event = TurnEvent.model_validate(
                {
                    "session_id": session_id,
                    "workspace": workspace,
                    "user": USER,
                    "turn_index": index,
                    "role": role,
                    "speaker": role,
                    "content": str(turn.get("content") or "").strip() or "(empty)",
                    "occurred_at": occurred,
                    "client": {"name": "bench-realmem", "version": "1"},
                }
            )
            published_at[(uuid, index)] = len(events)
            events.append(event)
    shift = now - timedelta(hours=1) - clock
    events = [e.model_copy(update={"occurred_at": e.occurred_at + shift}) for e in events]
    for question in questions:
        answer = question.pop("_answer")
        evidence: list[str] = []
        for used in answer.get("memory_used") or []:
            if not isinstance(used, dict):
                continue
            out.evidence_total += 1
            memory = extracted.get((str(used.get("session_uuid")), _key(used.get("content"))))
            if memory is None:
                continue
            source = _source_index(turns_of.get(memory["session_uuid"], []), memory)
            if source is None:
                continue
            out.evidence_resolved += 1
            position = published_at.get((memory["session_uuid"], source))
            if position is None or position >= question["position"]:
                out.evidence_unpublished += 1
                continue
            evidence.append(events[position].event_id)
        if not evidence:
            out.questions_dropped += 1
            continue
        question["evidence_event_ids"] = list(dict.fromkeys(evidence))
        out.questions.append(question)
    out.turns += events
    out.session_of.update({e.event_id: e.session_id for e in events})


def _question(
    turn: dict[str, Any],
    turns: list[dict[str, Any]],
    index: int,
    position: int,
    session_id: str,
    workspace: str,
    split: str,
) -> dict[str, Any]:
    context = [
        {
            "role": _ROLES.get(str(t.get("speaker", "")).lower(), "user"),
            "content": str(t.get("content") or "")[:CONTEXT_TURN_CHARS],
        }
        for t in turns[max(0, index - CONTEXT_TURNS) : index]
        if str(t.get("content") or "").strip()
    ]
    return {
        "id": f"{workspace}_{turn.get('query_id') or index}",
        "workspace": workspace,
        "user": USER,
        "session_id": session_id,
        "split": split,
        "position": position,
        "category": str(turn.get("category_name") or "other"),
        "session_type": str(turn.get("session_type") or "other"),
        "follow_up": bool(context),
        "question": str(turn.get("content") or ""),
        "conversation_context": context,
    }


def load(
    now: datetime | None = None, folder: Path | None = None, split: str | None = None
) -> RealMem:
    """Every persona (or those of ``split``), each one workspace, in timeline order."""
    folder = folder or data_dir()
    now = now or datetime.now(UTC)
    out = RealMem(turns=[], questions=[])
    for path in sorted(folder.glob("*_dialogues_*.json")):
        persona_split = "dev" if persona_of(path) in DEV_PERSONAS else "test"
        if split in (None, "all", persona_split):
            load_persona(path, now, out)
    return out
