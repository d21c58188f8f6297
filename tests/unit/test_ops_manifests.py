"""ops/: the compose file, the Dockerfile and the Kubernetes manifests, checked without an
engine or a cluster: Kubernetes objects against the API's own JSON schemas (offline, from
``kubernetes-validate``), everything against what the code expects (settings names, queue
keys, process names)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import kubernetes_validate
import pytest
import yaml
from rq import Queue

from turngraph.cli import build_parser
from turngraph.schemas.defaults import INGEST_QUEUE
from turngraph.settings import Settings

REPO_ROOT = Path(__file__).resolve().parents[2]
OPS = REPO_ROOT / "ops"
K8S = OPS / "k8s"
PROCESSES = ("ingest", "recall", "maintenance")
KUBERNETES_VERSION = "1.31.0"
"""Oldest Kubernetes the manifests target; strict: unknown fields are errors."""
SETTINGS_ENV = {f"TURNGRAPH_{name.upper()}" for name in Settings.model_fields}


def load_all(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def k8s_objects() -> list[dict[str, Any]]:
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    return [doc for name in kustomization["resources"] for doc in load_all(K8S / name)]


def by_kind(kind: str) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in k8s_objects() if o["kind"] == kind}


def assert_runs_process(argv: list[str], process: str) -> None:
    """The container's arguments are a real ``turngraph`` command for that process."""
    assert argv == ["worker", process]
    args = build_parser().parse_args(argv)
    assert (args.command, args.kind) == ("worker", process)
    procfile = (REPO_ROOT / "Procfile").read_text()
    assert f"{process}: turngraph {' '.join(argv)}" in procfile.splitlines()


def settings_from(env: dict[str, str]) -> Settings:
    values = {k.removeprefix("TURNGRAPH_").lower(): v for k, v in env.items()}
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


# -- compose ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load((OPS / "compose.yaml").read_text())


def test_compose_runs_redis_neo4j_and_the_three_processes(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert set(services) == {"redis", "neo4j", *PROCESSES}
    assert services["neo4j"]["image"] == "neo4j:5.26"
    assert services["redis"]["image"].startswith("redis:7")


def test_compose_redis_never_evicts_and_keeps_an_append_only_file(
    compose: dict[str, Any],
) -> None:
    command = compose["services"]["redis"]["command"]
    options = dict(zip(command[1::2], command[2::2], strict=True))
    assert command[0] == "redis-server"
    assert options["--maxmemory-policy"] == "noeviction"
    assert options["--appendonly"] == "yes"


@pytest.mark.parametrize("process", PROCESSES)
def test_compose_processes_use_the_image_and_real_settings(
    compose: dict[str, Any], process: str
) -> None:
    service = compose["services"][process]
    assert_runs_process(service["command"], process)
    context = (OPS / service["build"]["context"]).resolve()  # relative to the compose file
    assert context == REPO_ROOT.resolve()
    assert context / service["build"]["dockerfile"] == (OPS / "Dockerfile").resolve()
    env = service["environment"]
    assert set(env) <= SETTINGS_ENV
    assert urlsplit(env["TURNGRAPH_REDIS_URL"]).hostname == "redis"
    assert urlsplit(env["TURNGRAPH_GRAPH_URI"]).hostname == "neo4j"
    assert {d: c["condition"] for d, c in service["depends_on"].items()} == {
        "redis": "service_healthy",
        "neo4j": "service_healthy",
    }
    settings_from({k: v for k, v in env.items() if "${" not in v})


# -- Dockerfile -----------------------------------------------------------------------


@pytest.mark.source_tree
def test_dockerfile_builds_the_package_and_runs_unprivileged() -> None:
    text = (OPS / "Dockerfile").read_text()
    copied = re.findall(r"^COPY (\S+)/ ", text, re.MULTILINE)
    assert copied and all((REPO_ROOT / d / "__init__.py").exists() for d in copied)
    ignore = (OPS / "Dockerfile.dockerignore").read_text().split()
    assert all(f"!{d}/" in ignore for d in copied)
    user = re.findall(r"^USER (\S+)$", text, re.MULTILINE)
    assert user and user[-1] not in ("root", "0")
    assert 'ENTRYPOINT ["turngraph"]' in text


# -- Kubernetes -----------------------------------------------------------------------


def test_every_manifest_is_listed_in_the_kustomization() -> None:
    listed = set(yaml.safe_load((K8S / "kustomization.yaml").read_text())["resources"])
    assert listed == {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml"}


@pytest.mark.parametrize(
    "obj",
    [o for o in k8s_objects() if not o["apiVersion"].startswith("keda.sh/")],
    ids=lambda o: f"{o['kind']}/{o['metadata']['name']}",
)
def test_kubernetes_objects_match_the_api_schema(obj: dict[str, Any]) -> None:
    kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)


def test_configmap_and_secret_hold_only_real_settings() -> None:
    config = by_kind("ConfigMap")["turngraph-settings"]["data"]
    secret = by_kind("Secret")["turngraph-secrets"]["stringData"]
    assert set(config) <= SETTINGS_ENV
    assert {k for k in secret if k.startswith("TURNGRAPH_")} <= SETTINGS_ENV
    settings = settings_from({**config, **{k: v for k, v in secret.items() if k in SETTINGS_ENV}})
    assert settings.redis_url and settings.graph_uri
    assert not settings.llm_configured, "an empty LLM key would switch the LLM on"


@pytest.mark.parametrize("process", PROCESSES)
def test_deployments_run_their_process_with_probes(process: str) -> None:
    deployment = by_kind("Deployment")[f"turngraph-{process}"]
    spec = deployment["spec"]
    template = spec["template"]
    assert spec["selector"]["matchLabels"].items() <= template["metadata"]["labels"].items()
    (container,) = template["spec"]["containers"]
    assert_runs_process(container["args"], process)
    refs = {
        (kind, ref[f"{kind}Ref"]["name"])
        for ref in container["envFrom"]
        for kind in ("configMap", "secret")
        if f"{kind}Ref" in ref
    }
    assert refs == {("configMap", "turngraph-settings"), ("secret", "turngraph-secrets")}
    for probe in ("startupProbe", "readinessProbe"):
        assert container[probe]["exec"]["command"] == ["python", "-m", "turngraph.probe"]
    assert container["resources"]["requests"]
    if process != "recall":  # RQ finishes the current job on SIGTERM
        config = by_kind("ConfigMap")["turngraph-settings"]["data"]
        grace = template["spec"]["terminationGracePeriodSeconds"]
        assert grace > int(config["TURNGRAPH_JOB_TIMEOUT_S"])


def test_keda_scales_ingest_on_the_rq_queue_length() -> None:
    (scaled,) = by_kind("ScaledObject").values()
    config = by_kind("ConfigMap")["turngraph-settings"]["data"]
    assert scaled["apiVersion"] == "keda.sh/v1alpha1"
    target = scaled["spec"]["scaleTargetRef"]
    assert (target["kind"], target["name"]) == ("Deployment", "turngraph-ingest")
    assert 1 <= scaled["spec"]["minReplicaCount"] < scaled["spec"]["maxReplicaCount"]
    (trigger,) = scaled["spec"]["triggers"]
    assert trigger["type"] == "redis"
    metadata = trigger["metadata"]
    assert all(isinstance(v, str) for v in metadata.values()), "KEDA metadata are strings"
    queue = config["TURNGRAPH_INGEST_QUEUE"]
    assert queue == INGEST_QUEUE
    assert metadata["listName"] == Queue.redis_queue_namespace_prefix + queue
    assert metadata["listName"] == "rq:queue:turngraph-ingest"
    redis_url = urlsplit(config["TURNGRAPH_REDIS_URL"])
    assert metadata["address"] == f"{redis_url.hostname}:{redis_url.port}"
    assert metadata["databaseIndex"] == redis_url.path.lstrip("/")
    int(metadata["listLength"])
    auth = by_kind("TriggerAuthentication")[trigger["authenticationRef"]["name"]]
    secret = by_kind("Secret")
    for ref in auth["spec"]["secretTargetRef"]:
        assert ref["key"] in secret[ref["name"]]["stringData"]


def test_unsharded_recall_scales_on_cpu() -> None:
    hpa = by_kind("HorizontalPodAutoscaler")["turngraph-recall"]
    target = hpa["spec"]["scaleTargetRef"]
    assert (target["kind"], target["name"]) == ("Deployment", "turngraph-recall")
    assert "turngraph-recall" in by_kind("Deployment")
    assert 1 <= hpa["spec"]["minReplicas"] < hpa["spec"]["maxReplicas"]
    (metric,) = hpa["spec"]["metrics"]
    assert metric["resource"]["name"] == "cpu"


SHARDED = OPS / "k8s-sharded"


def test_sharded_recall_overlay_places_pods_on_shards_by_their_index() -> None:
    overlay = yaml.safe_load((SHARDED / "kustomization.yaml").read_text())
    assert overlay["resources"] == ["../k8s", "recall-shards.yaml"]
    (stateful,) = load_all(SHARDED / "recall-shards.yaml")
    kubernetes_validate.validate(stateful, KUBERNETES_VERSION, strict=True)
    patches = {(p["target"]["kind"], p["target"]["name"]): p["patch"] for p in overlay["patches"]}
    assert yaml.safe_load(patches[("Deployment", "turngraph-recall")]) == [
        {"op": "replace", "path": "/spec/replicas", "value": 0}
    ]  # the unsharded replicas off, and their autoscaler gone
    removed = yaml.safe_load(patches[("HorizontalPodAutoscaler", "turngraph-recall")])
    assert removed["$patch"] == "delete"
    (shards_patch,) = yaml.safe_load(patches[("ConfigMap", "turngraph-settings")])
    assert shards_patch["path"] == "/data/TURNGRAPH_RECALL_SHARDS"
    shards = int(shards_patch["value"])
    spec = stateful["spec"]
    (container,) = spec["template"]["spec"]["containers"]
    assert_runs_process(container["args"], "recall")
    (ordinal,) = container["env"]
    assert ordinal["name"] == "TURNGRAPH_RECALL_REPLICA_ORDINAL"
    assert ordinal["valueFrom"]["fieldRef"]["fieldPath"] == (
        "metadata.labels['apps.kubernetes.io/pod-index']"
    )
    assert spec["replicas"] % shards == 0 and spec["replicas"] >= 2 * shards  # 2 per shard
    config = by_kind("ConfigMap")["turngraph-settings"]["data"]
    served = [
        settings_from(
            {**config, "TURNGRAPH_RECALL_SHARDS": str(shards), ordinal["name"]: str(pod)}
        ).recall_shard_set()
        for pod in range(spec["replicas"])
    ]
    assert [sorted(s.owned) for s in served] == [[pod % shards] for pod in range(8)]
