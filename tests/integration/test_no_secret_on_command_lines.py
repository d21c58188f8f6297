"""No process the project starts carries a secret on its command line (world-readable in
/proc): the embedded servers read their passwords from files of mode 600."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tests.support.leftovers import MARKER, tagged_processes
from turngraph.embedded import ServiceEndpoints
from turngraph.embedded.graph_server import PASSWORD_FILE, GraphServer

pytestmark = pytest.mark.integration


def test_the_embedded_servers_passwords_are_on_no_command_line(
    embedded: ServiceEndpoints, tmp_path_factory: pytest.TempPathFactory
) -> None:
    redis_password = embedded.redis_url.split(":")[2].split("@")[0]
    assert redis_password and embedded.graph_password
    folders = (tmp_path_factory.getbasetemp().resolve(),)
    started = tagged_processes(os.environ[MARKER], exclude={os.getpid()}, folders=folders)
    assert any("ArcadeDBServer" in cmd for cmd in started.values())
    assert any("valkey-server" in cmd for cmd in started.values())
    for cmd in started.values():
        assert embedded.graph_password not in cmd
        assert redis_password not in cmd


def test_the_graph_password_file_is_private(tmp_path: Path) -> None:
    server = GraphServer(tmp_path / "graph")
    mode = stat.S_IMODE((tmp_path / "graph" / PASSWORD_FILE).stat().st_mode)
    assert mode == 0o600 and server.password
