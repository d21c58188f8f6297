"""Every command and option of the CLI explains itself in ``--help``."""

from __future__ import annotations

import argparse
import subprocess
import sys
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
    from turngraph.schemas.errors import ErrorCode

    assert f"{ErrorCode.DEADLINE_EXCEEDED}" == "DEADLINE_EXCEEDED"
    assert str(ErrorCode.CONSENT_REQUIRED) == "CONSENT_REQUIRED"


def test_the_light_listing_matches_the_commands_modules() -> None:
    """``turngraph --help`` lists ``COMMANDS`` without importing the modules: the one-line
    help there is the one each module registers."""
    from turngraph.cli import COMMANDS

    listed = {name: text for _, commands in COMMANDS for name, text in commands.items()}
    registered = {}
    for action in build_parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            registered = {choice.dest: choice.help for choice in action._choices_actions}
    assert registered == listed


def test_every_command_opens_its_own_help_with_what_it_does() -> None:
    for path, parser in _parsers(build_parser()):
        assert parser.description, f"{path} --help says nothing about what it does"


def test_help_imports_no_command_module() -> None:
    code = (
        "import sys, contextlib, io\n"
        "from turngraph.cli import main\n"
        "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['--help'])\n"
        "heavy = {'redis', 'neo4j', 'openai', 'mcp', 'numpy', 'pydantic', 'structlog'}\n"
        "print(sorted(heavy & set(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr
