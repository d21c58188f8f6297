"""The committed JSON Schema files match the pydantic models."""

from __future__ import annotations

import json

from ops.schema_export import EXPORTS, SCHEMA_DIR, render, stale_files


def test_committed_schemas_are_current() -> None:
    assert stale_files() == [], "run: python ops/schema_export.py"


def test_schemas_are_valid_json_with_ids() -> None:
    for stem, (title, _, _) in EXPORTS.items():
        schema = json.loads((SCHEMA_DIR / f"{stem}.schema.json").read_text())
        assert schema["$id"].endswith(f"{stem}.schema.json")
        assert schema["title"] == title
    turn = json.loads(render("turn_event", EXPORTS["turn_event"]))
    assert {"session_id", "workspace", "user", "content"} <= set(turn["required"])
