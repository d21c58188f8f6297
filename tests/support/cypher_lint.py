"""Run Neo4j's own Cypher linter (``ops/cypher-lint``, Node) from tests.

The Node side is installed from the project's own files: ``npm ci --prefix ops/cypher-lint``.
"""

from __future__ import annotations

import json
import re
import resource
import shutil
import signal
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
LINT_DIR = REPO_ROOT / "ops" / "cypher-lint"
LINT_SCRIPT = LINT_DIR / "lint.cjs"
INSTALL_COMMAND = "npm ci --prefix ops/cypher-lint"
INSTALL_TIMEOUT_S = 120.0
"""How long ``npm ci`` may take."""
LINT_CPU_S = 60
"""The Node run's CPU budget (``RLIMIT_CPU``): the suite's 177 texts take about 11 s of CPU
(the parser's JIT warms up over the first calls); a runaway is stopped at 60."""
LINT_TIMEOUT_S = 540.0
"""Wall clock, a safety net only: the same 11 CPU-seconds took 71 s at load 14 and ran past
a 120 s bound at load 30 on 2 cores (CI), where a process gets a fifteenth of a core."""

_BLOCK_START = re.compile(r"^// name:\s*(?P<name>.+?)\s*$", re.MULTILINE)
_PARAM_LINE = re.compile(r"^:param\s+(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s*=>\s*(?P<value>.+?);?\s*$")


class LinterUnavailable(RuntimeError):
    """Node is there but the linter's packages are not installed."""


@dataclass(frozen=True)
class Diagnostic:
    severity: str
    message: str
    line: int
    character: int


@dataclass(frozen=True)
class LintResult:
    name: str
    diagnostics: tuple[Diagnostic, ...]

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "error"]

    @property
    def warnings(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "warning"]


@dataclass(frozen=True)
class CypherText:
    """One unit to lint: a statement, or a saved query with its ``:param`` lines."""

    name: str
    text: str
    parameters: Mapping[str, Any] = field(default_factory=dict)
    console_commands: bool = False


def node_executable() -> str | None:
    return shutil.which("node")


def ensure_installed() -> None:
    """``make test`` installs the linter first; a bare ``pytest`` on a fresh clone does it
    here, from the committed lock file, once."""
    package = LINT_DIR / "node_modules" / "@neo4j-cypher" / "language-support"
    if package.is_dir():
        return
    npm = shutil.which("npm")
    if npm is None:
        raise LinterUnavailable(f"the Cypher linter is not installed: run `{INSTALL_COMMAND}`")
    done = subprocess.run(
        [npm, "ci", "--no-audit", "--no-fund", "--prefix", str(LINT_DIR)],
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0 or not package.is_dir():
        raise LinterUnavailable(
            f"`{INSTALL_COMMAND}` failed ({done.returncode}): {done.stderr.strip()[-500:]}"
        )


def _cpu_budget() -> None:
    """SIGXCPU at the budget (SIGKILL 5 CPU-seconds later, should it be ignored)."""
    resource.setrlimit(resource.RLIMIT_CPU, (LINT_CPU_S, LINT_CPU_S + 5))


def lint(
    texts: Iterable[CypherText],
    labels: Iterable[str] = (),
    relationship_types: Iterable[str] = (),
) -> list[LintResult]:
    """Lint every text; with labels and types given, unknown ones come back as warnings."""
    node = node_executable()
    if node is None:
        raise FileNotFoundError("node is not installed")
    ensure_installed()
    request = {
        "schema": {"labels": sorted(labels), "relationshipTypes": sorted(relationship_types)},
        "statements": [
            {
                "name": t.name,
                "text": t.text,
                "parameters": dict(t.parameters),
                "consoleCommands": t.console_commands,
            }
            for t in texts
        ],
    }
    done = subprocess.run(
        [node, str(LINT_SCRIPT)],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        timeout=LINT_TIMEOUT_S,
        cwd=LINT_DIR,
        check=False,
        preexec_fn=_cpu_budget,
    )
    if done.returncode in (-signal.SIGXCPU, -signal.SIGKILL):
        raise RuntimeError(
            f"cypher-lint ended by {signal.Signals(-done.returncode).name}: its CPU budget is "
            f"{LINT_CPU_S} s (about 11 expected)"
        )
    if done.returncode not in (0, 1):
        raise RuntimeError(f"cypher-lint exited {done.returncode}: {done.stderr.strip()}")
    return [
        LintResult(r["name"], tuple(Diagnostic(**d) for d in r["diagnostics"]))
        for r in json.loads(done.stdout)
    ]


def saved_queries(text: str) -> list[CypherText]:
    """Split a saved-queries file into blocks that start with a ``// name: …`` line.

    A block's ``:param name => value;`` lines (Browser commands) declare its parameters.
    """
    starts = list(_BLOCK_START.finditer(text))
    blocks = []
    for i, match in enumerate(starts):
        end = starts[i + 1].start() if i + 1 < len(starts) else len(text)
        body = text[match.start() : end].strip()
        parameters = {
            m["name"]: m["value"]
            for line in body.splitlines()
            if (m := _PARAM_LINE.match(line.strip()))
        }
        blocks.append(CypherText(match["name"], body, parameters, console_commands=True))
    return blocks
