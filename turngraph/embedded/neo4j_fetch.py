"""Neo4j 5.26 Community and Neo4j Browser, fetched once through Maven into the data folder.

The artifacts are named in ``neo4j-server.pom.xml`` beside this module; Maven resolves them
(its own cache, ``~/.m2``, makes a second fetch offline) and copies the jars into
``<data folder>/cache/neo4j-<version>/lib``. A fetch that stops half-way leaves nothing
behind: the jars land in a temporary folder that is renamed when complete.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from turngraph.schemas.errors import EmbeddedServiceError

__all__ = [
    "BROWSER_VERSION", "FETCH_TIMEOUT_S", "JAVA_FIX", "MAVEN_FIX", "MIN_JAVA_MAJOR",
    "NEO4J_VERSION", "POM", "Neo4jUnavailableError", "Tools", "cache_dir", "fetch", "fetched_lib",
    "find_tools", "java_major",
]  # fmt: skip

NEO4J_VERSION = "5.26.30"
"""The Neo4j Community release fetched (the 5.26 LTS line runs on Java 17; 2025.x needs 21)."""

BROWSER_VERSION = "5.24.0"
"""The Neo4j Browser release fetched (the newest on Maven Central)."""

MIN_JAVA_MAJOR = 17
"""Neo4j 5.26 needs Java 17 or later."""

POM = Path(__file__).with_name("neo4j-server.pom.xml")
"""The Maven project naming what is fetched."""

FETCH_TIMEOUT_S = 1800.0
"""How long the first fetch (~125 MB of jars) may take."""

JAVA_FIX = "install Java 17+ (apt-get install openjdk-17-jre-headless) or use the default graph"
MAVEN_FIX = "install Maven (apt-get install maven) or use the default graph (ArcadeDB)"


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


class Neo4jUnavailableError(EmbeddedServiceError):
    """Neo4j cannot be fetched or run here (no Java 17+, no Maven, or the fetch failed)."""


@dataclass(frozen=True)
class Tools:
    java: Path
    maven: Path | None


def java_major(java: Path) -> int | None:
    """The major version ``java -version`` reports (``17`` for 17.0.15), None if unreadable."""
    try:
        out = subprocess.run(
            [str(java), "-version"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if not found:
        return None
    major = int(found.group(1))
    return int(found.group(2) or 0) if major == 1 else major  # "1.8" is Java 8


def find_tools(*, need_maven: bool) -> Tools:
    """Java 17+ (and Maven when the jars must still be fetched), or one line with the fix."""
    java_path = shutil.which("java")
    if java_path is None:
        raise Neo4jUnavailableError(f"Neo4j needs Java {MIN_JAVA_MAJOR}+, none found: {JAVA_FIX}")
    java = Path(java_path).resolve()
    major = java_major(java)
    if major is None or major < MIN_JAVA_MAJOR:
        raise Neo4jUnavailableError(
            f"Neo4j needs Java {MIN_JAVA_MAJOR}+, {java} is {major or 'unreadable'}: {JAVA_FIX}"
        )
    maven_path = shutil.which("mvn")
    if need_maven and maven_path is None:
        raise Neo4jUnavailableError(f"fetching Neo4j needs Maven (mvn), none found: {MAVEN_FIX}")
    return Tools(java=java, maven=Path(maven_path) if maven_path else None)


def cache_dir(data_dir: Path) -> Path:
    """Where the fetched jars of this Neo4j version live under the data folder."""
    return data_dir / "cache" / f"neo4j-{NEO4J_VERSION}"


def fetched_lib(data_dir: Path) -> Path | None:
    """The folder of fetched jars, if a complete fetch is there."""
    lib = cache_dir(data_dir) / "lib"
    return lib if (lib / f"neo4j-{NEO4J_VERSION}.jar").exists() else None


def fetch(data_dir: Path) -> Path:
    """The jars' folder, fetched through Maven first if needed (once per data folder)."""
    lib = fetched_lib(data_dir)
    if lib is not None:
        return lib
    tools = find_tools(need_maven=True)
    assert tools.maven is not None
    target = cache_dir(data_dir)
    target.mkdir(parents=True, exist_ok=True)
    # Renamed away when complete, so the folder may be gone at clean-up.
    with tempfile.TemporaryDirectory(
        dir=target, prefix="fetching-", ignore_cleanup_errors=True
    ) as staging:
        command = [
            str(tools.maven),
            "--batch-mode",
            "--quiet",
            "--no-transfer-progress",
            "--file",
            str(POM),
            "dependency:copy-dependencies",
            f"-DoutputDirectory={staging}",
        ]
        try:
            done = subprocess.run(
                command, capture_output=True, text=True, timeout=FETCH_TIMEOUT_S, check=False
            )
        except subprocess.TimeoutExpired:
            raise Neo4jUnavailableError(
                f"fetching Neo4j through Maven took over {FETCH_TIMEOUT_S:.0f}s: "
                "check that Maven Central is reachable, then start again"
            ) from None
        if done.returncode != 0:
            output = _ANSI.sub("", done.stdout + done.stderr).splitlines()
            errors = [line for line in output if line.startswith("[ERROR]")] or ["no output"]
            raise Neo4jUnavailableError(
                f"fetching Neo4j through Maven failed ({errors[0][:200]}): "
                "check that Maven Central is reachable, then start again"
            )
        shutil.rmtree(target / "lib", ignore_errors=True)  # an incomplete copy by hand
        Path(staging).rename(target / "lib")
    found = fetched_lib(data_dir)
    if found is None:
        raise Neo4jUnavailableError(f"Maven did not deliver neo4j-{NEO4J_VERSION}.jar")
    return found
