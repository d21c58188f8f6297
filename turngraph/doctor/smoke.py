"""``turngraph doctor --smoke``: the whole path once. A marker turn is published into a
doctor-only workspace (consent granted for it alone, withdrawn after), recalled through the
recall workers, then the workspace is forgotten (graph, queue, change stream)."""

from __future__ import annotations

import json
import secrets
import string
import time

from turngraph.clients import build_operations, producer_consent_endpoint
from turngraph.doctor.checks import Check, fail, ok
from turngraph.forgetting import forget
from turngraph.producers.consent import ConsentStore
from turngraph.producers.scopes import ScopeHasher
from turngraph.schemas.errors import TurngraphError
from turngraph.schemas.scopes import Scope
from turngraph.settings import Settings

__all__ = ["POLL_S", "SMOKE_SESSION", "SMOKE_USER", "SMOKE_WORKSPACE", "marker", "run_smoke"]

SMOKE_WORKSPACE = "turngraph-doctor-smoke"
"""The workspace key of the marker turn; nothing else is ever published there."""

SMOKE_SESSION = "turngraph-doctor-smoke"
SMOKE_USER = "turngraph-doctor"

POLL_S = 0.25
"""Between recall attempts while the marker travels through the queue and the graph."""


def marker() -> str:
    """A word no conversation contains (letters only, so every tokenizer keeps it whole)."""
    return "doctormarker" + "".join(secrets.choice(string.ascii_lowercase) for _ in range(12))


def run_smoke(settings: Settings, timeout_s: float) -> Check:
    consent = ConsentStore(settings.data_dir)
    workspace_id = ScopeHasher.for_data_dir(settings.data_dir).workspace(SMOKE_WORKSPACE)
    endpoint = producer_consent_endpoint(settings)
    consent.enable(workspace_id, endpoint)
    bridge = build_operations(settings, deadline_ms=2_000, note_hints=False)
    word = marker()
    session = f"{SMOKE_SESSION}-{word}"  # a new turn every run (an old one is a duplicate)
    started = time.monotonic()
    try:
        published = bridge.handle_line(
            json.dumps(
                {
                    "op": "publish",
                    "event": {
                        "session_id": session,
                        "workspace": SMOKE_WORKSPACE,
                        "user": SMOKE_USER,
                        "turn_index": 0,
                        "role": "user",
                        "content": f"turngraph doctor smoke test {word}",
                        "client": {"name": "turngraph-doctor", "version": "1"},
                    },
                }
            )
        )
        flushed = bridge.handle_line(json.dumps({"op": "flush", "timeout_s": 5}))
        if not published.get("success") or not flushed.get("success") or flushed.get("failed"):
            reason = published.get("user_message") or flushed.get("user_message") or "not sent"
            return fail("smoke", f"the marker turn was not enqueued ({reason})", "see above")
        recalled_after = _wait_for_recall(bridge, word, session, started, timeout_s)
    finally:
        bridge.close()
        cleaned = _clean_up(settings)
        consent.disable(workspace_id, endpoint)
    if recalled_after is None:
        return fail(
            "smoke",
            f"the marker turn was not recalled within {timeout_s:.0f} s",
            "check the ingest and recall workers above (and their logs)",
        )
    detail = f"published, recalled after {recalled_after:.1f} s, forgotten"
    if not cleaned:
        return fail("smoke", detail.replace(", forgotten", ", NOT forgotten"), "retry doctor")
    return ok("smoke", detail)


def _wait_for_recall(
    bridge: object, word: str, session: str, started: float, timeout_s: float
) -> float | None:
    request = json.dumps(
        {
            "op": "recall",
            "query": word,
            "workspace": SMOKE_WORKSPACE,
            "session_id": session,
            "user": SMOKE_USER,
        }
    )
    while time.monotonic() - started < timeout_s:
        reply = bridge.handle_line(request)  # type: ignore[attr-defined]
        if any(word in str(r.get("text", "")) for r in reply.get("results") or []):
            return time.monotonic() - started
        time.sleep(POLL_S)  # polling the workers' progress
    return None


def _clean_up(settings: Settings) -> bool:
    try:
        forget(settings, Scope.WORKSPACE, SMOKE_WORKSPACE)
    except TurngraphError:
        return False
    return True
