"""Every command and option of the CLI explains itself in ``--help``."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

from turngraph.cli import build_parser


def _parsers(
    parser: argparse.ArgumentParser, path: str = "turngraph"
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, f"{path} {name}")


def test_every_command_and_option_has_help() -> None:
    missing = []
    for path, parser in _parsers(build_parser()):
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            if isinstance(action, argparse._SubParsersAction):
                helped = {choice.dest for choice in action._choices_actions if choice.help}
                missing += [f"{path} {name}" for name in action.choices if name not in helped]
                continue
            if not action.help or action.help == argparse.SUPPRESS:
                missing.append(f"{path} {'/'.join(action.option_strings) or action.dest}")
    assert missing == []


def test_bridge_help_describes_the_protocol(capsys: object) -> None:
    bridge = dict(_parsers(build_parser()))["turngraph bridge"]
    text = bridge.format_help()
    for word in ("publish", "recall", "flush", "status", "error_code", "id", "schemas/json"):
        assert word in text


def test_error_codes_print_as_their_value() -> None:
    from turngraph.schemas.bridge import BridgeErrorCode
    from turngraph.schemas.recall import ErrorCode

    assert f"{ErrorCode.DEADLINE_EXCEEDED}" == "DEADLINE_EXCEEDED"
    assert str(BridgeErrorCode.CONSENT_REQUIRED) == "CONSENT_REQUIRED"
