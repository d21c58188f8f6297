"""No ``internal error`` for anything a user can type or configure (property tests).

Three properties, each over every command where commands are concerned:

- a URL setting is either refused when the settings are read, naming the setting and the
  form expected (never the value), or accepted by the client library that will use it:
  no URL gets past the settings to fail inside redis-py, the graph driver or urllib with
  a bare ``ValueError`` (``redis://localhost:notaport/0`` did, in every command);
- every command, given a malformed setting (URL, port, path, number), ends in one line
  that names the setting, and the bridge answers each request with its error contract
  instead of exiting unanswered;
- every command's arguments, valid or not, end in a result or a usage error that shows
  that command's own usage (``recall --frobnicate`` showed the top-level usage).

Commands run in this process through :func:`turngraph.cli.main`, with the data folder,
the working folder and ``HOME`` in a throw-away folder; the settings are malformed, so
nothing reaches a server.
"""

from __future__ import annotations

import io
import json
import re
import string
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import neo4j
import pydantic
import pytest
import redis
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from turngraph.cli import ALL, build_parser, main, parse_arguments
from turngraph.cli.failures import describe_failure
from turngraph.settings import URL_SCHEMES, Settings

FIELDS = {field: f"TURNGRAPH_{field.upper()}" for field in URL_SCHEMES}

_HOST_CHARS = string.ascii_letters + string.digits + ".-_[]:@%"


def _url_like(schemes: frozenset[str]) -> st.SearchStrategy[str]:
    """What a person types or pastes where a URL goes: a known or unknown scheme, user
    info, a host (IPv6 brackets too), a port that may be anything, a path and a query."""
    scheme = st.sampled_from([*sorted(schemes), "http", "redis", "bolt", "localhost", ""])
    host = st.one_of(
        st.sampled_from(["localhost", "127.0.0.1", "[::1]", "[::1", "", "h_st", "a b"]),
        st.text(_HOST_CHARS, max_size=12),
    )
    port = st.one_of(
        st.integers(-5, 99_999).map(str),
        st.sampled_from(["", "notaport", "6379a", "+1", " 1", "١٢", "1:2", "0x10"]),
        st.text(string.printable, max_size=6),
    )
    path = st.one_of(
        st.sampled_from(["", "/", "/0", "/15", "/abc", "/0/1", "/v1", "//x"]),
        st.text(string.printable, max_size=8).map(lambda p: "/" + p),
    )
    query = st.one_of(
        st.just(""),
        st.sampled_from(["?db=x", "?db=3", "?socket_timeout=abc", "?foo=bar", "?protocol=9"]),
        st.text(string.ascii_letters + "=&", max_size=10).map(lambda q: "?" + q),
    )
    user = st.sampled_from(["", "user:pw@", ":pw@", "u@", ":p@ss@"])
    structured = st.builds(
        lambda s, u, h, colon, p, pa, q: f"{s}://{u}{h}{':' + p if colon else ''}{pa}{q}",
        scheme,
        user,
        host,
        st.booleans(),
        port,
        path,
        query,
    )
    return st.one_of(structured, st.text(string.printable, max_size=30))


def _accepted_by_its_client(field: str, url: str) -> None:
    """Raises when the library that uses ``field`` refuses ``url`` (what the settings
    must have refused instead)."""
    parts = urlsplit(url)
    assert parts.port != 0  # urllib: raises ValueError for a port that is not one
    if field == "redis_url":
        redis.ConnectionPool.from_url(url).make_connection()  # parses; connects nowhere
    elif field == "graph_uri":
        neo4j.GraphDatabase.driver(url, auth=("neo4j", "x")).close()
    else:
        assert parts.scheme in ("http", "https") and parts.hostname


@pytest.mark.parametrize("field", sorted(URL_SCHEMES))
@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_a_url_setting_is_refused_by_name_or_taken_by_its_client(
    field: str, data: st.DataObject
) -> None:
    url = data.draw(_url_like(URL_SCHEMES[field][0]))
    try:
        Settings(_env_file=None, **{field: url})
    except pydantic.ValidationError as refused:
        line = describe_failure(refused)
        assert line.startswith(f"error: invalid {FIELDS[field]}: "), line
        # the value can hold a password; a value that is a piece of the line's own words
        # (``TURN`` of TURNGRAPH_REDIS_URL, drawn once) is not an echo of it
        wording = f"error: invalid {FIELDS[field]}: expected {URL_SCHEMES[field][1]}"
        if len(url.strip()) > 3 and url.strip() not in wording:
            assert url.strip() not in line
        return
    if not url.strip():
        return  # empty: the setting is unset
    _accepted_by_its_client(field, url.strip())


@pytest.fixture
def sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No configured service, and every file a command could write in ``tmp_path``."""
    import os

    for key in list(os.environ):
        if key.startswith("TURNGRAPH_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("TURNGRAPH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home" / ".config"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a-file").write_text("not a folder")
    return tmp_path


def _leaf_parsers() -> Iterator[tuple[list[str], object]]:
    """Every command, subcommands included, with the words that name it."""
    import argparse

    def walk(
        words: list[str], parser: argparse.ArgumentParser
    ) -> Iterator[tuple[list[str], object]]:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            yield words, parser
            return
        for name, sub in subs[0].choices.items():
            yield from walk([*words, name], sub)

    yield from walk([], build_parser(ALL))


LEAVES = {" ".join(words): parser for words, parser in _leaf_parsers()}
"""``"queue status"``, ``"recall"``… to their parser."""


def _minimal_argv(words: list[str]) -> list[str]:
    """The command with its required arguments filled in (a choice's first value, a
    number where a number is wanted, an existing file where a path is), one option of a
    required group of options included."""
    import argparse

    parser = LEAVES[" ".join(words)]
    assert isinstance(parser, argparse.ArgumentParser)
    group_firsts = {
        id(group._group_actions[0]) for group in parser._mutually_exclusive_groups if group.required
    }
    argv = list(words)
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        if action.option_strings and not (action.required or id(action) in group_firsts):
            continue
        if action.choices:
            value = str(next(iter(action.choices)))
        elif action.type in (int, float):
            value = "0"
        else:
            value = "a-file" if action.dest in ("path", "file") else "s1"
        if action.option_strings:
            argv.append(action.option_strings[0])
            if action.nargs != 0:
                argv.append(value)
        elif action.nargs != "?" or id(action) in group_firsts:
            argv.append(value)
    return argv


MALFORMED_SETTINGS: dict[str, st.SearchStrategy[str]] = {
    "TURNGRAPH_REDIS_URL": st.builds(
        "redis://{}:{}/0".format,
        st.sampled_from(["localhost", "127.0.0.1"]),
        st.sampled_from(["notaport", "99999", "-1", "0", "6379x"]),
    ),
    "TURNGRAPH_GRAPH_URI": st.sampled_from(
        ["bolt://localhost:notaport", "localhost:7687", "bolt://[::1", "bolt://h:1?x=y"]
    ),
    "TURNGRAPH_LLM_BASE_URL": st.sampled_from(["http://h:port/v1", "http:///v1", "h:1/v1"]),
    "TURNGRAPH_EMBEDDING_BASE_URL": st.sampled_from(["https://h:70000/v1", "ftp://h/v1"]),
    "TURNGRAPH_METRICS_PORT": st.sampled_from(["http", "70000", "-1", "9090x"]),
    "TURNGRAPH_MAX_QUEUE_LENGTH": st.sampled_from(["0", "lots", "1.5", "-3"]),
    "TURNGRAPH_HOOK_DEADLINE_MS": st.sampled_from(["10", "fast", "1e9"]),
    "TURNGRAPH_TENANT": st.sampled_from(["Acme Corp", "a" * 40, "x/y"]),
    "TURNGRAPH_DROP_POLICY": st.sampled_from(["drop_all", "1"]),
}
"""Settings a person can get wrong, each with values that cannot work. (A data folder that
cannot be used: ``tests/integration/test_user_errors.py``.)"""


def _run(
    argv: list[str], capsys: pytest.CaptureFixture[str], stdin: str = ""
) -> tuple[int, str, str]:
    old_stdin = sys.stdin
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin.encode()), encoding="utf-8")
    try:
        code = main(argv)
    except SystemExit as exited:
        code = exited.code if isinstance(exited.code, int) else 2
    finally:
        sys.stdin = old_stdin
    out = capsys.readouterr()
    return code, out.out, out.err


COMMAND_NAMES = sorted(n for n in LEAVES if n.split()[0] not in {"hook"})
"""``hook`` is left out: it answers editors and always exits 0 (its errors are counted,
``tests/unit/test_hook_runner.py``)."""


@pytest.mark.parametrize("command", COMMAND_NAMES)
@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_every_command_names_a_malformed_setting_in_one_line(
    command: str,
    data: st.DataObject,
    sandbox: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    name = data.draw(st.sampled_from(sorted(MALFORMED_SETTINGS)), label="setting")
    value = data.draw(MALFORMED_SETTINGS[name], label="value")
    request = json.dumps({"id": "r1", "op": "status"}) + "\n"
    with monkeypatch.context() as env:
        env.setenv(name, value)
        code, out, err = _run(_minimal_argv(command.split()), capsys, stdin=request)
    output = out + err
    assert "internal error" not in output and "Traceback" not in output, output
    errors = [line for line in err.splitlines() if "error" in line]
    assert len(errors) <= 1, output
    if code == 1 and errors:  # 2: a usage error; 0: a command that needs no setting
        assert name in errors[0], output
        assert value not in errors[0] or len(value) < 3, output  # never the value
    if command == "bridge":  # answered, not exited without a word
        reply = json.loads(out)
        assert reply["id"] == "r1" and reply["error_code"] == "BACKEND_UNAVAILABLE"
        assert name in reply["user_message"] and code == 1


def _option_values(action: object) -> st.SearchStrategy[str]:
    choices = getattr(action, "choices", None)
    anything = st.one_of(
        st.sampled_from(["0", "-1", "1e309", "nan", "inf", "", "x", "é", "9" * 20, "a:b"]),
        st.integers(-(10**6), 10**12).map(str),
        st.text(string.ascii_letters + string.digits + "-_.:%", max_size=12),
    ).filter(lambda value: ".." not in value)
    if choices:
        return st.one_of(st.sampled_from([str(c) for c in choices]), anything)
    return anything


@pytest.mark.parametrize("command", sorted(LEAVES))
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_every_commands_arguments_parse_or_show_that_commands_usage(
    command: str, data: st.DataObject
) -> None:
    import argparse
    import contextlib

    parser = LEAVES[command]
    assert isinstance(parser, argparse.ArgumentParser)
    options = [a for a in parser._actions if a.option_strings and a.dest != "help"]
    argv = _minimal_argv(command.split())
    for action in data.draw(
        st.lists(st.sampled_from(options), max_size=4) if options else st.just([])
    ):
        argv.append(action.option_strings[-1])
        if action.nargs != 0:
            argv.append(data.draw(_option_values(action)))
    unknown = data.draw(st.booleans(), label="unknown flag")
    if unknown:
        flag = "--" + data.draw(st.text(string.ascii_lowercase, min_size=3, max_size=10))
        known = [name for o in options for name in o.option_strings]
        assume(not any(name.startswith(flag) for name in known))  # argparse's abbreviations
        argv.append(flag)
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            parse_arguments(argv)
            assert not unknown, argv
            return
        except SystemExit as exited:
            assert exited.code == 2, err.getvalue()
    said = err.getvalue()
    assert "internal error" not in said and "Traceback" not in said
    assert re.search(rf"^usage: turngraph {re.escape(command)}\b", said, re.M), said
    assert said.rstrip().splitlines()[-1].startswith(f"turngraph {command}: error: "), said


def test_an_unknown_flag_shows_the_subcommands_usage(capsys: pytest.CaptureFixture[str]) -> None:
    # `turngraph recall --frobnicate x` printed `usage: turngraph [-h] COMMAND ...`.
    code, _, err = _run(["recall", "--frobnicate", "x"], capsys)
    assert code == 2
    assert err.startswith("usage: turngraph recall ")
    assert err.rstrip().endswith("turngraph recall: error: unrecognized arguments: --frobnicate")
