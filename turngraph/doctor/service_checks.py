"""The graph server (reachable, version, schema) and the LLM and embedding endpoints (a real
request each, with a short timeout)."""

from __future__ import annotations

import re

import neo4j
import neo4j.exceptions

from turngraph.app import build_embedder, load_ontology
from turngraph.doctor.checks import Check, fail, ok, warn
from turngraph.schemas.ontology import ONTOLOGY
from turngraph.settings import Settings
from turngraph.workers.embeddings.protocol import Embedder
from turngraph.workers.embeddings.reference import Agreement, ReferenceCheck
from turngraph.workers.embeddings.transformer import TransformerEmbedder
from turngraph.workers.graph.inventory import constraint_names
from turngraph.workers.graph.schema import schema_statements

__all__ = [
    "OWN", "PROBE_SCHEMA", "START_GRAPH", "TIMEOUT_S", "check_embeddings", "check_graph",
    "check_llm",
]  # fmt: skip

TIMEOUT_S = 5.0
"""Per request: the doctor must answer quickly whatever is down."""

_CONSTRAINT_NAME = re.compile(r"CREATE CONSTRAINT (\w+) ")

START_GRAPH = "start it (`turngraph up` or `turngraph services`) or set TURNGRAPH_GRAPH_URI"


def check_graph(settings: Settings) -> list[Check]:
    """Connect with short timeouts and no retries (never the driver's 30 s retry loop)."""
    uri = str(settings.graph_uri)
    driver = neo4j.GraphDatabase.driver(
        uri,
        auth=(settings.graph_user, settings.graph_password.get_secret_value()),
        connection_timeout=TIMEOUT_S,
        connection_acquisition_timeout=TIMEOUT_S,
        max_transaction_retry_time=0,
        notifications_min_severity="OFF",
    )
    try:
        try:
            driver.verify_connectivity()
            agent = driver.get_server_info().agent
        except neo4j.exceptions.AuthError:
            return [
                fail(
                    "graph",
                    f"{uri} refused our credentials",
                    "check TURNGRAPH_GRAPH_USER and _PASSWORD",
                )
            ]
        except (neo4j.exceptions.DriverError, neo4j.exceptions.Neo4jError, OSError) as exc:
            return [fail("graph", f"not reachable at {uri} ({type(exc).__name__})", START_GRAPH)]
        checks = [ok("graph", f"{agent} at {uri}")]
        checks.append(_schema(driver, settings))
        return checks
    finally:
        driver.close()


def _schema(driver: neo4j.Driver, settings: Settings) -> Check:
    try:
        labels = load_ontology(settings).labels()
    except Exception:  # a broken ontology file is reported by the workers; check ours
        labels = ONTOLOGY.labels()
    expected = {m.group(1) for s in schema_statements(labels) if (m := _CONSTRAINT_NAME.match(s))}
    try:
        present = constraint_names(driver, settings.graph_database)
    except (neo4j.exceptions.DriverError, neo4j.exceptions.Neo4jError) as exc:
        return fail("graph.schema", f"constraints not readable ({type(exc).__name__})", "")
    missing = sorted(expected - present)
    if missing:
        return fail(
            "graph.schema",
            f"{len(missing)} of {len(expected)} unique constraints missing ({missing[0]} …)",
            "start an ingest worker once (it creates the schema), or check its log",
        )
    return ok("graph.schema", f"{len(expected)} unique constraints present")


PROBE_SCHEMA = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}},
    "required": ["ok"],
    "additionalProperties": False,
}
"""The doctor's probe answer: small enough for any model, structured like the real ones."""


OWN = "checked with this shell's TURNGRAPH_LLM_* settings; running workers use their own"
"""The LLM check probes the endpoint doctor is configured with: workers started elsewhere
(another shell, ``up``, a container) read their own environment, which doctor cannot see."""


def check_llm(settings: Settings) -> Check:
    """One structured request as extraction makes them: the output mode the endpoint
    accepts (``auto`` steps down as workers do)."""
    if not settings.llm_configured:
        return ok(
            "llm", f"not configured in this shell's settings: the offline rules extract here; {OWN}"
        )
    from turngraph.clients import build_llm
    from turngraph.schemas.errors import TurngraphError

    client, endpoint = build_llm(settings.model_copy(update={"llm_max_retries": 0}))
    where = f"{settings.llm_base_url or 'api.openai.com'} model {settings.llm_model}"
    try:
        answer = endpoint.complete(
            [{"role": "user", "content": 'Answer with the JSON object {"ok": true}.'}],
            schema_name="turngraph_probe",
            schema=PROBE_SCHEMA,
            max_output_tokens=16,
            timeout_s=TIMEOUT_S,
        )
    except TurngraphError as exc:
        return fail(
            "llm",
            f"{where} did not answer ({exc}); turns are stored with the offline rules' "
            f"entities and wait for it ({OWN})",
            "start the server or fix TURNGRAPH_LLM_BASE_URL / _MODEL / _API_KEY",
        )
    finally:
        client.close()
    stepped = "" if endpoint.mode.value == settings.llm_output_mode else " (stepped down)"
    return ok(
        "llm",
        f"{where} answered in {answer.seconds:.1f} s; output mode {endpoint.mode.value}"
        f"{stepped}, {answer.prompt_tokens} prompt tokens ({OWN})",
    )


def check_embeddings(settings: Settings) -> Check:
    provider = settings.embedding_provider
    if provider == "none":
        return ok("embeddings", "off: recall is lexical and graph only")
    fix = (
        "start the server or fix TURNGRAPH_EMBEDDING_BASE_URL / _MODEL / _API_KEY"
        if provider == "openai"
        else "check TURNGRAPH_EMBEDDING_MODEL_PATH"
    )
    short = settings.model_copy(
        update={"embedding_timeout_s": min(settings.embedding_timeout_s, TIMEOUT_S)}
    )
    short = short.model_copy(update={"embedding_max_retries": 0})
    try:
        embedder = build_embedder(short)
        if embedder is None:
            return ok("embeddings", "off")
        vectors = embedder.embed(["turngraph doctor"])
    except Exception as exc:  # any embedder failure is this check's finding
        return fail("embeddings", f"{provider} embedder failed ({_describe(exc)})", fix)
    detail = f"{embedder.model}, {vectors.shape[1]} dimensions"
    reference = _reference(embedder)
    if reference is None:
        return ok("embeddings", detail)
    detail += f"; {reference.describe()}"
    if reference.agreement is Agreement.CLOSE:
        return warn(
            "embeddings",
            detail,
            f"rankings are unaffected; pin the reference runtime ({reference.reference_runtime})"
            " before a larger drift gives this machine another model id",
        )
    if reference.agreement is Agreement.DRIFTED:
        return warn(
            "embeddings",
            detail + ": stored vectors of the plain model id count as another model's here",
            reference.fix,
        )
    return ok("embeddings", detail)


def _reference(embedder: Embedder) -> ReferenceCheck | None:
    """The contextual model's reference check, alone or in the shipped pair."""
    for part in (embedder, getattr(embedder, "contextual", None)):
        if isinstance(part, TransformerEmbedder):
            return part.reference
    return None


def _describe(exc: BaseException) -> str:
    status = getattr(exc, "status_code", None)
    return f"{type(exc).__name__} {status}" if status else type(exc).__name__
