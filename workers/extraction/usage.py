"""Tools and services recognised from how a turn uses them, not from a list of names.

Install commands, imports in code, config files and usage in prose ("we use X for Y");
each finder returns ``Hit``s, and the extractor gives a name found in the vocabulary its
canonical spelling and type there (``postgres`` is the Service PostgreSQL).
docs/graph-model.md ("Where entities come from").
"""

from __future__ import annotations

import re
import sys

from turngraph.workers.extraction.paths import TOP_DIRECTORIES
from turngraph.workers.extraction.references import Hit, ascii_lower

__all__ = [
    "find_config_tools", "find_imports", "find_installs", "find_sql_extensions", "find_usage",
]  # fmt: skip

_INSTALL = re.compile(
    r"(?<![\w-])(pip3?|uv\s+pip|uv|poetry|pipx|npm|pnpm|yarn|bun|cargo|go|gem|brew|composer|"
    r"apt-get|apt|dnf|conda|mamba|dotnet)\s+"
    r"(?:install|i|add|get|require|package\s+add)\s+((?:[^\s;&|`'\"()<>]+[ \t]*){1,12})"
)
_PACKAGE = re.compile(r"^(@[a-z0-9][\w.-]*/[a-z0-9][\w.-]*|[A-Za-z0-9][\w.-]*)")
_INSTALLER_NAMES = {"uv pip": "uv", "pip3": "pip", "apt-get": "apt-get"}
_NOT_PACKAGES = frozenset(
    {
        "install", "add", "the", "a", "it", "them", "this", "that", "and", "or", "with", "then",
        "first", "again", "locally", "globally",
    }
)  # fmt: skip

_PY_IMPORT = re.compile(
    r"^[ \t]*(?:from[ \t]+([A-Za-z_]\w*)(?:\.[\w.]+)?[ \t]+import[ \t]|import[ \t]+([A-Za-z_]\w*))",
    re.M,
)
_JS_IMPORT = re.compile(
    r"(?:\bfrom[ \t]+|\brequire\(\s*|\bimport\(\s*|^[ \t]*import[ \t]+)"
    r"""['"]((?:@[\w.-]+/)?[\w.-]+)""",
    re.M,
)
_RUST_USE = re.compile(r"^[ \t]*use[ \t]+([a-z_][a-z0-9_]*)::", re.M)
_RUST_STD = frozenset({"std", "core", "alloc", "crate", "self", "super"})
_NODE_BUILTINS = frozenset(
    [
        "assert", "buffer", "child_process", "cluster", "crypto", "dgram", "dns", "events", "fs",
        "http", "http2", "https", "net", "os", "path", "perf_hooks", "process", "querystring",
        "readline", "stream", "string_decoder", "timers", "tls", "tty", "url", "util", "v8", "vm",
        "worker_threads", "zlib",
    ]
)  # fmt: skip
_CONFIG_FILE = re.compile(
    r"(?<![\w/.-])(?:[\w-]+/)*([a-z][a-z0-9-]{1,30})\.config\.(?:[cm]?[jt]s|json|ya?ml|toml)\b"
)
_RC_FILE = re.compile(r"(?<![\w.-])\.([a-z][a-z0-9-]{1,20})rc(?:\.[a-z]{2,5})?\b")
_RC_TOOLS = frozenset(
    {
        "eslint", "prettier", "babel", "stylelint", "npm", "nvm", "yarn", "swc", "mocha", "jshint",
        "markdownlint", "commitlint", "lintstaged", "pylint",
    }
)  # fmt: skip
_CONFIG_NOT_TOOLS = frozenset(
    {
        "app", "site", "next-env", "env", "local", "base", "default", "test", "prod", "dev",
        "project", "server", "client",
    }
)  # fmt: skip

# "we use X for Y", "we moved to X", "went with X over Y"
_USE_VERB = re.compile(
    r"\b(?:we|i|they|the\s+team|team)\s+(?:(?:now|still|already|mostly|also|only)\s+)?"
    r"(?:use|used|are\s+using|'re\s+using|were\s+using|switched\s+to|moved\s+to|migrated\s+to|"
    r"went\s+with|picked|chose|adopted|rely\s+on|depend\s+on|run\s+on|host\s+on|deploy\s+to|"
    r"deploy\s+on)\s+"
)
_NAME = r"(?:@[\w.-]+/)?[A-Za-z][\w.+-]*[\w+]|[A-Z]"
_USAGE_TAIL = re.compile(
    r"(" + _NAME + r"(?:\s+(?:Cloud|Actions|Pages|Functions|Workers|DB|Cache|Queue|Hub))?)"
    r"(?=\s+(?:for|to|as|instead|over|and|in|on|with|because|since|now)\b|\s*[,.;:!)]|\s*$)"
)
_OVER = re.compile(r"\s+over\s+(" + _NAME + r")(?=[\s,.;:!]|$)")
_SERVICE_ROLES = re.compile(
    r"\s+(?:for|as)\s+(?:the\s+|our\s+|all\s+)?(?:\w+\s+)?(?:auth|authentication|login|sso|mail|e-?mails?|"
    r"payments?|billing|hosting|deploys?|deployments?|monitoring|logging|logs|error\s+tracking|"
    r"alerting|alerts|storage|search|queues?|queuing|queueing|messaging|analytics|feature\s+flags|"
    r"flags|ci|database|db|cache|caching|secrets|dns|cdn|metrics|tracing|uploads|sms|push)\b"
)
_SERVICE_SUFFIX = re.compile(r"(?:DB|SQL|MQ| Cloud| Actions)$")
_LIB_PATTERN = re.compile(
    r"^(?:@[\w.-]+/[\w.-]+|[a-z][a-z0-9]*(?:[-_.][a-z0-9]+)+|[A-Z][a-z0-9]+(?:[A-Z0-9][A-Za-z0-9]*)+|[A-Z]{2,6}[a-z0-9]*|[A-Z][a-z]+\.?js)$"
)
"""What a product name looks like when it is not in the vocabulary: a package name with a
dash/dot/underscore (``date-fns``), CamelCase (``FastAPI``, ``BullMQ``), an acronym
(``SQS``), or ``Xjs``. A plain capitalised word (``Clerk``) counts only after a usage verb."""


def _strip_package(raw: str) -> str | None:
    raw = raw.strip(",")
    if (
        not raw
        or raw.startswith(("-", ".", "/", "~", "$", "http"))
        or "=" in raw.split("==")[0][:1]
    ):
        return None
    match = _PACKAGE.match(raw)
    if match is None:
        return None
    name = match.group(1)
    if name.startswith("@") and raw[len(name) : len(name) + 1] == "@":
        pass
    name = re.split(r"[=<>~!\[@]", name, maxsplit=1)[0] if not name.startswith("@") else name
    name = name.rstrip(".")
    if len(name) < 2 or name.lower() in _NOT_PACKAGES or name.isdigit():
        return None
    if "/" in name and not name.startswith("@"):
        return None  # a path or a Go module url: not a package name we can spell
    return name


def find_installs(text: str) -> list[Hit]:
    """The installer and each package an install command names."""
    hits: list[Hit] = []
    lower = ascii_lower(text)
    if (
        "install" not in lower
        and " add " not in lower
        and " i " not in lower
        and " get " not in lower
    ):
        return hits
    for match in _INSTALL.finditer(text):
        installer = " ".join(match.group(1).split())
        hits.append(Hit(*match.span(1), "Tool", _INSTALLER_NAMES.get(installer, installer)))
        position = match.start(2)
        for token in match.group(2).split():
            start = text.find(token, position)
            position = start + len(token)
            if token in ("&&", "||", "|", ";"):
                break
            name = _strip_package(token)
            if name:
                hits.append(Hit(start, start + len(token), "Tool", name))
    return hits


def find_imports(code: str, offset: int = 0) -> list[Hit]:
    """Third-party packages imported by a code block (``offset`` is its place in the turn)."""
    hits: list[Hit] = []
    if "import" in code:
        for match in _PY_IMPORT.finditer(code):
            name = match.group(1) or match.group(2)
            group = 1 if match.group(1) else 2
            if name in sys.stdlib_module_names or name.startswith("_") or name in TOP_DIRECTORIES:
                continue  # the standard library, or the project's own package (app, src)
            start, end = match.span(group)
            hits.append(Hit(start + offset, end + offset, "Tool", name))
    if "from" in code or "require" in code or "import" in code:
        for match in _JS_IMPORT.finditer(code):
            name = match.group(1)
            bare = name.removeprefix("node:")
            if name.startswith(".") or bare in _NODE_BUILTINS or name.startswith("node:"):
                continue
            start, end = match.span(1)
            hits.append(Hit(start + offset, end + offset, "Tool", name))
    if "use " in code:
        for match in _RUST_USE.finditer(code):
            if match.group(1) not in _RUST_STD:
                start, end = match.span(1)
                hits.append(Hit(start + offset, end + offset, "Tool", match.group(1)))
    return hits


def find_config_tools(text: str) -> list[Hit]:
    """``vite.config.ts`` → vite, ``.eslintrc.cjs`` → eslint."""
    hits: list[Hit] = []
    if ".config." in text:
        for match in _CONFIG_FILE.finditer(text):
            name = match.group(1)
            if name not in _CONFIG_NOT_TOOLS:
                hits.append(Hit(*match.span(1), "Tool", name))
    if "rc" in text:
        for match in _RC_FILE.finditer(text):
            if match.group(1) in _RC_TOOLS:
                hits.append(Hit(*match.span(1), "Tool", match.group(1)))
    return hits


_CLASS_SUFFIX = re.compile(
    r"[a-z](?:Worker|Client|Service|Manager|Handler|Factory|Provider|Store|Error|Exception|"
    r"Config|Settings|Builder|Adapter|Controller|Repository|Serializer|Model|View|Hook|Context)$"
)
"""CamelCase names that read as a class of the project (``SimpleWorker``), not a product."""
_SQL_EXTENSION = re.compile(r"(?i)create\s+extension\s+(?:if\s+not\s+exists\s+)?\"?([a-z_][\w-]*)")


def find_sql_extensions(text: str) -> list[Hit]:
    """``CREATE EXTENSION pg_trgm``: a database extension is a Tool."""
    if "xtension" not in text and "XTENSION" not in text:
        return []
    return [Hit(*m.span(1), "Tool", m.group(1)) for m in _SQL_EXTENSION.finditer(text)]


def _kind(name: str, after: str) -> str:
    return "Service" if _SERVICE_SUFFIX.search(name) or _SERVICE_ROLES.match(after) else "Tool"


def find_usage(text: str, known: frozenset[str] = frozenset()) -> list[Hit]:
    """Names after "we use / switched to / went with …" (and "X over Y") that look like
    products; ``known`` lower-cased words are never products ("the", "it", "tabs")."""
    hits: list[Hit] = []
    lower = ascii_lower(text)
    if not any(w in lower for w in ("we ", "i ", "they ", "team ")):
        return hits
    for verb in _USE_VERB.finditer(lower):
        tail = _USAGE_TAIL.match(text, verb.end())
        if tail is None:
            continue
        name = tail.group(1).rstrip(".")
        if name.lower() in known or not (name[:1].isupper() or _LIB_PATTERN.match(name)):
            continue
        if _CLASS_SUFFIX.search(name):
            hits.append(Hit(*tail.span(1), "Symbol", name))
            continue
        after = text[tail.end() : tail.end() + 60]
        hits.append(Hit(*tail.span(1), _kind(name, after), name))
        over = _OVER.match(text, tail.end())
        if over and over.group(1).lower() not in known and over.group(1)[:1].isupper():
            hits.append(Hit(*over.span(1), _kind(over.group(1), ""), over.group(1)))
    return hits
