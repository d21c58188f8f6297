"""The workers' configuration fingerprint: what changes it and what never reaches it."""

from __future__ import annotations

from turngraph.settings import Settings
from turngraph.worker_config import config_fingerprint


def _settings(**values: object) -> Settings:
    base: dict[str, object] = {
        "llm_base_url": "http://127.0.0.1:8080/v1",
        "llm_model": "qwen",
        "embedding_provider": "none",
    }
    return Settings.model_validate({**base, **values})


def test_what_the_workers_answer_with_changes_it() -> None:
    reference = config_fingerprint(_settings())
    for change in (
        {"llm_base_url": "http://127.0.0.1:8081/v1"},
        {"llm_base_url": "http://other-host:8080/v1"},
        {"llm_model": "llama"},
        {"llm_output_mode": "json_object"},
        {"embedding_provider": "openai", "embedding_base_url": "http://127.0.0.1:9/v1"},
        {"llm_base_url": None},
    ):
        assert config_fingerprint(_settings(**change)) != reference, change


def test_secrets_and_url_paths_do_not_change_it() -> None:
    reference = config_fingerprint(_settings())
    assert config_fingerprint(_settings(llm_api_key="sk-one")) == reference
    assert config_fingerprint(_settings(llm_base_url="http://127.0.0.1:8080/api")) == reference
    assert len(reference) == 12 and int(reference, 16) >= 0
