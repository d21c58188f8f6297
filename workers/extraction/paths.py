"""Files, directories and branches a developer chat turn names.

Files as written without ``./`` or ``:line`` (``src/app.py``, ``.env``, ``Makefile``),
directories without the trailing ``/`` (``apps/web``, ``dist``); branches as written
(``feature/x``, ``origin/main``, ``release-2.7``, ``main`` where the text means the branch).
"""

from __future__ import annotations

import re

from turngraph.workers.extraction.references import Hit, _free_before, ascii_lower

__all__ = [
    "BRANCH_PREFIXES", "BUILD_DIRECTORIES", "EXTENSIONLESS_FILES", "FILE_EXTENSIONS", "REMOTES",
    "TOP_DIRECTORIES", "find_branches", "find_files",
]  # fmt: skip

_EXTENSION_WORDS = (
    "py pyi pyx md rst txt toml yaml yml json jsonl lua cypher cql ts tsx js jsx mjs cjs go "
    "rs java kt rb php c h cc cpp hpp cs swift sh bash zsh ps1 sql ttl owl html css scss ini "
    "cfg conf env lock xml csv ipynb proto graphql tf gradle mk vue svelte grass log patch "
    "diff dockerfile"
)
FILE_EXTENSIONS = frozenset(_EXTENSION_WORDS.split())
"""Extensions that make a bare name (no ``/``) a file: ``loop.py``, ``pyproject.toml``."""

EXTENSIONLESS_FILES = (
    "README", "Makefile", "Dockerfile", "Procfile", "LICENSE", "CHANGELOG", "Justfile",
    "Gemfile", "Jenkinsfile", "Vagrantfile", "CODEOWNERS",
)  # fmt: skip

BRANCH_PREFIXES = (
    "feature", "feat", "fix", "bugfix", "hotfix", "release", "chore", "refactor", "perf",
    "wip", "experiment", "spike", "dependabot", "renovate",
)  # fmt: skip

_TOKEN = re.compile(r"[^\s`'\"()\[\]{}<>,;|*]+")
_EXT = re.compile(r"\.([A-Za-z][A-Za-z0-9]{0,9})$")
_DOTFILE = re.compile(
    r"\.(?:env(?:\.[\w-]+)?|[a-z][\w-]*(?:rc|ignore|config|attributes|modules|keep|version|lintrc|"
    r"editorconfig|profile)|dockerignore|gitignore|gitattributes|editorconfig|npmrc|"
    r"nvmrc|python-version|node-version|tool-versions|envrc)(?:\.[a-z]{1,5})?$"
)
"""Files named by a leading dot: ``.env``, ``.env.local``, ``.npmrc``, ``.dockerignore``."""
_DIR_SEGMENT = re.compile(r"^[A-Za-z0-9_.@+-][\w.@+-]*$")
TOP_DIRECTORIES = frozenset(
    [
        "src", "app", "apps", "lib", "libs", "pkg", "cmd", "internal", "packages", "services",
        "service", "modules", "crates", "tests", "test", "spec", "specs", "docs", "doc", "scripts",
        "script", "bin", "tools", "infra", "deploy", "deployment", "deployments", "charts", "helm",
        "k8s", "kubernetes", "terraform", "config", "configs", "conf", "migrations", "db", "public",
        "static", "assets", "components", "pages", "routes", "views", "templates", "hooks", "utils",
        "api", "web", "frontend", "backend", "server", "client", "ui", "core", "common", "shared",
        "vendor", "examples", "example", "benchmarks", "bench", "ops", "workers", "producers",
        "schemas", "include", ".github", ".circleci", ".vscode", ".devcontainer",
    ]
)  # fmt: skip
"""Directory names that start a path in most repositories: ``apps/web``, ``internal/x``."""
BUILD_DIRECTORIES = frozenset(
    [
        "node_modules", "__pycache__", ".venv", "venv", "dist", "build", "target", "vendor",
        "coverage", ".next", ".nuxt", "out", "bin", "obj", ".turbo", ".cache", "site-packages",
    ]
)  # fmt: skip
"""Directories named alone (``node_modules``, ``dist/``)."""
_NOT_DIRECTORY_WORDS = frozenset(
    [
        "and", "or", "and/or", "read/write", "input/output", "client/server", "yes/no",
        "true/false", "on/off", "in/out", "either/or", "he/she", "his/her", "w/o", "n/a", "i/o",
        "tcp/ip",
    ]
)  # fmt: skip
_EXTENSIONLESS = re.compile(r"(" + "|".join(EXTENSIONLESS_FILES) + r")(?![\w-]|\.\w)")
_BRANCH_PREFIXED = re.compile(
    r"((?:" + "|".join(BRANCH_PREFIXES) + r")/[\w][\w./-]*[\w])(?![\w/]|\.\w)"
)
_BRANCH_NAMED = re.compile(r"branch\s+(?:called\s+|named\s+)?(`?)([\w][\w./-]*[\w])`?")
_BRANCH_QUOTED = re.compile(r"`([\w][\w./-]*[\w])`\s+branch\b")
_GIT_SWITCH = re.compile(r"git\s+(?:checkout|switch)\s+(?:-[bcBC]\s+)?([\w][\w./-]*[\w])")
REMOTES = ("origin", "upstream", "fork")
_REMOTE_BRANCH = re.compile(r"(?:origin|upstream|fork)/[\w][\w./-]*[\w]")
_RELEASE_BRANCH = re.compile(
    r"(?:release|hotfix|stable|rc)-v?\d+(?:\.\d+){0,2}(?:\.x)?(?![\w-]|\.\d)"
)
_CODE_WORDS_NOT_BRANCHES = frozenset(
    [
        "else", "if", "elif", "then", "default", "case", "catch", "finally", "try", "except",
        "switch", "match", "true", "false", "null", "none", "happy", "sad", "error", "success",
        "failure", "fallback", "hot", "cold", "slow", "fast", "other", "old", "new", "current",
        "wrong", "right", "same",
    ]
)  # fmt: skip
_TRUNK = re.compile(r"(main|master|develop|trunk)`?(?![\w/-]|\.\w)")
_TRUNK_BEFORE = re.compile(
    r"\b(?:on|onto|into|from|to|against|off|of|in|rebase|rebased|merge|merged|latest|pull|"
    r"pulled|pulling|reached|reaches|reach|hit|hits|landed|targets|target)\s+"
    r"(?:the\s+|latest\s+)?`?$"
)
_TRUNK_WORDS = ("main", "master", "develop", "trunk")
_LINE_SUFFIX = re.compile(r"(?::\d+){1,2}$")
_NON_BRANCH_WORDS = frozenset({"is", "was", "and", "or", "the", "that", "this", "for", "with"})


def _directory(token: str) -> str | None:
    """A path without an extension: ``apps/web``, ``./internal/billing``, ``dist/``."""
    explicit = token.startswith(("./", "~/", "../")) or token.endswith("/")
    bare = token.removeprefix("./").rstrip("/")
    if not bare or bare.lower() in _NOT_DIRECTORY_WORDS or ":" in bare:
        return None
    parts = bare.split("/")
    if not all(_DIR_SEGMENT.match(p) for p in parts) or any(p.isdigit() for p in parts):
        return None
    if parts[0] in BRANCH_PREFIXES or parts[0] in REMOTES:
        return None  # feature/x, origin/main: branches
    if explicit:  # "./internal/billing", "dist/"
        return bare if len(parts) > 1 or bare.islower() or bare in BUILD_DIRECTORIES else None
    if len(parts) >= 2 and parts[0] in TOP_DIRECTORIES:  # "apps/web", "src/components"
        return bare
    if len(parts) >= 3 and all(p.islower() or p.startswith(".") for p in parts):
        return bare  # "app/src/main"; not "CI/CD/QA"
    return None


def _path_name(token: str) -> str | None:
    token = token.split("::", 1)[0].rstrip(".:!?")
    if "." not in token and "/" not in token:
        # "node_modules", "__pycache__"; "dist" or "build" alone are words ("dist/" is not)
        return token if token in BUILD_DIRECTORIES and "_" in token else None
    if token.startswith(".") and "/" not in token and _DOTFILE.match(token):
        return token  # ".env", ".env.example", ".eslintrc.cjs"
    if ":" in token:
        token = _LINE_SUFFIX.sub("", token)
    token = token.removeprefix("./")
    if not token or "://" in token or "#" in token or "@" in token:
        return None
    ext = _EXT.search(token)
    if ext is None or (token.count("/") and ext.start() < token.rfind("/")):
        return _directory(token) if "/" in token else None
    if "/" in token:
        if (
            token.split("/", 1)[0] in BRANCH_PREFIXES
            and ext.group(1).lower() not in FILE_EXTENSIONS
        ):
            return None  # release/vX.Y, feature/v2.beta: a branch, not a file
        return token if len(token) > len(ext.group(0)) + 1 else None
    if ext.group(1).lower() not in FILE_EXTENSIONS:
        return None
    stem = token[: -len(ext.group(0))]
    if not stem or (ext.group(1) == "js" and stem[:1].isupper()):  # Node.js, Vue.js
        return None
    return token


def find_files(text: str) -> list[Hit]:
    """Paths with an extension (any, when there is a ``/``), and well-known files."""
    hits: list[Hit] = []
    for match in _TOKEN.finditer(text):
        token = match.group(0)
        if "." in token or "/" in token or token in BUILD_DIRECTORIES:
            if text[match.end() : match.end() + 1] == "(":
                continue  # r.json(), os.path.join(: a call, not a file
            name = _path_name(token)
            if name:
                hits.append(Hit(match.start(), match.end(), "File", name))
    if any(name in text for name in EXTENSIONLESS_FILES):
        hits += [
            Hit(*m.span(), "File", m.group(1))
            for m in _EXTENSIONLESS.finditer(text)
            if _free_before(text, m.start(), "./-")
        ]
    return hits


def find_branches(text: str) -> list[Hit]:
    """``feature/x``-style names, ``branch X``, ``git checkout -b X``, and ``on main``."""
    hits: list[Hit] = []
    if "/" in text:
        hits += [
            Hit(*m.span(1), "Branch", m.group(1))
            for m in _BRANCH_PREFIXED.finditer(text)
            if _free_before(text, m.start(), "/.-")
        ]
    lower = ascii_lower(text)
    if "branch" in lower:
        named = [
            (m.start(), m.end(), *m.span(2), m.group(1) == "`")
            for m in _BRANCH_NAMED.finditer(lower)
            if _free_before(lower, m.start())
        ]
        named += [(m.start(), m.end(), *m.span(1), True) for m in _BRANCH_QUOTED.finditer(lower)]
        for start, end, name_start, name_end, quoted in named:
            name = text[name_start:name_end]  # as written: branch names keep their case
            if name.lower() in _NON_BRANCH_WORDS or name.lower() in _CODE_WORDS_NOT_BRANCHES:
                continue
            if quoted or any(c in name for c in "/-_") or name in ("main", "master", "develop"):
                hits.append(Hit(start, end, "Branch", name))
    if "/" in text and any(remote in text for remote in REMOTES):
        hits += [
            Hit(*m.span(), "Branch", m.group(0))
            for m in _REMOTE_BRANCH.finditer(text)
            if _free_before(text, m.start(), "/.-")
        ]
    if "-" in text:
        lower = ascii_lower(text)
        hits += [
            Hit(*m.span(), "Branch", text[m.start() : m.end()])
            for m in _RELEASE_BRANCH.finditer(lower)
            if _free_before(lower, m.start(), "/.-")
        ]
    if "git " in text:
        hits += [
            Hit(*m.span(1), "Branch", m.group(1))
            for m in _GIT_SWITCH.finditer(text)
            if _free_before(text, m.start())
        ]
    if any(word in text for word in _TRUNK_WORDS):
        for match in _TRUNK.finditer(text):
            if _free_before(text, match.start()) and _TRUNK_BEFORE.search(
                text, max(0, match.start() - 24), match.start()
            ):
                hits.append(Hit(*match.span(1), "Branch", match.group(1)))
    return hits
