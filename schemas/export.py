"""Export the wire models as JSON Schema files, for producers not written in Python.

python -m schemas.export          # rewrite schemas/json/*.schema.json
python -m schemas.export --check  # exit 1 if a committed file is out of date
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pydantic import BaseModel

from schemas.recall import RecallRequest, RecallResponse
from schemas.turn_event import TurnEvent

SCHEMA_DIR = Path(__file__).with_name("json")
"""Where the exported files live (committed)."""

EXPORTS: dict[str, type[BaseModel]] = {
    "turn_event": TurnEvent,
    "recall_request": RecallRequest,
    "recall_response": RecallResponse,
}
"""File stem -> model."""

SCHEMA_ID_BASE = "https://turngraph.dev/schemas/"
"""Prefix of each schema's ``$id``."""


def render(stem: str, model: type[BaseModel]) -> str:
    """The JSON Schema text of one model, as committed (validation mode: what producers send)."""
    schema = model.model_json_schema(mode="validation")
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"{SCHEMA_ID_BASE}{stem}.schema.json",
        **schema,
    }
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def stale_files(directory: Path = SCHEMA_DIR) -> list[Path]:
    """Committed schema files that differ from what the models export now."""
    return [
        directory / f"{stem}.schema.json"
        for stem, model in EXPORTS.items()
        if not (directory / f"{stem}.schema.json").exists()
        or (directory / f"{stem}.schema.json").read_text() != render(stem, model)
    ]


def write_all(directory: Path = SCHEMA_DIR) -> list[Path]:
    """Write every schema file; returns the paths."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for stem, model in EXPORTS.items():
        path = directory / f"{stem}.schema.json"
        path.write_text(render(stem, model))
        paths.append(path)
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if a file is out of date")
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_files()
        for path in stale:
            print(f"out of date: {path} (run python -m schemas.export)")
        return 1 if stale else 0
    for path in write_all():
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
