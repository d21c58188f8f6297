"""Regenerate the committed ``ontology.ttl``: ``python -m turngraph.schemas.ontology.export``.

``--check`` exits with status 1 when the committed file is out of date (for CI).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from turngraph.schemas.ontology.catalog import ONTOLOGY
from turngraph.schemas.ontology.turtle import to_turtle

__all__ = ["TURTLE_PATH", "main"]

TURTLE_PATH = Path(__file__).with_name("ontology.ttl")
"""Where the exported ontology lives, next to its declaration."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m turngraph.schemas.ontology.export")
    parser.add_argument("--check", action="store_true", help="fail if ontology.ttl is stale")
    parser.add_argument("--output", type=Path, default=TURTLE_PATH)
    args = parser.parse_args(argv)
    text = to_turtle(ONTOLOGY)
    if args.check:
        current = args.output.read_text(encoding="utf-8") if args.output.exists() else ""
        if current != text:
            print(f"{args.output} is out of date; run python -m turngraph.schemas.ontology.export")
            return 1
        print(f"{args.output} is current (ontology version {ONTOLOGY.version})")
        return 0
    args.output.write_text(text, encoding="utf-8")
    print(f"wrote {args.output} (ontology version {ONTOLOGY.version})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
