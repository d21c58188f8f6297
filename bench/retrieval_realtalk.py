"""REALTALK as a retrieval dataset: ten real multi-week chats with evidence turn ids.

Read from ``../shared/data/realtalk`` (or ``$TURNGRAPH_REALTALK_DIR``) at bench time and
never copied into this repository (its README: research and evaluation only). Each chat
becomes one workspace, each of its sessions one session; both people are ``user`` turns
with their own ``speaker``. Evidence ids are matched on ``dia_id``, never on position;
malformed ones (``"D12:3-D12:5"``, ``"D1:11; D3:18"``, trailing dots, ``"D 2:18"``) are
normalised and the count that resolved is reported.

Split: odd-numbered chats are the development part (tune on them), even-numbered chats
the test part (scored only when a change is done).
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

SHARED_PATH = Path("shared") / "data" / "realtalk"
"""``../shared/data/realtalk`` beside the repository (the team's shared data folder)."""

USER = "u_realtalk"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "commonsense"}

_ID = re.compile(r"D?\s*(\d+)\s*:\s*(\d+)")
_RANGE = re.compile(r"D\s*(\d+)\s*:\s*(\d+)\s*-\s*(?:D\s*(\d+)\s*:\s*)?(\d+)")


@dataclass
class RealTalk:
    """Turns and questions of one variant (real dates or one timestamp)."""

    turns: list[TurnEvent]
    questions: list[dict[str, Any]]
    evidence_total: int = 0
    evidence_resolved: int = 0
    questions_dropped: int = 0
    chats: dict[str, str] = field(default_factory=dict)  # workspace -> dev/test


def data_dir() -> Path:
    """Where REALTALK is read from; a clear error when it is not there."""
    configured = os.environ.get("TURNGRAPH_REALTALK_DIR")
    candidates = (
        [Path(configured)]
        if configured
        else [parent / SHARED_PATH for parent in Path(__file__).resolve().parents[1:]]
    )
    folder = next((c for c in candidates if sorted(c.glob("Chat_*.json"))), candidates[0])
    if not sorted(folder.glob("Chat_*.json")):
        raise SystemExit(
            f"REALTALK not found in {folder}: put the shared data folder beside the "
            "repository (../shared/data/realtalk) or set TURNGRAPH_REALTALK_DIR"
        )
    return folder


def parse_evidence(raw: str) -> list[tuple[int, int]]:
    """``(session, turn)`` pairs named by one evidence string, ranges expanded."""
    found: list[tuple[int, int]] = []
    text = raw.strip()
    for match in _RANGE.finditer(text):
        session = int(match.group(1))
        end_session = int(match.group(3) or session)
        first, last = int(match.group(2)), int(match.group(4))
        if end_session == session and first <= last <= first + 50:
            found += [(session, n) for n in range(first, last + 1)]
    text = _RANGE.sub(" ", text)
    found += [(int(s), int(t)) for s, t in _ID.findall(text)]
    return list(dict.fromkeys(found))


def chat_number(path: Path) -> int:
    return int(path.stem.split("_")[1])


def _time(value: str) -> datetime:
    return datetime.strptime(value, "%d.%m.%Y, %H:%M:%S").replace(tzinfo=UTC)


def load(
    *, one_timestamp: bool, now: datetime | None = None, folder: Path | None = None
) -> RealTalk:
    """The turns of all ten chats and their questions.

    Real dates: each chat is moved in time so that its last turn happened an hour before
    ``now`` (questions are asked right after the conversation, as an editor would), and
    the weeks or months between its sessions are kept. One timestamp: every turn of a
    chat happened an hour before ``now``. The variants use distinct workspace names.
    """
    folder = folder or data_dir()
    now = now or datetime.now(UTC)
    variant = "1ts" if one_timestamp else "dates"
    out = RealTalk(turns=[], questions=[])
    for path in sorted(folder.glob("Chat_*.json"), key=chat_number):
        number = chat_number(path)
        chat = json.loads(path.read_text())
        workspace = f"rt{number:02d}_{variant}"
        out.chats[workspace] = "dev" if number % 2 else "test"
        sessions = sorted(
            (int(k.split("_")[1]), v)
            for k, v in chat.items()
            if k.startswith("session_") and isinstance(v, list)
        )
        raw = [(s, turn) for s, turns in sessions for turn in turns]
        last = max(_time(turn["date_time"]) for _, turn in raw)
        shift = now - timedelta(hours=1) - last
        by_dia: dict[tuple[int, int], str] = {}
        counters: dict[int, int] = {}
        for s, turn in raw:
            text = str(turn.get("clean_text") or "").strip()
            if not text:
                continue
            session_id = f"{workspace}_s{s:02d}"
            index = counters.get(s, 0)
            counters[s] = index + 1
            occurred = now - timedelta(hours=1) if one_timestamp else _time(turn["date_time"])
            event = TurnEvent.model_validate(
                {
                    "session_id": session_id,
                    "workspace": workspace,
                    "user": USER,
                    "turn_index": index,
                    "role": "user",
                    "speaker": str(turn.get("speaker") or "")[:100],
                    "content": text,
                    "occurred_at": occurred if one_timestamp else occurred + shift,
                    "client": {"name": "bench-realtalk", "version": "1"},
                }
            )
            out.turns.append(event)
            for pair in parse_evidence(str(turn.get("dia_id", ""))):
                by_dia[pair] = event.event_id
        for n, qa in enumerate(chat.get("qa", [])):
            pairs = [p for raw_id in qa.get("evidence", []) for p in parse_evidence(str(raw_id))]
            out.evidence_total += len(pairs) or 1
            evidence = list(dict.fromkeys(by_dia[p] for p in pairs if p in by_dia))
            out.evidence_resolved += len([p for p in pairs if p in by_dia])
            if not evidence:
                out.questions_dropped += 1
                continue
            out.questions.append(
                {
                    "id": f"{workspace}_q{n:03d}",
                    "workspace": workspace,
                    "user": USER,
                    "split": out.chats[workspace],
                    "category": CATEGORIES.get(int(qa.get("category", 0)), "other"),
                    "follow_up": False,
                    "question": str(qa["question"]),
                    "conversation_context": [],
                    "evidence_event_ids": evidence,
                }
            )
    return out
