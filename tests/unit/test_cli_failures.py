"""A command's typed failure is the bridge's error reply (one builder), or one line."""

from __future__ import annotations

import argparse
import json

import pytest

from turngraph.cli.failures import report_failure
from turngraph.schemas.bridge_common import ErrorReply


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
