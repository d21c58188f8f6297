"""Fetching and configuring Neo4j: the tools it needs, what Maven is asked for, the
initial-user file and the settings written for the server."""

from __future__ import annotations

import hashlib
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from turngraph.embedded import neo4j_fetch
from turngraph.embedded.neo4j_server import HASH_ITERATIONS, initial_user_line, neo4j_conf

POM_NS = {"m": "http://maven.apache.org/POM/4.0.0"}


def test_without_java_one_line_names_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(neo4j_fetch.Neo4jUnavailableError) as raised:
        neo4j_fetch.find_tools(need_maven=True)
    message = str(raised.value)
    assert "\n" not in message
    assert "Java 17+" in message and "apt-get install" in message


def test_without_maven_one_line_names_the_fix(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A folder with only a Java 17 stand-in that prints what `java -version` prints.
    java = tmp_path / "java"
    java.write_text("#!/bin/sh\necho 'openjdk version \"17.0.15\" 2025-04-15' >&2\n")
    java.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(neo4j_fetch.Neo4jUnavailableError) as raised:
        neo4j_fetch.fetch(tmp_path / "data")
    assert "Maven" in str(raised.value) and "apt-get install maven" in str(raised.value)
    assert neo4j_fetch.fetched_lib(tmp_path / "data") is None


def test_an_old_java_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    java = tmp_path / "java"
    java.write_text("#!/bin/sh\necho 'java version \"1.8.0_392\"' >&2\n")
    java.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(neo4j_fetch.Neo4jUnavailableError, match="is 8"):
        neo4j_fetch.find_tools(need_maven=False)


def test_the_pom_asks_for_the_versions_the_code_expects() -> None:
    root = ET.parse(neo4j_fetch.POM).getroot()
    wanted = {
        (
            d.findtext("m:groupId", namespaces=POM_NS),
            d.findtext("m:artifactId", namespaces=POM_NS),
        ): d.findtext("m:version", namespaces=POM_NS)
        for d in root.iterfind("m:dependencies/m:dependency", POM_NS)
    }
    assert wanted == {
        ("org.neo4j", "neo4j"): neo4j_fetch.NEO4J_VERSION,
        ("org.neo4j.client", "neo4j-browser"): neo4j_fetch.BROWSER_VERSION,
    }


def test_initial_user_line_is_neo4js_iterated_salted_sha256() -> None:
    line = initial_user_line("neo4j", "a-generated-password")
    user, credential, flags = line.rstrip("\n").split(":")
    algorithm, digest, salt, iterations = credential.split(",")
    assert (user, algorithm, int(iterations), flags) == ("neo4j", "SHA-256", HASH_ITERATIONS, "")
    expected = hashlib.sha256(bytes.fromhex(salt) + b"a-generated-password").digest()
    for _ in range(HASH_ITERATIONS - 1):
        expected = hashlib.sha256(expected).digest()
    assert digest == expected.hex()
    assert initial_user_line("neo4j", "a-generated-password") != line  # a fresh salt


def test_the_server_listens_on_loopback_and_logs_no_queries(tmp_path: Path) -> None:
    conf = dict(line.split("=", 1) for line in neo4j_conf(tmp_path, 7001, 7002).splitlines())
    assert conf["server.bolt.listen_address"] == "127.0.0.1:7001"
    assert conf["server.http.listen_address"] == "127.0.0.1:7002"
    assert conf["server.default_listen_address"] == "127.0.0.1"
    assert conf["db.logs.query.enabled"] == "OFF"  # parameters carry chat text
    assert conf["dbms.usage_report.enabled"] == "false"
    assert conf["dbms.security.auth_enabled"] == "true"
