"""The embedded Redis has a generated password, kept off the command line and out of logs."""

from __future__ import annotations

import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from turngraph.embedded import RedisServer
from turngraph.embedded.redis_server import CONFIG_FILE, without_password

pytestmark = pytest.mark.integration


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RedisServer]:
    own = RedisServer(tmp_path / "redis")
    own.start()
    yield own
    own.stop()


def test_a_client_without_the_password_is_refused(server: RedisServer) -> None:
    anonymous = redis.Redis(port=server.port, socket_timeout=2)
    with pytest.raises(redis.AuthenticationError):
        anonymous.ping()
    with pytest.raises(redis.AuthenticationError):
        anonymous.config_set("dir", "/tmp")
    wrong = redis.Redis(port=server.port, password="guess", socket_timeout=2)
    with pytest.raises(redis.AuthenticationError):
        wrong.ping()
    with redis.Redis.from_url(server.url, socket_timeout=2) as conn:
        assert conn.ping()


def test_the_password_is_in_a_private_file_not_on_the_command_line(server: RedisServer) -> None:
    assert server.pid is not None
    cmdline = Path(f"/proc/{server.pid}/cmdline").read_bytes()
    assert server.password.encode() not in cmdline
    config = server.data_dir / CONFIG_FILE
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    assert len(server.password) >= 32


def test_urls_are_printed_without_the_password(server: RedisServer) -> None:
    shown = without_password(server.url)
    assert server.password not in shown and shown.endswith(f"127.0.0.1:{server.port}/0")
    assert without_password("redis://127.0.0.1:6379/0") == "redis://127.0.0.1:6379/0"
    assert without_password("redis://u:p@h:1/0") == "redis://u:***@h:1/0"
