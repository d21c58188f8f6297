"""Tenant names, keys and qualified ids; the ACL rules and the producer's settings file."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis

from turngraph.cli.scopes_cmd import list_scopes
from turngraph.credentials import Issued, acl_rules
from turngraph.producers.scope_hints import ScopeHints
from turngraph.schemas.keys import admission_lists, operator_admission_list, tenant_admission_list
from turngraph.schemas.tenants import (
    InvalidTenantError,
    check_new_tenant,
    check_tenant,
    is_qualified,
    qualify,
    recall_requests_key,
    tenant_of_key,
    unqualify,
)
from turngraph.settings import Settings


@pytest.mark.parametrize("name", ["", "Acme", "a-b", "a:b", "a*", "x" * 33, "é"])
def test_tenant_names_that_could_escape_a_key_pattern_are_refused(name: str) -> None:
    with pytest.raises(InvalidTenantError):
        check_tenant(name)


@pytest.mark.parametrize("name", ["operator", "acme", "t1", "turns", "1", "7", "admission"])
def test_a_new_tenant_never_shares_an_admission_list_with_the_operator(name: str) -> None:
    operators = {
        key
        for queue in ("turns", "ingest", *(str(i) for i in range(10)))
        for key in admission_lists(operator_admission_list(queue))
    }
    try:
        tenant = check_new_tenant(name)
    except InvalidTenantError as exc:
        assert "reserved" in str(exc) and check_tenant(name) == name  # valid, but reserved
        assert operators & set(admission_lists(tenant_admission_list(name)))  # why
        return
    assert not operators & set(admission_lists(tenant_admission_list(tenant)))


def test_qualified_keys_are_unambiguous() -> None:
    assert qualify("acme", "w_1") == "t-acme-w_1" and is_qualified("t-acme-w_1")
    assert not is_qualified("w_1") and not is_qualified("t_abc")
    assert qualify("b", qualify("a", "k")) != qualify("a", "k")
    assert unqualify("acme", "t-acme-e_1") == "e_1" and unqualify("acme", "t-other-e") != "e"
    assert tenant_of_key(recall_requests_key("acme")) == "acme"
    assert tenant_of_key("turngraph:recall:requests") is None
    assert tenant_of_key("turngraph:t:BAD:x") is None


def test_acl_rules_hold_the_hash_the_pattern_and_only_producer_commands() -> None:
    rules = acl_rules("acme", "s3cret")
    assert "s3cret" not in " ".join(rules)
    assert rules[:2] == ["reset", "on"] and rules[2].startswith("#") and len(rules[2]) == 65
    assert "~turngraph:t:acme:*" in rules and "-@all" in rules and "resetchannels" in rules
    assert not {"+eval", "+hset", "+xread", "+@all", "+multi"} & set(rules)


def test_the_producer_settings_name_the_tenant_user_and_the_server() -> None:
    issued = Issued("acme", "tenant-acme", "a/b+c", "acl_file")
    url = issued.redis_url("redis://:admin@redis.example:6380/2")
    parsed = redis.connection.parse_url(url)
    assert (parsed["username"], parsed["password"]) == ("tenant-acme", "a/b+c")
    assert (parsed["host"], parsed["port"], parsed["db"]) == ("redis.example", 6380, 2)
    assert "admin" not in url
    assert issued.env_lines("redis://h:1/0").endswith("TURNGRAPH_TENANT=acme\n")


def test_scopes_on_a_tenant_machine_come_from_local_hints(tmp_path: Path) -> None:
    hints = ScopeHints(tmp_path)
    hints.note(workspace_id="w_1", raw_workspace="/home/me/project", session_id="s_1")
    settings = Settings(_env_file=None, data_dir=tmp_path, tenant="acme")  # type: ignore[call-arg]
    (row,) = list_scopes(settings, here="w_1")
    assert (row.id, row.folder, row.here) == ("w_1", "project", True)
    assert [session.id for session in row.sessions] == ["s_1"]
