"""What ``turngraph recall|publish|status`` print, whichever path answered."""

from __future__ import annotations

import io
import json
from typing import Any

from turngraph.reply_text import print_reply

RECALL = {
    "success": True,
    "results": [
        {"text": "decision: the ingest queue uses drop_oldest when it is full, said the team "
                 "after the long meeting about queues", "kind": "decision",
         "score": {"final_score": 0.8123}},
        {"text": "preference: British spelling", "kind": "preference",
         "score": {"final_score": 0.5}},
    ],
}  # fmt: skip


def _printed(reply: dict[str, Any], op: str, as_json: bool = False) -> tuple[int, str]:
    out = io.StringIO()
    return print_reply(reply, op, as_json=as_json, out=out), out.getvalue()


def test_recall_is_a_short_listing_and_json_on_request() -> None:
    code, text = _printed(RECALL, "recall")
    lines = text.splitlines()
    assert code == 0 and len(lines) == 2
    assert lines[0].startswith(" 1. decision") and "0.81" in lines[0] and lines[0].endswith("...")
    assert "meeting" not in lines[0]  # the first words only
    assert lines[1].startswith(" 2. preference") and "British spelling" in lines[1]
    assert _printed({"success": True, "results": []}, "recall")[1] == "no memories matched\n"
    code, text = _printed(RECALL, "recall", as_json=True)
    assert code == 0 and json.loads(text) == RECALL


def test_status_failures_and_publish() -> None:
    status = {"success": True, "redis_available": True, "recall_replicas": 2,
              "queue": {"length": 3, "enqueued": 7}}  # fmt: skip
    code, text = _printed(status, "status")
    assert code == 0
    assert text.splitlines() == [
        "memory reachable; 2 recall workers answering",
        "queue: enqueued 7, length 3",
    ]
    down = {"success": True, "redis_available": False, "degraded": ["redis_unreachable"]}
    code, text = _printed(down, "status")
    assert code == 1 and text.startswith("memory not reachable")  # as its help says: 0/1
    assert _printed(down, "status", as_json=True)[0] == 1
    failure = {"success": False, "error_code": "CONSENT_REQUIRED", "user_message": "not enabled",
               "remediation": "run: turngraph consent enable"}  # fmt: skip
    assert _printed(failure, "publish") == (
        1,
        "CONSENT_REQUIRED: not enabled (run: turngraph consent enable)\n",
    )
    assert _printed({"success": True, "event_id": "e1"}, "publish") == (
        0,
        "published (event e1)\n",
    )
