"""How doctor lines read, and the metrics port setting."""

from __future__ import annotations

import pytest

from turngraph.doctor.checks import Status, fail, failed, ok, skip, warn
from turngraph.settings import Settings


def test_a_failing_line_names_the_piece_and_the_fix() -> None:
    line = fail("redis.eviction", "maxmemory-policy is allkeys-lru", "set noeviction").line()
    assert line.startswith("FAIL  redis.eviction")
    assert line.endswith("maxmemory-policy is allkeys-lru (fix: set noeviction)")
    assert "fix" not in ok("queue", "0 of 10 queued").line()
    assert "(fix: purge)" in warn("queue.dead_letters", "2 jobs", "purge").line()
    assert skip("smoke", "not run").as_dict() == {
        "name": "smoke",
        "status": "skip",
        "detail": "not run",
        "fix": "",
    }


def test_only_failures_fail() -> None:
    assert not failed([ok("a", "x"), warn("b", "y", "z"), skip("c", "w")])
    assert failed([ok("a", "x"), fail("b", "y", "z")])
    assert [s.value for s in Status] == ["ok", "warn", "fail", "skip"]


@pytest.mark.parametrize(("raw", "port"), [("off", None), ("", None), ("9464", 9464), ("0", 0)])
def test_metrics_port_setting(raw: str, port: int | None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TURNGRAPH_METRICS_PORT", raw)
    assert Settings(_env_file=None).metrics_port == port


def test_a_long_name_keeps_the_columns_aligned() -> None:
    checks = [ok("redis", "up"), ok("recall.host-with-a-long-name:12345", "lag 0.1 s")]
    width = max(len(check.name) for check in checks)
    lines = [check.line(width) for check in checks]
    assert lines[0].index("up") == lines[1].index("lag 0.1 s")
