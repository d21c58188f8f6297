"""Export the wire models as JSON Schema files, for producers not written in Python.

python ops/schema_export.py          # rewrite schemas/json/*.schema.json
python ops/schema_export.py --check  # exit 1 if a committed file is out of date
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Literal, Union

from pydantic import BaseModel, TypeAdapter

from turngraph.schemas.bridge import REPLY_MODELS, REQUEST_MODELS, BridgeRequest, ErrorReply
from turngraph.schemas.recall import RecallRequest, RecallResponse
from turngraph.schemas.turn_event import TurnEvent

__all__ = [
    "EXPORTS", "SCHEMA_DIR", "SCHEMA_ID_BASE", "Mode", "main", "render", "stale_files",
    "write_all",
]  # fmt: skip

SCHEMA_DIR = Path(__file__).resolve().parents[1] / "schemas" / "json"
"""Where the exported files live (committed)."""


def _reply_union(op: str) -> Any:
    return Union[REPLY_MODELS[op]]  # noqa: UP007 (a runtime union of a tuple of models)


Mode = Literal["validation", "serialization"]

EXPORTS: dict[str, tuple[str, Any, Mode]] = {
    "turn_event": ("TurnEvent", TurnEvent, "validation"),
    "recall_request": ("RecallRequest", RecallRequest, "validation"),
    "recall_response": ("RecallResponse", RecallResponse, "serialization"),
    # What editors send to `turngraph bridge` and get back (raw scope keys, echoed id).
    "bridge_request": ("BridgeRequest", BridgeRequest, "validation"),
    **{
        f"bridge_{op}_request": (f"Bridge{op.title()}Request", model, "validation")
        for op, model in REQUEST_MODELS.items()
    },
    **{
        f"bridge_{op}_reply": (f"Bridge{op.title()}Reply", _reply_union(op), "serialization")
        for op in REPLY_MODELS
    },
    # The answer to a line that has no known op (or is not JSON, or not UTF-8).
    "bridge_error_reply": ("BridgeErrorReply", ErrorReply, "serialization"),
}
"""File stem -> (title, model or union type, JSON Schema mode)."""

SCHEMA_ID_BASE = "https://turngraph.dev/schemas/"
"""Prefix of each schema's ``$id``."""


def render(stem: str, export: tuple[str, Any, Mode]) -> str:
    """The JSON Schema text of one export, as committed: validation mode for what clients
    send, serialization mode for what they receive."""
    title, type_, mode = export
    if isinstance(type_, type) and issubclass(type_, BaseModel):
        schema = type_.model_json_schema(mode=mode)
    else:
        schema = TypeAdapter(type_).json_schema(mode=mode)
        if "discriminator" in schema:
            # Every branch is an object with a constant ``op``; validators such as ajv want
            # the type stated and find each branch by that constant (no OpenAPI mapping).
            schema["type"] = "object"
            schema["discriminator"] = {"propertyName": schema["discriminator"]["propertyName"]}
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"{SCHEMA_ID_BASE}{stem}.schema.json",
        **schema,
        "title": title,
    }
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def stale_files(directory: Path = SCHEMA_DIR) -> list[Path]:
    """Committed schema files that differ from what the models export now."""
    return [
        directory / f"{stem}.schema.json"
        for stem, export in EXPORTS.items()
        if not (directory / f"{stem}.schema.json").exists()
        or (directory / f"{stem}.schema.json").read_text() != render(stem, export)
    ]


def write_all(directory: Path = SCHEMA_DIR) -> list[Path]:
    """Write every schema file; returns the paths."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for stem, export in EXPORTS.items():
        path = directory / f"{stem}.schema.json"
        path.write_text(render(stem, export))
        paths.append(path)
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if a file is out of date")
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_files()
        for path in stale:
            print(f"out of date: {path} (run python ops/schema_export.py)")
        return 1 if stale else 0
    for path in write_all():
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
