# ruff: noqa: E501  (hand-written conversation text reads better unwrapped)
"""Scenarios that happen in one workspace only (no slots), for variety beyond the shared
templates: a decision that replaces an earlier one, a protocol bug, a leak hunt, a
privacy decision. Same format as :mod:`bench.retrieval_scenarios`."""

from __future__ import annotations

from bench.retrieval_scenarios import Scenario

WORKSPACE_SCENARIOS: dict[str, list[Scenario]] = {
    "ws_ledgerline": [
        {
            "name": "currency_rounding",
            "turns": [
                ("user", "Invoice totals are off by one cent for some EUR invoices."),
                (
                    "assistant",
                    "Rounding each line and then summing accumulates errors. Sum the exact Decimal amounts and round once at the end with ROUND_HALF_EVEN.",
                ),
                (
                    "user",
                    "Finance says the PDF needs per-line rounding though, customers add up the lines themselves and complain when the sum differs.",
                ),
                (
                    "assistant",
                    "Then round each line with ROUND_HALF_UP and derive the total from the rounded lines; book the difference to a separate adjustment entry so the ledger still balances.",
                ),
                (
                    "user",
                    "decision: per-line ROUND_HALF_UP, total = sum of rounded lines, the difference goes to a rounding_adjustment ledger entry. This replaces the round-once approach.",
                ),
            ],
            "questions": [
                {"q": "how are money amounts on invoices rounded nowadays?", "evidence": [4]},
                {"q": "why did we move away from rounding only the grand total?", "evidence": [2]},
                {
                    "q": "where does the leftover cent end up?",
                    "evidence": [3, 4],
                    "context": [
                        ("user", "the EUR invoices that were a cent off"),
                        (
                            "assistant",
                            "Invoice totals were off by one cent because of how amounts were rounded.",
                        ),
                    ],
                },
            ],
        },
        {
            "name": "webhook_signature",
            "turns": [
                ("user", "Partners complain our webhook signatures fail to verify."),
                (
                    "assistant",
                    "We sign the JSON after re-serialising it, so key order and whitespace differ from the bytes we send. Sign the exact raw body bytes instead.",
                ),
                ("user", "Should we also add a timestamp against replays?"),
                (
                    "assistant",
                    "Yes: sign 'timestamp.body' with HMAC-SHA256, send it in the X-Ledger-Signature header, and tell partners to reject anything older than five minutes.",
                ),
            ],
            "questions": [
                {"q": "why couldn't partners validate our callbacks?", "evidence": [1]},
                {"q": "what's the tolerance window for stale deliveries?", "evidence": [3]},
                {
                    "q": "which header carries it?",
                    "evidence": [3],
                    "context": [
                        ("user", "how do we sign outgoing webhooks?"),
                        ("assistant", "With HMAC-SHA256 over the timestamp and the raw body."),
                    ],
                },
            ],
        },
    ],
    "ws_lumen": [
        {
            "name": "memory_leak",
            "turns": [
                ("user", "The language server's memory grows to 3 GB after a day of editing."),
                (
                    "assistant",
                    "Take two heap snapshots an hour apart and diff them; look for retained document versions.",
                ),
                (
                    "user",
                    "The diff shows thousands of old TextDocument versions kept alive by the diagnostics cache.",
                ),
                (
                    "assistant",
                    "The cache is keyed by document version instead of URI, so every keystroke adds an entry. Key it by URI and keep only the latest version.",
                ),
                ("user", "After keying by URI, memory stays flat at about 400 MB over two days."),
            ],
            "questions": [
                {"q": "what was eating RAM in the server process?", "evidence": [2, 3]},
                {"q": "how did we find out what was holding on to it?", "evidence": [1]},
                {
                    "q": "and where does it level off now?",
                    "evidence": [4],
                    "context": [
                        ("user", "the language server memory growth problem"),
                        ("assistant", "The diagnostics cache kept old document versions alive."),
                    ],
                },
            ],
        },
        {
            "name": "telemetry",
            "turns": [
                ("user", "Should the extension send usage telemetry?"),
                (
                    "assistant",
                    "Only if it respects the editor's global telemetry setting and sends no file paths or code.",
                ),
                (
                    "user",
                    "decision: telemetry only through the VS Code telemetry API (it honours telemetry.telemetryLevel), events limited to feature names and durations, no paths, no code, no workspace names.",
                ),
                (
                    "assistant",
                    "I'd also document every event in a TELEMETRY.md so users can audit it.",
                ),
            ],
            "questions": [
                {
                    "q": "what information may we gather about how people use the extension?",
                    "evidence": [2],
                },
                {"q": "where are the collected events listed for users to check?", "evidence": [3]},
                {
                    "q": "does it obey the user's opt-out?",
                    "evidence": [2],
                    "context": [
                        ("user", "what did we decide about usage telemetry?"),
                        ("assistant", "Telemetry goes through the VS Code telemetry API only."),
                    ],
                },
            ],
        },
    ],
}
"""Scenarios keyed by the workspace they happen in."""
