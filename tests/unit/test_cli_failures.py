"""A command's typed failure is the bridge's error reply (one builder), or one line."""

from __future__ import annotations

import argparse
import json

import pytest
from neo4j.exceptions import Neo4jError

from turngraph.cli.failures import describe_failure, report_failure
from turngraph.schemas.bridge_common import ErrorReply
from turngraph.schemas.errors import ConfigurationError
from turngraph.schemas.scopes import Scope
from turngraph.settings import Settings


def test_with_json_a_failure_is_the_bridges_error_reply(capsys: pytest.CaptureFixture[str]) -> None:
    code = report_failure(argparse.Namespace(json=True), "NOT_FOUND", "no tenant é", "see list")
    out = capsys.readouterr()
    assert code == 1 and out.err == "" and out.out.isascii()
    reply = json.loads(out.out)
    assert reply == {
        "success": False,
        "error_code": "NOT_FOUND",
        "user_message": "no tenant é",
        "remediation": "see list",
    }
    ErrorReply.model_validate(reply)


def test_without_json_it_is_one_line_and_a_code_must_be_known(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert report_failure(argparse.Namespace(), "NOT_FOUND", "gone", "see list") == 1
    assert capsys.readouterr().err == "error: gone (see list)\n"
    with pytest.raises(ValueError, match="NOT_A_CODE"):
        report_failure(argparse.Namespace(json=True), "NOT_A_CODE", "m", "r")


@pytest.mark.parametrize("scope", list(Scope))
def test_a_tenant_asked_to_forget_is_told_a_command_that_runs(scope: Scope) -> None:
    # It said `turngraph forget --tenant <tenant> --hashed <id>`, which argparse refuses
    # (--scope is required) and which named no tenant.
    from turngraph.cli import build_parser
    from turngraph.forgetting import forget

    with pytest.raises(ConfigurationError) as refused:
        forget(Settings(tenant="acme", redis_url="redis://127.0.0.1:1/0"), scope, "x")
    command = str(refused.value).split("`")[1].replace("<id>", "w_" + "0" * 32)
    args = build_parser().parse_args(command.split()[1:])
    assert (args.scope, args.tenant, args.yes) == (scope.value, "acme", True)


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["summarize", "s1", "--last", "0"], "between 1 and 500"),
        (["summarize", "s1", "--last", "9999"], "between 1 and 500"),
        (["recap", "s1", "--budget", "-1"], "between 100 and 20000"),
        (["summarize", "s1", "--last", "ten"], "not a whole number"),
    ],
)
def test_distill_commands_refuse_counts_out_of_range_as_usage_errors(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # `turngraph summarize s --last 0` printed "internal error: ValueError" (exit 1).
    from turngraph.cli import build_parser

    with pytest.raises(SystemExit) as usage:
        build_parser().parse_args(argv)
    assert usage.value.code == 2 and says in capsys.readouterr().err


def test_a_graph_servers_refusal_names_its_status_code_never_its_message() -> None:
    """A worker that exited on a raw driver error said only `answered ClientError`
    (bench.chaos on Neo4j); the status code names the cause, the message may quote
    parameters (chat text)."""
    refused = Neo4jError._hydrate_neo4j(  # what the driver builds from the server's FAILURE
        code="Neo.ClientError.Schema.EquivalentSchemaRuleAlreadyExists",
        message="rule with content 'secret words' exists",
    )
    line = describe_failure(refused)
    assert line == (
        "error: the graph server answered ClientError "
        "(Neo.ClientError.Schema.EquivalentSchemaRuleAlreadyExists)"
    ), line
